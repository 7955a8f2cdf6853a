"""The doctor checks: pure functions ``Snapshot -> list[Finding]``; no I/O, no clock, no NVML.

``CHECKS`` maps each check's name (its finding category) to its function; ``run_checks`` runs them all and
sorts the findings worst first (fail, warn, unknown, info, ok), then by category and subject. Rules as
checks/.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from rigcheck.checks.doctor import (
    fabric,
    gpudirect,
    gpus,
    health,
    nvlink,
    p2p,
    pcie,
    power,
    software,
    storage,
    thermal,
    topology,
    xid,
)
from rigcheck.checks.doctor.fabric import check_fabric
from rigcheck.checks.doctor.gpudirect import check_gpudirect
from rigcheck.checks.doctor.gpus import check_gpus
from rigcheck.checks.doctor.health import check_health
from rigcheck.checks.doctor.nvlink import check_nvlink
from rigcheck.checks.doctor.p2p import check_p2p
from rigcheck.checks.doctor.pcie import check_pcie
from rigcheck.checks.doctor.power import check_power
from rigcheck.checks.doctor.software import check_software
from rigcheck.checks.doctor.storage import check_storage
from rigcheck.checks.doctor.thermal import check_thermal
from rigcheck.checks.doctor.topology import check_topology
from rigcheck.checks.doctor.xid import check_xid
from rigcheck.model import Finding, Snapshot

if TYPE_CHECKING:  # a site file's models are built only when `doctor --config` reads one
    from rigcheck.model.site_config import SiteConfig

Check = Callable[[Snapshot], list[Finding]]

CHECKS: dict[str, Check] = {
    "health": check_health,
    "power": check_power,
    "thermal": check_thermal,
    "pcie": check_pcie,
    "topology": check_topology,
    "nvlink": check_nvlink,
    "fabric": check_fabric,
    "gpus": check_gpus,
    "p2p": check_p2p,
    "software": check_software,
    "xid": check_xid,
    "gpudirect": check_gpudirect,
    "storage": check_storage,
}

# Every finding id a check can emit, by check name: the stable contract scripts key on.
FINDING_IDS: dict[str, tuple[str, ...]] = {
    "health": health.FINDING_IDS,
    "power": power.FINDING_IDS,
    "thermal": thermal.FINDING_IDS,
    "pcie": pcie.FINDING_IDS,
    "topology": topology.FINDING_IDS,
    "nvlink": nvlink.FINDING_IDS,
    "fabric": fabric.FINDING_IDS,
    "gpus": gpus.FINDING_IDS,
    "p2p": p2p.FINDING_IDS,
    "software": software.FINDING_IDS,
    "xid": xid.FINDING_IDS,
    "gpudirect": gpudirect.FINDING_IDS,
    "storage": storage.FINDING_IDS,
}

_NUM = re.compile(r"(\d+)")


def _natural(text: str) -> tuple[object, ...]:
    """Sort "GPU2" before "GPU10"."""
    return tuple(int(p) if p.isdigit() else p for p in _NUM.split(text))


def sort_key(finding: Finding) -> tuple[int, str, tuple[object, ...], str]:
    host_first = "" if finding.subject == "host" else finding.subject
    return (-finding.severity.rank, finding.category, _natural(host_first), finding.id)


def run_checks(snapshot: Snapshot, config: SiteConfig | None = None) -> list[Finding]:
    """Every check over the snapshot, worst first; never raises on a valid Snapshot.

    ``config``: a site file (`doctor --config`, model/site_config.py), data the xid check applies; None (the
    default) is rigcheck's own verdicts."""
    findings: list[Finding] = []
    for name, check in CHECKS.items():
        if name == "xid" and config is not None:
            findings += check_xid(snapshot, config.xid, config.origin)
        else:
            findings += check(snapshot)
    return sorted(findings, key=sort_key)


__all__ = [
    "CHECKS",
    "FINDING_IDS",
    "Check",
    "check_fabric",
    "check_gpudirect",
    "check_gpus",
    "check_health",
    "check_nvlink",
    "check_p2p",
    "check_pcie",
    "check_power",
    "check_software",
    "check_storage",
    "check_thermal",
    "check_topology",
    "check_xid",
    "run_checks",
    "sort_key",
]

"""The cross-GPU fingerprint across the fleet: every rank's digests of the same seeded workload, compared with
those of identical GPUs on every node (checks/verify/fingerprint.py's rules; rigcheck.model.fingerprint says why).

Pure. In a fleet each rank computes its fingerprint once, with the float64 reference (the ranks the peers cannot
settle are held to it at once: a fleet does not re-run), and rank 0 gathers the rows. A GPU whose digests differ
from those most of its identical peers share, across nodes, is ``fleet.fingerprint-mismatch`` (fail), named with
its node, GPU and first differing step; one apart from peers that do not agree among themselves is held to the
reference; two that each stay within tolerance yet differ are ``fleet.fingerprint-apart`` (warn).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rigcheck.checks.verify.fingerprint import judge_fingerprints
from rigcheck.model.finding import Severity
from rigcheck.model.fingerprint import FingerprintRow
from rigcheck.model.fleet import FleetFinding

FINDING_IDS: tuple[str, ...] = ("fleet.fingerprint-mismatch", "fleet.fingerprint-apart")


def fingerprint_findings(
    rows: Sequence[FingerprintRow], node_of: Mapping[int, str]
) -> tuple[list[FleetFinding], str | None]:
    """The findings of the fleet's fingerprints (``rows`` one per rank; ``node_of`` maps a rank to its node's
    name), and a note on what agreed (None when no row came)."""
    if not rows:
        return [], None
    by_rank = [r.model_copy(update={"gpu": None}) for r in rows]  # judged by global rank: GPU indices repeat
    verdicts = judge_fingerprints(by_rank, by_rank)  # each row carries its reference error: no re-run
    findings: list[FleetFinding] = []
    for row in rows:
        got = verdicts.get(row.rank)
        if got is None or got.verdict in ("pass", "incomplete"):
            continue
        node = node_of.get(row.rank)
        where = f"{node or f'rank {row.rank}'}" + (f" GPU{row.gpu}" if row.gpu is not None else f" rank {row.rank}")
        failed = got.verdict == "fail"
        findings.append(
            FleetFinding(
                id="fleet.fingerprint-mismatch" if failed else "fleet.fingerprint-apart",
                severity=Severity.FAIL if failed else Severity.WARN,
                node=node,
                gpu=row.gpu,
                message=f"{where}: {got.text.removeprefix('sdc.fingerprint-mismatch: ')}",
                measured=None,
                expected=None,
            )
        )
    agreed = sum(1 for v in verdicts.values() if v.verdict == "pass")
    nodes = len({node_of.get(r.rank) for r in rows})
    note = (
        f"fingerprint: {agreed} of {len(rows)} ranks on {nodes} node(s) agree with their identical peers bit for bit "
        "(or, without a peer that settles them, with a float64 reference)"
    )
    return findings, note

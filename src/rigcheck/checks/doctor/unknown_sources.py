"""Which `unknown` findings only say that a saved input lacks a kind of data, and which input would carry it.

A plain `nvidia-smi` table holds no topology, no PCIe link and no power limits, so a doctor report from it
would open with a dozen `unknown` findings that say nothing about the machine. The reports fold those into one
line per missing source ("no GPU topology in this input: add `--from topo.txt`"); the JSON keeps every finding.

Only an unknown whose data the input did not contain is folded: each mapped finding is re-checked against the
snapshot, and every field it could not judge must be null with no reason or with `not_in_source`. An unknown
the machine caused (not supported, no permission, GPU lost, a value cut from the file, N/A) stays a finding.
Nothing from NVML is folded, live or replayed: there `not_in_source` also means "not installed", and an
unknown is about the machine.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from rigcheck.checks.common import num, readable_gpus
from rigcheck.model import Finding, Gpu, Missing, Record, Severity, Snapshot


@dataclass(frozen=True)
class InputSource:
    """A saved output that carries some kind of data, and how to add it."""

    key: str
    file: str | None  # the name the hint suggests for `--from`
    command: str | None  # what to run on the machine to get it


@dataclass(frozen=True)
class FoldedSource:
    """The unknown findings one missing source explains, and the line a report shows for them."""

    source: InputSource
    data: tuple[str, ...]  # the kinds of data missing, in table order ("PCIe link", "power readings")
    findings: tuple[Finding, ...]

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(f.id for f in self.findings))

    @property
    def hint(self) -> str:
        """``add `--from topo.txt` (`nvidia-smi topo -m`)``, or what lists the findings for an unmapped group."""
        if self.source.file is None:
            return "--show-unknown lists them"
        return f"add `--from {self.source.file}` (`{self.source.command}`)"

    @property
    def line(self) -> str:
        """``no GPU topology in this input (1 finding): add `--from topo.txt` (`nvidia-smi topo -m`)``."""
        n = len(self.findings)
        return f"no {_or_list(self.data)} in this input ({n} finding{'s' if n != 1 else ''}): {self.hint}"


def _or_list(items: tuple[str, ...]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " or " + items[-1]


SMI_Q = InputSource("nvidia-smi-q", "q.xml", "nvidia-smi -q -x")
TOPOLOGY = InputSource("topology", "topo.txt", "nvidia-smi topo -m")
NVLINK = InputSource("nvlink", "nvlink.txt", "nvidia-smi nvlink -s")
P2P = InputSource("p2p", "p2p.txt", "nvidia-smi topo -p2p r")
# IOMMU, ACS and kernel modules come from sysfs: no nvidia-smi output prints them, a snapshot taken there does.
HOST = InputSource("host", "rig.json", "rigcheck snapshot > rig.json")
OTHER = InputSource("other", None, None)

# The input-absent reasons: the file format never carries the field, or the file has no such section.
_ABSENT = frozenset({None, Missing.NOT_IN_SOURCE})


def _only_input_lacks(record: Record, *fields: str) -> bool:
    """Whether a group of fields that stand in for each other (a draw and its average) lets the fold stand: one
    of them holds a usable value, or all are null and the first (the one a check names) has no reason or
    not_in_source. A value that is there but not finite was in the input: not a gap."""
    values = [getattr(record, f) for f in fields]
    if any(v is not None and (not isinstance(v, float) or num(v) is not None) for v in values):
        return True
    return all(v is None for v in values) and record.missing.get(fields[0]) in _ABSENT


@dataclass(frozen=True)
class _Input:
    snap: Snapshot
    gpus: dict[int, Gpu]  # by index: a 512-GPU box has a finding or three per GPU


def _gpu_fields(*groups: tuple[str, ...]) -> Callable[[_Input, Finding], bool]:
    def test(inp: _Input, finding: Finding) -> bool:
        gpu = inp.gpus.get(finding.gpu) if finding.gpu is not None else None
        return gpu is not None and all(_only_input_lacks(gpu, *group) for group in groups)

    return test


def _memory_errors(inp: _Input, finding: Finding) -> bool:
    gpu = inp.gpus.get(finding.gpu) if finding.gpu is not None else None
    if gpu is None:
        return False
    if gpu.ecc_enabled is True:  # ECC on, its counts missing
        return _only_input_lacks(gpu, "ecc_uncorrected_volatile") and _only_input_lacks(
            gpu, "ecc_uncorrected_aggregate"
        )
    return _only_input_lacks(gpu, "ecc_enabled")


def _driver_version(inp: _Input, finding: Finding) -> bool:
    # A version string that is not a number is in the input, just unreadable: not folded.
    snap = inp.snap
    return snap.software.driver_version is None and snap.software.missing.get("driver_version") in _ABSENT


def _pairs_absent(snap: Snapshot, fields: tuple[str, ...]) -> bool:
    """No GPU pair of the input says why ``fields`` are missing with a reason of the machine."""
    return all(pair.missing.get(f) in _ABSENT for pair in snap.pairs for f in fields)


def _topology(inp: _Input, finding: Finding) -> bool:
    # Link types come from a `topo -m` table; with one in the input, an unknown pair is a gap in that table.
    return inp.snap.topology is None and _pairs_absent(inp.snap, ("link", "kind"))


def _p2p_status(inp: _Input, finding: Finding) -> bool:
    return _pairs_absent(inp.snap, ("p2p_read", "p2p_write"))


def _iommu(inp: _Input, finding: Finding) -> bool:
    return inp.snap.system.missing.get("iommu") in _ABSENT


def _acs(inp: _Input, finding: Finding) -> bool:
    return not inp.snap.system.pcie_paths and inp.snap.system.missing.get("pcie_paths") in _ABSENT


def _peermem(inp: _Input, finding: Finding) -> bool:
    return inp.snap.system.missing.get("peermem_loaded") in _ABSENT


def _nvlink_state(inp: _Input, finding: Finding) -> bool:
    return all(g.missing.get("nvlinks") in _ABSENT for g in readable_gpus(inp.snap) if not g.nvlinks)


# finding id -> (the input that carries its data, the data in words, whether the input lacked it). Every id a
# check can emit as `unknown` is here or in NEVER_FOLDED (tests/checks/test_unknown_folding.py holds that).
FOLDABLE: dict[str, tuple[InputSource, str, Callable[[_Input, Finding], bool]]] = {
    "topology.link-unknown": (TOPOLOGY, "GPU topology", _topology),
    "pcie.link-unavailable": (
        SMI_Q,
        "PCIe link",
        _gpu_fields(("pcie_gen_current",), ("pcie_gen_max",), ("pcie_width_current",), ("pcie_width_max",)),
    ),
    "power.readings-unavailable": (
        SMI_Q,
        "power readings",
        _gpu_fields(
            ("power_draw_w", "power_draw_avg_w"),
            ("power_limit_w", "power_enforced_limit_w"),
            ("power_default_limit_w",),
        ),
    ),
    "thermal.temperature-unavailable": (SMI_Q, "temperature", _gpu_fields(("temp_c",))),
    "health.memory-errors-unavailable": (SMI_Q, "ECC state", _memory_errors),
    "software.driver-unknown": (SMI_Q, "driver version", _driver_version),
    "nvlink.state-unknown": (NVLINK, "NVLink state", _nvlink_state),
    "p2p.status-unknown": (P2P, "P2P status", _p2p_status),
    "p2p.iommu-unknown": (HOST, "IOMMU state", _iommu),
    "p2p.acs-unknown": (HOST, "PCIe ACS state", _acs),
    "gpudirect.peermem-unknown": (HOST, "GPUDirect RDMA module state", _peermem),
}

# Unknowns that say something about the machine or rigcheck whatever the input: never folded.
NEVER_FOLDED = frozenset({"software.torch-cuda-unknown", "xid.log-unreadable"})

_SOURCE_ORDER = (TOPOLOGY, SMI_Q, NVLINK, P2P, HOST, OTHER)
_MACHINE_WORDS = tuple(m.value for m in Missing if m is not Missing.NOT_IN_SOURCE)


def folds_input_gaps(snap: Snapshot) -> bool:
    """Whether the snapshot came only from saved text outputs: nothing read through NVML, live or replayed."""
    kinds = [snap.source.kind, *(part.kind for part in snap.source.parts)]
    return "nvml" not in kinds


def _unmapped_is_gap(finding: Finding) -> bool:
    """An id the table does not know (a newer check): folded only when its own words name `not_in_source` as
    the reason and no reason of the machine."""
    text = f"{finding.message} {finding.measured or ''}"
    return Missing.NOT_IN_SOURCE.value in text and not any(word in text for word in _MACHINE_WORDS)


def fold_input_gaps(snap: Snapshot, findings: Iterable[Finding]) -> tuple[list[Finding], list[FoldedSource]]:
    """The findings to list (order kept) and the unknowns folded, one group per missing source in a fixed
    order. Nothing is folded from a snapshot that holds NVML data."""
    findings = list(findings)
    if not folds_input_gaps(snap):
        return findings, []
    inp = _Input(snap, {g.index: g for g in snap.gpus})
    kept: list[Finding] = []
    folded: dict[str, tuple[InputSource, dict[str, None], list[Finding]]] = {}
    for f in findings:
        source: InputSource | None = None
        label = f.id
        if f.severity is Severity.UNKNOWN and f.id not in NEVER_FOLDED:
            if f.id in FOLDABLE:
                mapped, label, is_gap = FOLDABLE[f.id]
                source = mapped if is_gap(inp, f) else None
            elif _unmapped_is_gap(f):
                source, label = OTHER, "other data"
        if source is None:
            kept.append(f)
            continue
        entry = folded.setdefault(source.key, (source, {}, []))
        entry[1][label] = None
        entry[2].append(f)
    order = {label: i for i, (_, label, _) in enumerate(FOLDABLE.values())}
    groups = [
        FoldedSource(src, tuple(sorted(data, key=lambda label: order.get(label, len(order)))), tuple(found))
        for src in _SOURCE_ORDER
        if src.key in folded
        for _, data, found in [folded[src.key]]
    ]
    return kept, groups

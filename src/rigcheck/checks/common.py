"""Helpers shared by the checks: building findings, reading values, saying why a value is missing."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import Any, TypedDict

from typing_extensions import Unpack

from rigcheck.model import Finding, Gpu, Record, Severity, Snapshot, gpu_subject, pair_subject

# The guide every check implements (../shared/seed/000_*.txt).
GUIDE = "Hugging Face Transformers docs, 'Custom hardware for training'"
GUIDE_POWER = (
    f"{GUIDE}, Power: one independent PCIe 8-pin cable per socket (150 W each), a PSU with enough unused watts"
)
GUIDE_COOLING = (
    f"{GUIDE}, Cooling: under 80 C is good, 70-75 C excellent, throttling starts at around 84-90 C; "
    "a prolonged very high temperature is likely to reduce the GPU's lifespan"
)
GUIDE_CONNECTIVITY = (
    f"{GUIDE}, Multi-GPU Connectivity: DDP syncs rarely so a slow link matters less; ZeRO-DP sends messages "
    "often so fast links are super important"
)
NVML_REASONS = "nvml.h nvmlClocksEventReason* (nvidia-smi -q 'Clocks Event Reasons')"

LIFESPAN = "prolonged high temperatures shorten a GPU's life (the guide)"

PROBLEMS = frozenset({Severity.WARN, Severity.FAIL, Severity.UNKNOWN})


def read_live(snapshot: Snapshot) -> bool:
    """Whether the snapshot was read from this machine just now (NVML), not from a file: only then can
    "run rigcheck as root" get the reading that is missing."""
    return snapshot.source.kind == "nvml" and snapshot.source.replayed_from is None


def readable_gpus(snapshot: Snapshot) -> list[Gpu]:
    """The GPUs that were read; placeholders (read_error set) get only health.gpu-unreadable."""
    return [g for g in snapshot.gpus if g.read_error is None]


def num(value: float | int | None) -> float | None:
    """A finite number, or None (NaN and infinities count as missing)."""
    if value is None:
        return None
    f = float(value)
    return f if math.isfinite(f) else None


def why_missing(record: Record, field: str) -> str:
    """The recorded reason a field has no usable value, e.g. ``"not_supported"``."""
    value = getattr(record, field, None)
    if value is not None and isinstance(value, float) and not math.isfinite(value):
        return "not a finite number"
    reason = record.missing.get(field)
    return reason.value if reason is not None else "not recorded"


def missing_text(record: Record, fields: Iterable[tuple[str, str]]) -> str:
    """``"power limit not available (not_supported), power draw not available (no_permission)"``."""
    return ", ".join(f"{label} not available ({why_missing(record, field)})" for field, label in fields)


def category_of(finding_id: str) -> str:
    return finding_id.split(".", 1)[0]


class Details(TypedDict, total=False):
    """The optional evidence every finding may carry."""

    measured: str | None
    expected: str | None
    advice: str | None
    source: str | None


def _finding(finding_id: str, severity: Severity, message: str, subject: str, **where: Any) -> Finding:
    return Finding(
        id=finding_id, severity=severity, category=category_of(finding_id), subject=subject, message=message, **where
    )


def gpu_finding(gpu: Gpu, finding_id: str, severity: Severity, message: str, **details: Unpack[Details]) -> Finding:
    return _finding(finding_id, severity, message, gpu_subject(gpu.index), gpu=gpu.index, **details)


def pair_finding(
    a: int, b: int, finding_id: str, severity: Severity, message: str, **details: Unpack[Details]
) -> Finding:
    lo, hi = min(a, b), max(a, b)
    return _finding(finding_id, severity, message, pair_subject(lo, hi), pair=(lo, hi), **details)


def host_finding(finding_id: str, severity: Severity, message: str, **details: Unpack[Details]) -> Finding:
    return _finding(finding_id, severity, message, "host", **details)


def has_problem(findings: Iterable[Finding]) -> bool:
    return any(f.severity in PROBLEMS for f in findings)


def active_reasons(gpu: Gpu) -> set[str]:
    return set(gpu.clock_event_reasons_active or ())


def is_idle(gpu: Gpu) -> bool | None:
    """Whether the GPU looks idle: the "idle" clock-event reason, P8 or deeper, or under 10% utilization.

    Sources: nvml.h nvmlClocksEventReasonGpuIdle; NVIDIA's P-state convention (P0 max performance,
    P8 idle, P12 minimum); the 10% utilization cut is rigcheck's. None when none of these is known.
    """
    reasons = gpu.clock_event_reasons_active
    if reasons is not None and "idle" in reasons:
        return True
    pstate = gpu.pstate
    # P0-P15 (nvml.h nvmlPstates_t): a longer number is no P-state (and int() refuses one of 4,300+ digits)
    if pstate is not None and re.fullmatch(r"[Pp]\d{1,2}", pstate) and int(pstate[1:]) >= 8:
        return True
    util = num(gpu.utilization_gpu_percent)
    if util is not None:
        return util < 10
    if reasons is not None or pstate is not None:
        return False
    return None


def seconds(us: float) -> str:
    """Microseconds as seconds (or minutes/hours when long), ``"33.5 s"``, ``"2.1 h"``."""
    s = us / 1e6
    if s >= 7200:
        return f"{s / 3600:.1f} h"
    if s >= 120:
        return f"{s / 60:.1f} min"
    return f"{s:.1f} s"


def list_names(names: list[str], limit: int = 6) -> str:
    if len(names) <= limit:
        return ", ".join(names)
    return ", ".join(names[:limit]) + f" and {len(names) - limit} more"

"""Field-by-field merging of two snapshot records, for `--from A --from B …` (see readers/merge.py).

A value is taken from the first file that has it. Where two files hold different values, the first is kept
and a Diagnostic names the field and both files, except:
- a name truncated by the `nvidia-smi` table ("NVIDIA RTX 6000 Ada Gene...") gives way to the full one, and
  a figure the table rounds to a whole unit ("72W") to the precise one ("72.02 W");
- readings that move between two captures (power draw, temperatures, clocks, …) are not a conflict: one
  Diagnostic per record and file lists them, and the first file's are kept;
- health counters only grow and health flags only get set, so the worse value is kept: a merge never hides
  a fault that one of its files shows.
A field null in every file keeps the most informative of their reasons.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel

from rigcheck.facts.pcie import normalize_bdf
from rigcheck.model.snapshot import Diagnostic, Missing, Record

MERGE_SOURCE = "merge"  # Diagnostic.source of what the merge itself notices

# Most informative first: a reason that says what went wrong beats "the input does not hold it". A reason
# not listed here ranks just above NOT_IN_SOURCE.
REASON_RANK: tuple[Missing, ...] = (
    Missing.GPU_LOST,
    Missing.ERROR,
    Missing.IMPLAUSIBLE,
    Missing.NO_PERMISSION,
    Missing.DRIVER_TOO_OLD,
    Missing.NOT_SUPPORTED,
    Missing.REPORTED_NA,
    Missing.TRUNCATED,
    Missing.NOT_IN_SOURCE,
)

# Readings of the moment: two captures seconds apart differ without either being wrong.
READINGS = frozenset(
    {
        "utilization_gpu_percent",
        "memory_used_mib",
        "power_draw_w",
        "power_draw_avg_w",
        "temp_c",
        "temp_memory_c",
        "temp_tlimit_margin_c",
        "fan_percent",
        "clock_graphics_mhz",
        "clock_sm_mhz",
        "clock_mem_mhz",
        "clock_event_reasons_active",
        "clock_event_durations_us",
        "pstate",
        "pcie_gen_current",  # the link trains down when idle
        "pcie_width_current",
    }
)
# Counters that only grow and flags that only get set: the worse value is the later truth.
WORSE_IS_HIGHER = frozenset(
    {
        "pcie_replay_count",
        "ecc_uncorrected_volatile",
        "ecc_uncorrected_aggregate",
        "ecc_corrected_volatile",
        "remapped_rows_correctable",
        "remapped_rows_uncorrectable",
        "retired_pages_sbe",
        "retired_pages_dbe",
        "replay_errors",  # NVLink error counters (`nvlink -e`, NVML)
        "recovery_errors",
        "crc_errors",
    }
)
WORSE_IS_TRUE = frozenset({"remapped_rows_pending", "remapped_rows_failure", "retired_pages_pending"})
_BUS_IDS = frozenset({"pci_bus_id", "remote_pci_bus_id"})
_TRUNCATION = "..."


def best_reason(*reasons: Missing | None) -> Missing | None:
    """The most informative of ``reasons`` (None when there is none)."""
    present = [r for r in reasons if r is not None]
    last = len(REASON_RANK) - 1
    return min(present, key=lambda r: REASON_RANK.index(r) if r in REASON_RANK else last - 0.5) if present else None


def bus_id_key(value: str) -> str:
    """A PCI bus id in one spelling (NVML's 8-digit domain and sysfs' 4-digit one compare equal)."""
    try:
        return normalize_bdf(value)
    except ValueError:
        return value.strip().lower()


def _untruncated(kept: str, other: str) -> str | None:
    """The full name when one of the two is the other cut with "..."; None when they are simply different."""
    for short, full in ((kept, other), (other, kept)):
        if short.endswith(_TRUNCATION) and full.startswith(short[: -len(_TRUNCATION)].rstrip()):
            return full
    return None


def _finer(kept: Any, new: Any) -> float | None:
    """The precise figure when the other is it rounded to a whole unit (the `nvidia-smi` table prints "72W" where
    `-q` prints "72.02 W"); None when the two differ by more than rounding."""
    if not (isinstance(kept, float | int) and isinstance(new, float | int)) or isinstance(kept, bool):
        return None
    if abs(kept - new) >= 1:
        return None
    if float(kept).is_integer() and not float(new).is_integer():
        return float(new)
    if float(new).is_integer() and not float(kept).is_integer():
        return float(kept)
    return None


def same_value(field: str, a: Any, b: Any) -> bool:
    if field in _BUS_IDS and isinstance(a, str) and isinstance(b, str):
        return bus_id_key(a) == bus_id_key(b)
    if isinstance(a, float | int) and isinstance(b, float | int) and not isinstance(a, bool):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)
    return bool(a == b)


def shown(value: Any) -> str:
    """A value as a diagnostic prints it."""
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, list):
        return "[" + ", ".join(str(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {shown(v)}" for k, v in value.items()) + "}"
    if hasattr(value, "value"):  # an enum
        return str(value.value)
    return str(value)


class Merger:
    """Merges records file after file, remembering which file gave each kept value."""

    def __init__(self, first_path: str) -> None:
        self.first_path = first_path
        self.diagnostics: list[Diagnostic] = []
        self.contributed: set[str] = {first_path}
        self._origin: dict[str, str] = {}  # "scope" or "scope/field" -> the file its kept value came from

    def origin(self, scope: str, field: str | None = None) -> str:
        """The file a kept value came from: recorded per field, else per record, else the first file."""
        if field is not None and f"{scope}/{field}" in self._origin:
            return self._origin[f"{scope}/{field}"]
        return self._origin.get(scope, self.first_path)

    def adopt(self, scope: str, path: str) -> None:
        """A whole record (a GPU, a pair, a link) taken from ``path``."""
        self._origin[scope] = path
        self.contributed.add(path)

    def note(self, message: str, gpu: int | None = None) -> None:
        self.diagnostics.append(Diagnostic(source=MERGE_SOURCE, message=message, gpu=gpu))

    def merge(
        self, into: Record, other: Record, *, scope: str, path: str, gpu: int | None = None, skip: Iterable[str] = ()
    ) -> None:
        """Fill ``into`` from ``other`` (read from ``path``); ``scope`` names the record in messages ("GPU0")."""
        skipped = {"missing", *skip}
        moved: dict[str, list[str]] = {}  # origin file -> "field kept vs other" for readings of the moment
        for field in type(into).model_fields:
            if field in skipped:
                continue
            kept, new = getattr(into, field), getattr(other, field)
            if new is None:
                if kept is None:
                    reason = best_reason(into.missing.get(field), other.missing.get(field))
                    if reason is not None and reason != into.missing.get(field):
                        into.missing[field] = reason  # a reason that says more is something learnt
                        self.contributed.add(path)
                continue
            if kept is None:
                self.take(into, field, new, scope, path)
                continue
            if same_value(field, kept, new):
                continue
            origin = self.origin(scope, field)
            if isinstance(kept, str) and isinstance(new, str) and (full := _untruncated(kept, new)) is not None:
                if full != kept:
                    self.take(into, field, full, scope, path)
                continue
            if (precise := _finer(kept, new)) is not None:
                if precise != kept:
                    self.take(into, field, precise, scope, path)
                continue
            if field in READINGS:
                moved.setdefault(origin, []).append(f"{field} {shown(kept)} vs {shown(new)}")
            elif field in WORSE_IS_HIGHER or field in WORSE_IS_TRUE:
                worse = max(kept, new)
                if worse != kept:
                    self.take(into, field, worse, scope, path)
                self.note(
                    f"{scope} {field}: {shown(kept)} in {origin}, {shown(new)} in {path}; kept {shown(worse)}, "
                    "the worse (a health counter only grows)",
                    gpu,
                )
            else:
                self.note(f"{scope} {field}: {shown(kept)} in {origin}, {shown(new)} in {path}; kept {origin}'s", gpu)
        for origin, fields in moved.items():
            self.note(
                f"{scope}: readings differ between {origin} and {path} (read at different moments): "
                f"{', '.join(fields)}; kept {origin}'s",
                gpu,
            )

    def take(self, into: BaseModel, field: str, value: Any, scope: str, path: str) -> None:
        """Set ``into.field`` to (a copy of) ``value`` read from ``path``, and drop its missing reason."""
        setattr(into, field, copy.deepcopy(value))
        if isinstance(into, Record):
            into.missing.pop(field, None)
        self._origin[f"{scope}/{field}"] = path
        self.contributed.add(path)

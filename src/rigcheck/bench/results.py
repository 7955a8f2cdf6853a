"""The bench result document (schema ``rigcheck.bench/1``), shared by every `rigcheck bench` command.

A document: {"schema", "benchmark", "partial", "error", "method", "backend", "world_size", "versions",
"snapshot", "results": [row, ...]}. Every row carries the generic keys of DESIGN.md (name, unit, value,
median, min, max, repeats, warmup, sizes, backend, world_size, method_version) plus the keys of its
benchmark (e.g. op, size_bytes, time_us_median, algbw_gbps, busbw_gbps, correct for collectives).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

BENCH_SCHEMA = "rigcheck.bench/1"


@dataclass(frozen=True)
class Method:
    """How a figure was measured; ``version`` changes whenever the method changes."""

    version: str
    warmup: int
    repeats: int
    statistic: str = "median"
    timer: str = "perf_counter"  # or "cuda_events"

    def to_dict(self) -> dict[str, Any]:
        return {
            "method_version": self.version,
            "warmup": self.warmup,
            "repeats": self.repeats,
            "statistic": self.statistic,
            "timer": self.timer,
        }


def row(
    *,
    name: str,
    unit: str,
    samples: Sequence[float],
    method: Method,
    backend: str,
    world_size: int,
    sizes: Sequence[int] = (),
    **extra: Any,
) -> dict[str, Any]:
    """One result: ``value`` is the median of ``samples`` (already in ``unit``), with min and max."""
    if not samples:
        raise ValueError("a result needs at least one sample")
    median = statistics.median(samples)
    return {
        "name": name,
        "unit": unit,
        "value": median,
        "median": median,
        "min": min(samples),
        "max": max(samples),
        "repeats": len(samples),
        "warmup": method.warmup,
        "sizes": list(sizes),
        "backend": backend,
        "world_size": world_size,
        "method_version": method.version,
        **extra,
    }


def document(
    *,
    benchmark: str,
    rows: list[dict[str, Any]],
    method: Method,
    backend: str,
    world_size: int,
    versions: dict[str, str | None],
    snapshot: dict[str, Any] | None,
    partial: bool = False,
    error: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    return {
        "schema": BENCH_SCHEMA,
        "benchmark": benchmark,
        "partial": partial,
        "error": error,
        "method": method.to_dict(),
        "backend": backend,
        "world_size": world_size,
        "versions": versions,
        "snapshot": snapshot,
        "results": rows,
        **extra,
    }


def explain_nulls(result: dict[str, Any], reason: str, keys: Sequence[str]) -> None:
    """Give each of ``keys`` that is null in ``result`` a reason, in the row's ``missing`` map.

    rigcheck's rule for every document: a missing number is ``null`` with a sibling reason.
    """
    for key in keys:
        if result.get(key) is None:
            result.setdefault("missing", {})[key] = reason

"""Findings: what a check concluded about one subject, with the evidence and the advice."""

from __future__ import annotations

from enum import Enum

from pydantic import BaseModel, ConfigDict


class Severity(str, Enum):
    OK = "ok"
    INFO = "info"
    WARN = "warn"
    FAIL = "fail"
    UNKNOWN = "unknown"  # the check could not decide: the data it needs is missing

    @property
    def rank(self) -> int:
        """Order for reports: worst first (fail, warn, unknown, info, ok)."""
        return _RANK[self]


_RANK = {
    Severity.FAIL: 4,
    Severity.WARN: 3,
    Severity.UNKNOWN: 2,
    Severity.INFO: 1,
    Severity.OK: 0,
}


class Finding(BaseModel):
    """One conclusion. ``id`` is stable (``power.limit-below-default``) so scripts can key on it."""

    model_config = ConfigDict(extra="forbid")

    id: str
    severity: Severity
    category: str  # the id's prefix: power, thermal, topology, pcie, p2p, health, software
    subject: str  # "GPU0", "GPU0-GPU1", "host"
    gpu: int | None = None
    pair: tuple[int, int] | None = None
    message: str
    measured: str | None = None
    expected: str | None = None
    advice: str | None = None
    source: str | None = None  # where the rule or number comes from (the guide, a datasheet, nvml.h)


def gpu_subject(index: int) -> str:
    return f"GPU{index}"


def pair_subject(a: int, b: int) -> str:
    return f"GPU{a}-GPU{b}"

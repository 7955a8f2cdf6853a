"""The incident corpus (tests/incidents/manifest.json): real incidents replayed from public threads, each as the
saved outputs a user would have had, with its source and the verdict the thread established.

A file is named relative to tests/: an output already kept for the readers' tests (tests/fixtures/...,
tests/calibration/cases/...) is not copied again; an output taken for this corpus lives in tests/incidents/<id>/.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Literal

HERE = Path(__file__).parent
TESTS = HERE.parent
MANIFEST = HERE / "manifest.json"
FLOORS = HERE / "floors.json"
FORMAT = "rigcheck-incidents/1"

Verdict = Literal["sick", "healthy"]
Role = Literal[
    "passive",  # a machine description the doctor reads: nvidia-smi -q/-x/table, topo, nvlink, kernel log, FM log ...
    "allreduce",  # nccl-tests all_reduce_perf
    "allgather",
    "reducescatter",
    "broadcast",
    "matmul",  # mamf-finder
    "membw",  # nvbandwidth device_local_copy
    "hostlink",  # nvbandwidth host copies, bandwidthTest
    "p2p",  # nvbandwidth device-to-device, p2pBandwidthLatencyTest
    "dcgm",  # dcgmi diag, -j or its table
    "trace",  # a load trace for burn --analyze: nvidia-smi --query-gpu -lms CSV, dmon, gpu-burn's output
]
ROLES: tuple[Role, ...] = (
    "passive",
    "allreduce",
    "allgather",
    "reducescatter",
    "broadcast",
    "matmul",
    "membw",
    "hostlink",
    "p2p",
    "dcgm",
    "trace",
)
VERBATIM = "verbatim"
RECONSTRUCTED = "reconstructed from the thread's quoted values"


@dataclass(frozen=True)
class Culprit:
    """What the thread names as at fault; a profile flags the incident only when a failing finding, check or
    GPU of its output matches every key given. None of them: the node as a whole (a driver, a service)."""

    bus_id: str | None = None  # PCI bus id, any spelling ("0000:9b:00.0", "00000000:9B:00.0", "9b:00")
    index: int | None = None  # nvidia-smi's GPU index
    text: str | None = None  # words a failing item must say (case-insensitive): "Fabric Manager", "GPU6"

    def describe(self) -> str:
        parts = [f"bus {self.bus_id}" if self.bus_id else "", f"GPU {self.index}" if self.index is not None else ""]
        parts.append(f'"{self.text}"' if self.text else "")
        return ", ".join(p for p in parts if p) or "the node"


@dataclass(frozen=True)
class SavedFile:
    path: str  # relative to tests/
    output: str  # what command printed it, as the user ran it ("dmesg -T", "nvidia-smi -q")
    role: Role
    origin: str = VERBATIM  # or RECONSTRUCTED, with what was built around the quoted values in `note`
    profiles: tuple[str, ...] | None = None  # None: the role's default (profiles.DEFAULT_PROFILES)
    note: str = ""

    @property
    def full_path(self) -> Path:
        return TESTS / self.path


@dataclass(frozen=True)
class Incident:
    id: str
    what: str  # one line: the machine and what happened
    source: str  # a public address
    verdict: Verdict
    established: str  # what the thread established, in our words, with who said it
    culprit: Culprit
    files: tuple[SavedFile, ...]
    model: str | None = None  # --model for the bench readers where the output does not name the GPU
    gap: str = ""  # why no profile flags it (sick) or why one flags it (healthy): the reader or rule rigcheck lacks


def _culprit(raw: dict[str, object] | None) -> Culprit:
    raw = raw or {}
    index = raw.get("index")
    return Culprit(
        bus_id=str(raw["bus_id"]) if raw.get("bus_id") else None,
        index=int(index) if isinstance(index, int) else None,
        text=str(raw["text"]) if raw.get("text") else None,
    )


def _file(raw: dict[str, object]) -> SavedFile:
    profiles = raw.get("profiles")
    return SavedFile(
        path=str(raw["path"]),
        output=str(raw["output"]),
        role=raw["role"],  # type: ignore[arg-type]  # checked by tests/contracts/test_coverage_doc.py
        origin=str(raw.get("origin", VERBATIM)),
        profiles=tuple(str(p) for p in profiles) if isinstance(profiles, list) else None,
        note=str(raw.get("note", "")),
    )


@cache
def load_incidents() -> tuple[Incident, ...]:
    data = json.loads(MANIFEST.read_text(encoding="utf-8"))
    return tuple(
        Incident(
            id=i["id"],
            what=i["what"],
            source=i["source"],
            verdict=i["verdict"],
            established=i["established"],
            culprit=_culprit(i.get("culprit")),
            files=tuple(_file(f) for f in i["files"]),
            model=i.get("model"),
            gap=i.get("gap", ""),
        )
        for i in data["incidents"]
    )


def load_floors() -> dict[str, dict[str, float]]:
    """profile -> {"flagged": share, "left_alone": share}: the committed figures a profile may not fall under."""
    floors: dict[str, dict[str, float]] = json.loads(FLOORS.read_text(encoding="utf-8"))["floors"]
    return floors

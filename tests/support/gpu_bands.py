"""Reference figures for the `gpu`-marked tests, each from a file of shared/gpu-evidence/h100-2026-11-22/.

The evidence was taken on one NVIDIA H100 80GB HBM3 (SXM5 board, 700 W cap, VM passthrough, driver 580.159.04,
torch 2.11.0+cu130): the bands hold on that card (catalog entry "H100 SXM5") only. An H100 PCIe (350 W, HBM2e
at 2.0 TB/s) or NVL would fail them without being faulty, so `h100_or_skip()` accepts the SXM5 names (NVML's
"NVIDIA H100 80GB HBM3", "H100 SXM") and skips every other card, the H100 PCIe/NVL included, with its name.
Elsewhere the tests assert only a positive, finite figure in the right unit (`on_reference_card()` says which).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache

import pytest

from rigcheck.facts import catalog

EVIDENCE = "shared/gpu-evidence/h100-2026-11-22"
REFERENCE_CARD = "H100 SXM5"  # rigcheck.facts.catalog's canonical name of the evidence's card


@dataclass(frozen=True)
class Band:
    """A reference figure, the fraction of it a healthy card must reach, and the file that holds it."""

    reference: float
    unit: str
    fraction: float
    source: str

    @property
    def floor(self) -> float:
        return self.reference * self.fraction

    def check(self, got: float, what: str) -> None:
        assert got >= self.floor, (
            f"{what}: {got:.1f} {self.unit} < {self.fraction:.0%} of {self.reference:g} {self.unit} "
            f"({self.floor:.1f}; reference in {self.source})"
        )


# bf16 matmul, best shape of mamf-finder's sweep m=1024..16384, n=k=8192: 799.4 TFLOPS at 3072x8192x8192.
MATMUL_BF16_TFLOPS = Band(799.4, "TFLOPS", 0.97, f"{EVIDENCE}/mamf.txt")
# Device-local copy, bytes copied once (nvbandwidth device_local_copy): 1489.5 GB/s.
DEVICE_COPY_GBPS = Band(1489.5, "GB/s", 0.95, f"{EVIDENCE}/nvbandwidth.txt")
# Pinned host<->GPU, torch 1 GiB: h2d 55.11 / d2h 55.08 GB/s; the floor is 52 GB/s (about 94%) in each direction,
# above nvbandwidth's copy-engine h2d 49.47 GB/s (nvbandwidth.txt) since rigcheck times torch copies as torchbench.
HOST_PINNED_GBPS = Band(55.1, "GB/s", 52.0 / 55.1, f"{EVIDENCE}/torchbench.json")
# gpu-burn -tc 60: median power while busy 697 W at the 700 W cap, limited by SW power cap (README.md's table,
# "Under sustained load"; the 10 Hz traces are in corpus/telemetry/).
BURN_POWER_W = Band(697.0, "W", 0.95, f"{EVIDENCE}/README.md")
# gpt2 124M, random init, batch 4 x 1024, 200 steps, DDP world 1, fp32: 20.15 s; rigcheck's own loop must be
# within 3% of that plain loop.
GPT2_200_STEPS_S = 20.154862293999997
GPT2_SOURCE = f"{EVIDENCE}/gpt2-ddp-1gpu.jsonl"
GPT2_TOLERANCE = 0.03


def positive_finite(value: object, what: str) -> float:
    """The figure as a float, asserted a positive, finite number."""
    assert isinstance(value, (int, float)), f"{what}: {value!r} is not a number"
    assert not isinstance(value, bool), f"{what}: {value!r} is not a number"
    assert math.isfinite(value), f"{what}: {value!r} is not finite"
    assert value > 0, f"{what}: {value!r} is not positive"
    return float(value)


@cache
def card_name(index: int = 0) -> str:
    """The name of GPU ``index`` as torch (else NVML) gives it; "" when neither can say."""
    try:
        import torch

        if torch.cuda.is_available():
            return str(torch.cuda.get_device_name(index))
    except (ImportError, RuntimeError):
        pass
    try:
        import pynvml

        pynvml.nvmlInit()
    except (ImportError, Exception):  # noqa: BLE001 - pynvml raises its own error classes (NVMLError and kin)
        return ""
    try:
        name = pynvml.nvmlDeviceGetName(pynvml.nvmlDeviceGetHandleByIndex(index))
        return name.decode() if isinstance(name, bytes) else str(name)
    finally:
        pynvml.nvmlShutdown()


def is_reference_name(name: str | None) -> bool:
    """True when ``name`` (as NVML / torch print it) is the evidence's card: catalog lookup gives "H100 SXM5"."""
    spec = catalog.lookup(name or "")
    return spec is not None and spec.name == REFERENCE_CARD


def on_reference_card(index: int = 0) -> bool:
    """True when GPU ``index`` (torch's order, else NVML's) is the evidence's card."""
    return is_reference_name(card_name(index))


def h100_or_skip(index: int = 0) -> str:
    """The card's name when it is the H100 (SXM5) the evidence was taken on; else skip the test, naming it."""
    name = card_name(index)
    if not on_reference_card(index):
        spec = catalog.lookup(name)
        known = f" (catalog: {spec.name})" if spec is not None else ""
        pytest.skip(f"the bands are an H100 SXM5's ({EVIDENCE}); this card is {name or 'unnamed'!r}{known}")
    return name

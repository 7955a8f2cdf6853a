"""`run_burn` on CPU devices with a fake NVML (tests/support/fakenvml.py): the whole burn path without a GPU, a
tiny matmul and a short load. Each test module sets the length and size it needs."""

from __future__ import annotations

from typing import Any

import torch

from rigcheck.bench.burn import run_burn
from rigcheck.probe.nvml import NvmlPoller


def cpu_burn(lib: Any, *, minutes: float = 0.025, size: int = 48, preroll_s: float = 0.3, **kwargs: Any) -> Any:
    """A burn of every GPU ``lib`` fakes, each loaded on a CPU device (fp32, sampled every 20 ms)."""
    with NvmlPoller(lib) as poller:
        return run_burn(
            poller,
            minutes=minutes,
            dtype="fp32",
            interval_s=0.02,
            device_for=lambda i: torch.device("cpu"),
            size=size,
            preroll_s=preroll_s,
            **kwargs,
        )

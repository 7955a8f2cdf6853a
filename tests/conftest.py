"""Shared test set-up: tests marked `gpu` run only where NVML finds a GPU."""

from __future__ import annotations

import gc
from functools import cache

import pytest

# As the CLI's main() does (rigcheck.cli.app.GC_YOUNG_THRESHOLD): the suite builds many long-lived snapshots and
# documents, which the cyclic collector would otherwise walk again and again.
gc.set_threshold(70_000, 20, 20)


@cache
def nvidia_gpu_present() -> bool:
    import pynvml

    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        return False
    try:
        return int(pynvml.nvmlDeviceGetCount()) > 0
    finally:
        pynvml.nvmlShutdown()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if nvidia_gpu_present():
        return
    skip = pytest.mark.skip(reason="needs an NVIDIA GPU (NVML found none)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)

"""Shared test set-up: tests marked `gpu` run only where NVML finds a GPU; the `rigcheck` fixture runs the CLI."""

from __future__ import annotations

import gc
import os
from collections.abc import Mapping
from functools import cache

import pytest

from tests.support.cli import Arg, Result, Rigcheck, run_main

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


# The suite runs on two pytest-xdist workers (pyproject's addopts), which inherit COLUMNS=80 and LINES=24; the CLI
# takes COLUMNS as the user's width, so a report would come out narrower than in a run without -n.
if "PYTEST_XDIST_WORKER" in os.environ:
    for _name in ("COLUMNS", "LINES"):
        os.environ.pop(_name, None)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if nvidia_gpu_present():
        return
    skip = pytest.mark.skip(reason="needs an NVIDIA GPU (NVML found none)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def rigcheck(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Rigcheck:
    """``rigcheck(*argv, stdin=None, env=None)``: the real main, in this process; a Result (code, stdout, stderr, json)
    (tests/support/cli.py)."""

    def run(*argv: Arg, stdin: str | bytes | None = None, env: Mapping[str, str | None] | None = None) -> Result:
        return run_main(capsys, monkeypatch, argv, stdin=stdin, env=env)

    return run

"""The fault tests' fixture: a tmpfs of a few KB, mounted where this process may (root), else the test is skipped."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def tiny_tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 64 KB tmpfs, unmounted after the test; skipped where this process may not mount one."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mount = shutil.which("mount")
    if mount is None:
        pytest.skip("no mount(8) here")
    where = tmp_path / "tiny"
    where.mkdir()
    done = subprocess.run(
        [mount, "-t", "tmpfs", "-o", "size=64k,mode=0755", "rigcheck-faults", str(where)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip() or done.returncode}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True, check=False)

"""No dead code: vulture over the package and its whitelist (tools/vulture_whitelist.py, the names used where vulture
cannot see: pydantic fields and validators, typer commands, pynvml's interface, what only tests use) reports
nothing. At 60 % confidence vulture names unused functions, classes, methods, attributes and variables too, not only
unused imports and unreachable code (90-100 %)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
WHITELIST = ROOT / "tools" / "vulture_whitelist.py"
MIN_CONFIDENCE = 60


def test_vulture_finds_no_dead_code() -> None:
    pytest.importorskip("vulture", reason="vulture is not installed (pip install -e '.[dev]')")
    argv = [sys.executable, "-m", "vulture", "src/rigcheck", str(WHITELIST), f"--min-confidence={MIN_CONFIDENCE}"]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.stderr == ""
    assert done.stdout == "", f"dead code (remove it, or whitelist a use vulture cannot see):\n{done.stdout}"
    assert done.returncode == 0


def test_vulture_sees_an_unused_function(tmp_path: Path) -> None:
    """The gate can fail: a function nothing calls is reported at the confidence the test above uses."""
    pytest.importorskip("vulture", reason="vulture is not installed (pip install -e '.[dev]')")
    module = tmp_path / "dead.py"
    module.write_text("def never_called() -> int:\n    return 1\n", encoding="utf-8")
    argv = [sys.executable, "-m", "vulture", str(module), f"--min-confidence={MIN_CONFIDENCE}"]
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    assert "unused function 'never_called'" in done.stdout

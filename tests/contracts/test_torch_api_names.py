"""Every ``torch.<a>.<b>`` that rigcheck's source names exists in the installed torch.

The CUDA paths of the benchmarks run only on a GPU, so a misspelt ``torch.cuda`` attribute would pass
every CPU test; the CPU build of torch still carries the ``torch.cuda`` module's names, so the names
(not their behaviour) are checked here.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

SRC = Path(__file__).resolve().parent.parents[1] / "src" / "rigcheck"


def torch_attribute_chains() -> dict[str, str]:
    """Each dotted name rooted at ``torch`` in src/ -> the file that uses it first."""
    found: dict[str, str] = {}
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            chain: list[str] = []
            cur: ast.expr = node if isinstance(node, ast.Attribute) else ast.Constant(None)
            while isinstance(cur, ast.Attribute):
                chain.append(cur.attr)
                cur = cur.value
            if chain and isinstance(cur, ast.Name) and cur.id == "torch":
                found.setdefault(".".join(reversed(chain)), path.relative_to(SRC).as_posix())
    return found


CHAINS = torch_attribute_chains()


def test_the_scan_finds_the_cuda_calls() -> None:
    assert "cuda.Event" in CHAINS
    assert "cuda.synchronize" in CHAINS
    assert len(CHAINS) > 40


@pytest.mark.parametrize("dotted", sorted(CHAINS))
def test_torch_name_exists(dotted: str) -> None:
    obj = torch
    for part in dotted.split("."):
        assert hasattr(obj, part), f"torch.{dotted} (used in {CHAINS[dotted]}) does not exist"
        obj = getattr(obj, part)

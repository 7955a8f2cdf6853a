"""Every command's output on the real inputs is what it was: the JSON scripts read (docs/commands.md is the
contract) and the terminal text a person reads (a lost column fails here). The golden files are in
tests/golden/out/, written by ``python -m tests.golden.cases``; see that module for when to rewrite them."""

from __future__ import annotations

import pytest

from tests.golden.cases import OUT, Case, cases, record

CASES = cases()


def test_every_golden_file_has_its_case() -> None:
    assert {p.name for p in OUT.iterdir()} == {c.name for c in CASES}


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_output_unchanged(case: Case) -> None:
    expected = (OUT / case.name).read_text(encoding="utf-8")
    got = record(case)
    assert got == expected, f"rigcheck {' '.join(case.argv)} changed (see tests/golden/cases.py)"

"""Every command's output on the real inputs is what it was: the JSON scripts read (docs/commands.md is the
contract) and the terminal text a person reads (a lost column fails here). The golden files are in
tests/golden/out/, written by ``python -m tests.golden.cases``; see that module for when to rewrite them."""

from __future__ import annotations

import contextlib
import io
import itertools

import pytest

from tests.golden.cases import OUT, TERMINAL_WIDTHS, Case, cases, record, terminal_env

CASES = cases()


def test_every_golden_file_has_its_case() -> None:
    assert {p.name for p in OUT.iterdir()} == {c.name for c in CASES}


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_output_unchanged(case: Case) -> None:
    expected = (OUT / case.name).read_text(encoding="utf-8")
    got = record(case)
    assert got == expected, f"rigcheck {' '.join(case.argv)} changed (see tests/golden/cases.py)"


def test_terminal_suite_has_every_command_at_every_width_piped_and_on_a_terminal() -> None:
    suite = [c for c in CASES if c.name.startswith("term-")]
    seen = {(c.argv[0], c.width, c.tty) for c in suite}
    commands = ("doctor", "verify", "fleet", "topo", "plan")
    assert seen == set(itertools.product(commands, TERMINAL_WIDTHS, (False, True)))
    for c in suite:  # the name says what the file holds
        assert c.name.endswith(f"--w{c.width}-{'tty' if c.tty else 'pipe'}.txt"), c.name


@pytest.mark.parametrize("tty", [False, True], ids=["pipe", "tty"])
def test_a_terminal_case_is_what_rich_sees_whatever_the_shell_sets(tty: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    from rigcheck.cli.common import out_console

    # The shell running the tests says the opposite: the case's own mode and width win.
    monkeypatch.setenv("COLUMNS", "123")
    if tty:
        monkeypatch.setenv("TTY_COMPATIBLE", "0")
    else:
        monkeypatch.setenv("FORCE_COLOR", "1")
    case = Case("x.txt", ("doctor",), "60", tty)
    with terminal_env(case), contextlib.redirect_stdout(io.StringIO()):
        console = out_console()
        assert (console.is_terminal, console.width) == (tty, 60)

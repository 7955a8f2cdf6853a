"""Every help screen prints its text as written: typer reads help as rich markup, where a site-file table name such as
`[bands]` is a style tag that vanishes, so rigcheck escapes it (cli/lazy.py, escape_help). Each command's --help is
rendered through the real main and must hold its own help and each option's, word for word; and every help that lists
exit codes lists the codes docs/commands.md gives."""

from __future__ import annotations

import inspect
import re
from pathlib import Path
from typing import Any, NamedTuple
from unittest import mock

import pytest
import rich.markup
import typer.main
from typer.core import TyperArgument, TyperOption

from rigcheck.cli import lazy
from rigcheck.cli.app import app
from rigcheck.cli.lazy import LazyGroup, escape_markup
from tests.support.cli import Rigcheck

DOCS = Path(__file__).resolve().parent.parent.parent / "docs" / "commands.md"
WIDE = {"COLUMNS": "1000", "TERMINAL_WIDTH": None}  # wide enough that no help text wraps


class Screen(NamedTuple):
    argv: tuple[str, ...]
    help: str  # the command's own help, as written in the code
    options: dict[str, str]  # each shown option's first name -> its help, as written


def _screens() -> list[Screen]:
    """Every command and subcommand, with its help texts as written (escaping switched off while they are read)."""
    screens: list[Screen] = []

    def walk(argv: tuple[str, ...], command: Any) -> None:
        params = [p for p in command.params if isinstance(p, TyperOption | TyperArgument) and p.help]
        options = {p.opts[0]: p.help for p in params if not getattr(p, "hidden", False)}
        screens.append(Screen(argv, command.help or "", options))
        names = list(getattr(command, "commands", None) or {})
        for name in names:
            sub = command.load(name) if isinstance(command, LazyGroup) else command.commands[name]
            walk((*argv, name), sub)

    with mock.patch.object(lazy, "escape_markup", lambda text: text):
        walk((), typer.main.get_command(app))
    return screens


SCREENS = _screens()


def words(text: str) -> str:
    """Text with the help screen's box drawing taken out and every run of whitespace one space."""
    return " ".join(re.sub(r"[│╭╮╰╯─]", " ", text).split())


def shown(text: str) -> str:
    """What a help text looks like on the screen: its lines joined (typer's rule), before any form feed."""
    return words(inspect.cleandoc(text).partition("\f")[0].replace("\b", ""))


def test_the_walk_finds_every_command() -> None:
    names = {" ".join(s.argv) for s in SCREENS}
    expected = {"", "doctor", "verify", "fleet", "plan", "nccl-log", "power", "power plan", "bench", "bench matmul"}
    assert expected <= names
    assert len(SCREENS) >= 20


@pytest.mark.parametrize("screen", SCREENS, ids=[" ".join(s.argv) or "rigcheck" for s in SCREENS])
def test_help_prints_every_text_as_written(rigcheck: Rigcheck, screen: Screen) -> None:
    result = rigcheck(*screen.argv, "--help", env=WIDE)
    assert result.code == 0, result.stderr
    out = words(result.stdout)
    assert shown(screen.help) in out
    for option, text in screen.options.items():
        assert shown(text) in out, f"{option}: {text!r}"


def test_site_file_table_names_are_printed(rigcheck: Rigcheck) -> None:
    assert "A site file whose [bands] replace the catalogue's floors." in words(rigcheck("verify", "--help").stdout)
    doctor = words(rigcheck("doctor", "--help", env=WIDE).stdout)
    assert "severity ([xid.severity])" in doctor
    assert "application codes ([xid.limits])" in doctor


def test_help_is_escaped_once_however_often_it_is_built(rigcheck: Rigcheck) -> None:
    """main builds the command tree at each run; the second build must not escape the first's text again."""
    for _ in range(2):
        out = rigcheck("verify", "--help", env=WIDE).stdout
        assert "whose [bands] replace" in out
        assert "\\[" not in out


@pytest.mark.parametrize(
    "text", ["[bands]", "a [b] c", "[/]", "[#fff]", "[@click]", "\\[x]", "\\\\[x]", "ends \\", "[A] [1] [ x]", ""]
)
def test_escape_is_richs_and_prints_the_text(text: str) -> None:
    if not text.endswith("\\"):  # rich doubles a trailing backslash, for text joined to more markup
        assert escape_markup(text) == rich.markup.escape(text)
    assert rich.markup.render(escape_markup(text)).plain == text


def _docs_exit_codes() -> set[int]:
    section = DOCS.read_text(encoding="utf-8").split("## Exit codes", 1)[1].split("\n\n", 2)[1]
    return {int(m) for m in re.findall(r"^\| (\d+) \|", section, re.MULTILINE)}


def _listed_exit_codes(help_text: str) -> set[int] | None:
    """The codes a help's "Exit code: ..." sentence names (it runs to the end of its paragraph), None without one."""
    match = re.search(r"Exit codes?:?(.*?)(?:\n\s*\n|$)", inspect.cleandoc(help_text), re.DOTALL)
    if match is None:
        return None
    return {int(code) for code in re.findall(r"(?<![\w.-])(\d{1,3})(?![\w.])", match.group(1))}


# Answer from their arguments alone (plan) or report what the ledger holds (history): nothing is a failure (exit 1).
NO_FAIL_CODE = {"plan", "history add", "history show"}


def test_help_lists_the_documented_exit_codes() -> None:
    documented = _docs_exit_codes()
    assert documented == {0, 1, 2, 3, 130, 143}
    listed = {" ".join(s.argv): _listed_exit_codes(s.help) for s in SCREENS}
    with_codes = {name: codes for name, codes in listed.items() if codes is not None}
    assert {"doctor", "verify", "fleet", "plan", "nccl-log", "power plan"} <= set(with_codes)
    for name, codes in with_codes.items():
        expected = documented - {1} if name in NO_FAIL_CODE else documented
        assert codes == expected, name


def test_verify_help_says_exit_3(rigcheck: Rigcheck) -> None:
    assert "3 internal error" in words(rigcheck("verify", "--help", env=WIDE).stdout)

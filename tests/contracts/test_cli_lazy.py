"""The lazy command table (rigcheck.cli.app): what --help lists without importing a command is what the
commands themselves say, and the version written out in the package is the one pyproject.toml declares."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest
import typer.main

import rigcheck
from rigcheck.cli import group_help
from rigcheck.cli.app import RigcheckGroup, app
from rigcheck.cli.lazy import LazyCommand, LazyGroup
from rigcheck.cli.power import PowerGroup, power_app
from tests.support.cli import Rigcheck

PYPROJECT = Path(__file__).resolve().parent.parent.parent / "pyproject.toml"

TABLES: list[tuple[str, LazyCommand]] = [
    *((f"rigcheck {entry.name}", entry) for entry in RigcheckGroup.table),
    *((f"rigcheck power {entry.name}", entry) for entry in PowerGroup.table),
]


def listed_text(help_text: str) -> str:
    """What a command listing shows of a help text: its first paragraph on one line (typer's rule)."""
    return " ".join(inspect.cleandoc(help_text).split("\n\n")[0].split())


@pytest.mark.parametrize(("command", "entry"), TABLES, ids=[name for name, _ in TABLES])
def test_table_line_is_the_commands_own_help(command: str, entry: LazyCommand) -> None:
    """The table holds a copy of each command's first help line (so --help imports no command); it must
    stay the command's own words."""
    real = entry.load()
    assert real.name == entry.name
    assert listed_text(real.short_help or real.help or "") == entry.help, command


def test_help_lists_the_table_in_order(rigcheck: Rigcheck) -> None:
    result = rigcheck("--help")
    assert result.code == 0
    out = result.stdout
    names = [entry.name for entry in RigcheckGroup.table]
    listed = [m.group(1) for m in re.finditer(r"^│ (\S+) {2,}", out.split("Commands")[1], re.MULTILINE)]
    assert listed == names
    assert names == [
        "doctor",
        "verify",
        "fleet",
        "history",
        "topo",
        "snapshot",
        "plan",
        "nccl-log",
        "monitor",
        "burn",
        "thermal",
        "power",
        "bench",
    ]


def test_resolving_a_command_swaps_in_the_real_one() -> None:
    group = typer.main.get_command(app)
    assert isinstance(group, LazyGroup)
    ctx = group.make_context("rigcheck", ["doctor"], resilient_parsing=True)
    listed = group.get_command(ctx, "doctor")
    assert listed is not None
    assert not listed.params  # the stand-in: a name and a line, no options
    name, real, rest = group.resolve_command(ctx, ["doctor", "--json"])
    assert (name, rest) == ("doctor", ["--json"])
    assert real is not None
    assert {p.name for p in real.params} >= {"source", "as_json", "strict"}
    assert group.get_command(ctx, "doctor") is real  # loaded once


def test_unknown_command_is_a_usage_error_with_a_suggestion(rigcheck: Rigcheck) -> None:
    result = rigcheck("doctr")
    assert result.code == 2
    assert "Did you mean 'doctor'?" in result.stderr


@pytest.mark.parametrize(
    ("argv", "expected"),
    [(["power", "--help"], "plan"), (["bench", "--help"], "allreduce"), (["power", "plan", "--help"], "--psu-watts")],
)
def test_groups_list_their_commands(argv: list[str], expected: str, rigcheck: Rigcheck) -> None:
    result = rigcheck(*argv)
    assert result.code == 0
    assert expected in result.stdout


@pytest.mark.parametrize("columns", [50, 80, 120, 200])
@pytest.mark.parametrize("color", [False, True], ids=["plain", "color"])
def test_group_help_is_drawn_as_typer_draws_it(
    columns: int, color: bool, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`rigcheck --help` skips typer.rich_utils (cli/group_help.py); what it prints must be typer's screen,
    byte for byte, ANSI colours included."""
    from typer import rich_utils

    monkeypatch.setenv("COLUMNS", str(columns))
    if color:
        monkeypatch.setenv("FORCE_COLOR", "1")
    else:
        monkeypatch.delenv("FORCE_COLOR", raising=False)
    group = typer.main.get_command(app)
    assert isinstance(group, LazyGroup)
    ctx = group.make_context("rigcheck", [], resilient_parsing=True)
    assert group_help.can_draw(group, ctx)
    group_help.draw(group, ctx)
    ours = capsys.readouterr().out
    rich_utils.rich_format_help(obj=group, ctx=ctx, markup_mode="rich")
    typers = capsys.readouterr().out
    assert ("\x1b[" in ours) is color  # the colour switch took
    assert "nccl-log" in ours
    assert ours == typers


def test_group_help_leaves_value_options_to_typer() -> None:
    """`power` takes --from <path>: a screen group_help does not draw."""
    group = typer.main.get_group(power_app)
    ctx = group.make_context("power", [], resilient_parsing=True)
    assert not group_help.can_draw(group, ctx)


def test_group_help_draws_with_a_typer_that_has_no_type_labels(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """typer 0.20-0.28 (which pyproject admits) have no ``TyperOption.display_type_rich``: `rigcheck --help`
    exited 3 with an AttributeError there; it must draw the same screen."""
    from typer.core import TyperOption

    group = typer.main.get_command(app)
    assert isinstance(group, LazyGroup)
    ctx = group.make_context("rigcheck", [], resilient_parsing=True)
    group_help.draw(group, ctx)
    with_labels = capsys.readouterr().out
    for cls in TyperOption.__mro__:  # typer 0.29 defines it on a base of TyperOption
        if "display_type_rich" in vars(cls):
            monkeypatch.delattr(cls, "display_type_rich")
    assert not any(hasattr(p, "display_type_rich") for p in group.get_params(ctx))
    assert group_help.can_draw(group, ctx)
    group_help.draw(group, ctx)
    assert capsys.readouterr().out == with_labels


def test_version_literal_matches_pyproject() -> None:
    declared = re.search(r'^version = "([^"]+)"', PYPROJECT.read_text(encoding="utf-8"), re.MULTILINE)
    assert declared is not None
    assert rigcheck.__version__ == declared.group(1)

"""`--json` is compact for a program (a pipe, a file) and indented for a person (a terminal, or `--indent N`): the
same document either way; and pydantic's plugin scan is off only while a command runs."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from rigcheck.cli.common import json_indent
from rigcheck.report.render import PRETTY_INDENT, dumps
from tests.support.cli import Rigcheck

SNAPSHOT = Path(__file__).resolve().parent.parent / "fixtures" / "snapshots" / "healthy-8x-h100.json"


@pytest.mark.parametrize("command", ["doctor", "topo"])
def test_json_is_compact_in_a_pipe_and_indented_with_indent(rigcheck: Rigcheck, command: str) -> None:
    compact = rigcheck(command, "--from", SNAPSHOT, "--json")
    pretty = rigcheck(command, "--from", SNAPSHOT, "--json", "--indent", "2")
    assert compact.stdout.count("\n") == 1  # one line and its newline
    assert compact.stdout.endswith("}\n")
    assert compact.stdout == dumps(compact.json, None)  # no space after a separator
    assert pretty.stdout.startswith('{\n  "')
    assert compact.json == pretty.json
    assert compact.code == pretty.code


def test_indent_takes_no_negative_number(rigcheck: Rigcheck) -> None:
    assert "--indent" in rigcheck("doctor", "--from", SNAPSHOT, "--json", "--indent", "-1").error()


def test_a_terminal_gets_indented_json(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    assert json_indent() == PRETTY_INDENT
    assert json_indent(4) == 4
    monkeypatch.setattr(sys.stdout, "isatty", lambda: False)
    assert json_indent() is None
    assert json_indent(0) == 0


def test_dumps_compact_and_indented_hold_the_same_data() -> None:
    data = {"gpu": "H100 — SXM", "pairs": [[0, 1], [0, 2]]}
    assert dumps(data, None) == '{"gpu":"H100 — SXM","pairs":[[0,1],[0,2]]}\n'
    assert dumps(data).startswith('{\n  "gpu": "H100 — SXM"')


def test_pydantic_plugins_are_off_only_while_a_command_runs(
    rigcheck: Rigcheck, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PYDANTIC_DISABLE_PLUGINS", raising=False)
    seen: list[str | None] = []
    import rigcheck.cli.doctor as doctor_cli

    real = doctor_cli.run_checks

    def spy(*args: object, **kwargs: object) -> object:
        seen.append(os.environ.get("PYDANTIC_DISABLE_PLUGINS"))
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(doctor_cli, "run_checks", spy)
    rigcheck("doctor", "--from", SNAPSHOT, "--json")
    assert seen == ["__all__"]
    assert "PYDANTIC_DISABLE_PLUGINS" not in os.environ
    monkeypatch.setenv("PYDANTIC_DISABLE_PLUGINS", "some-plugin")  # the user's own setting is kept
    rigcheck("doctor", "--from", SNAPSHOT, "--json")
    assert seen[-1] == "some-plugin"
    assert os.environ["PYDANTIC_DISABLE_PLUGINS"] == "some-plugin"

"""Running `rigcheck` in this process, through the real entry point (rigcheck.cli.app.main): its exit codes, its
one-line errors and its ASCII fallback are the ones a user gets. The `rigcheck` fixture in tests/conftest.py hands a
test a `Rigcheck`; tests of the console script itself run it as a process (tests/cli/test_cli_conventions.py)."""

from __future__ import annotations

import io
import json
import os
import sys
from collections.abc import Mapping
from typing import Any, NamedTuple, Protocol

import pytest

Arg = str | os.PathLike[str]


class Result(NamedTuple):
    """One run: the exit code, what it wrote to stdout and stderr; ``code, out, err = result`` unpacks it."""

    code: int
    stdout: str
    stderr: str

    @property
    def json(self) -> Any:
        """stdout parsed as JSON; a run that printed something else fails the test, showing what it printed."""
        try:
            return json.loads(self.stdout)
        except json.JSONDecodeError as exc:
            raise AssertionError(
                f"stdout is not JSON ({exc}); exit {self.code}\n"
                f"stdout: {self.stdout[:2000]!r}\nstderr: {self.stderr[-2000:]!r}"
            ) from None

    def error(self, code: int = 2) -> str:
        """The message of a refusal: exit ``code`` (2: usage or input), nothing on stdout, one line on stderr
        (``rigcheck: error: MESSAGE``, no traceback). What it says is left to the test."""
        assert (self.code, self.stdout) == (code, ""), f"exit {self.code}: {self.stderr[-2000:]}"
        lines = self.stderr.splitlines()
        assert len(lines) == 1, self.stderr[-2000:]
        assert lines[0].startswith("rigcheck: error: "), lines[0]
        return lines[0].removeprefix("rigcheck: error: ")


class Rigcheck(Protocol):
    """The fixture: ``rigcheck("doctor", "--from", path, "--json")``."""

    def __call__(
        self, *argv: Arg, stdin: str | bytes | None = None, env: Mapping[str, str | None] | None = None
    ) -> Result: ...


def run_main(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    argv: tuple[Arg, ...],
    *,
    stdin: str | bytes | None = None,
    env: Mapping[str, str | None] | None = None,
) -> Result:
    """``rigcheck ARGV`` through main: stdin fed from ``stdin`` (when given), ``env`` set (None: unset) for the run
    only. main always ends in SystemExit; a return without one is a failure."""
    from rigcheck.cli.app import main  # here: a test session that runs no command does not load the CLI

    capsys.readouterr()  # what the test printed before is not this run's
    with monkeypatch.context() as patch:
        for name, value in (env or {}).items():
            if value is None:
                patch.delenv(name, raising=False)
            else:
                patch.setenv(name, value)
        if stdin is not None:
            data = stdin.encode() if isinstance(stdin, str) else stdin
            patch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))
        with pytest.raises(SystemExit) as ended:
            main([os.fspath(a) for a in argv])
    out, err = capsys.readouterr()
    code = ended.value.code
    if code is None:
        code = 0
    assert isinstance(code, int), f"main exited with {code!r}, not an exit code"
    return Result(code, out, err)

"""verify, fleet, topo and plan as a person reads them, the way doctor's report is held (test_doctor_layout.py):
a pipe gets whole lines, a terminal wraps prose under its bullet with commands and web addresses whole, and a
narrow table leaves columns out (and says so) instead of cutting a cell in two."""

from __future__ import annotations

import re

import pytest
from rich.text import Text

from rigcheck.report.common import wrapped
from tests.golden.cases import _ESCAPES
from tests.support.cli import Rigcheck

FIX = "tests/fixtures"
COMMANDS = {
    "verify": ("verify", "--from", f"{FIX}/verify/h100x8-gpu3-slow"),
    "fleet": ("fleet", "--from", f"{FIX}/fleet/4-nodes"),
    "topo": ("topo", "--from", f"{FIX}/snapshots/healthy-8x-h100.json"),
    "plan": ("plan", "--params", "124M", "--gpus", "2", "--link", "NV2", "--model", "TITAN RTX"),
}
URL = re.compile(r"https?://\S+")
FINDING_ID = re.compile(r"  \[[\w.-]+\]$")  # a finding line ends in its id, two spaces before it


def _prose(line: str) -> bool:
    """A line of prose, not a table row (whose cells are two spaces apart)."""
    return "  " not in FINDING_ID.sub("", re.sub(r"^(FAIL|WARN|INFO|UNKNOWN) +", "", line)).strip()


def _on_a_terminal(rigcheck: Rigcheck, argv: tuple[str, ...], width: int) -> list[str]:
    out = rigcheck(*argv, env={"COLUMNS": str(width), "FORCE_COLOR": "1", "TTY_COMPATIBLE": None}).stdout
    return _ESCAPES.sub("", out).splitlines()


def _piped(rigcheck: Rigcheck, argv: tuple[str, ...], width: int) -> list[str]:
    return rigcheck(*argv, env={"COLUMNS": str(width), "FORCE_COLOR": None, "TTY_COMPATIBLE": None}).stdout.splitlines()


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_pipe_gets_whole_lines(rigcheck: Rigcheck, command: str) -> None:
    """At COLUMNS=60 a pipe still gets each sentence on one line: every line of the 200-column rendering that is
    prose (not a table row) is a line of the 60-column one too."""
    narrow, wide = _piped(rigcheck, COMMANDS[command], 60), _piped(rigcheck, COMMANDS[command], 200)
    prose = [line for line in wide if len(line.rstrip()) > 60 and _prose(line)]
    assert prose, "no line longer than 60 columns to hold whole"
    for line in prose:
        assert line in narrow, line
    assert all(line.count("`") % 2 == 0 for line in narrow), "a `command` split across lines"


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("width", [60, 80])
def test_a_terminal_wraps_under_the_bullet(rigcheck: Rigcheck, command: str, width: int) -> None:
    lines = _on_a_terminal(rigcheck, COMMANDS[command], width)
    too_wide = [line for line in lines if len(line) > width]
    assert all(URL.search(line) for line in too_wide), too_wide  # only a web address may run past the edge
    assert all(line.count("`") % 2 == 0 for line in lines), "a `command` split across lines"
    # Each sentence longer than the width goes on under its text: the lines after its first are indented.
    wrapped_prose = 0
    for sentence in (s for s in _piped(rigcheck, COMMANDS[command], 400) if len(s.rstrip()) > width and _prose(s)):
        first = next(i for i, line in enumerate(lines) if sentence.startswith(line.rstrip()) and line.strip())
        rest = sentence[len(lines[first].rstrip()) :].split()
        assert rest, sentence
        assert lines[first + 1].startswith("  "), (sentence, lines[first : first + 2])
        assert lines[first + 1].split()[0] == rest[0]
        wrapped_prose += 1
    assert wrapped_prose


def test_the_verify_table_leaves_columns_out_at_60_rather_than_cut_a_cell(rigcheck: Rigcheck) -> None:
    lines = _on_a_terminal(rigcheck, COMMANDS["verify"], 60)
    header = next(line for line in lines if line.startswith("GPU ") and "verdict" in line)
    assert header.split() == ["GPU", "check", "verdict", "figure", "floor"]
    assert "(left out at this width: margin, peer best, baseline, src)" in lines
    gpu3 = next(line for line in lines if line.startswith("GPU3") and "matmul_bf16" in line)
    assert gpu3.split() == ["GPU3", "matmul_bf16", "fail", "616", "TFLOPS", "712"]  # whole cells, one line
    wide = _on_a_terminal(rigcheck, COMMANDS["verify"], 160)
    assert not any(line.startswith("(left out") for line in wide)
    assert next(line for line in wide if line.startswith("GPU ") and "verdict" in line).split()[-1] == "src"


def test_the_run_check_names_its_steps_once(rigcheck: Rigcheck) -> None:
    """The run check's line names the steps that did not finish; each one's reason is said once, on its own line."""
    out = "\n".join(_piped(rigcheck, COMMANDS["verify"], 400))
    assert "node run incomplete: stages not run, or not to their end: hostlink, p2p, allreduce, burn skipped" in out
    assert out.count("no hostlink document in the directory") == 1
    detail = rigcheck(*COMMANDS["verify"], "--json").json["node"]
    run = next(c for c in detail if c["id"] == "run")
    assert "no hostlink document in the directory" in run["detail"]  # the JSON keeps the whole detail


def test_fleet_findings_are_lines_not_a_folded_table(rigcheck: Rigcheck) -> None:
    lines = _on_a_terminal(rigcheck, COMMANDS["fleet"], 60)
    first = next(i for i, line in enumerate(lines) if line.startswith("FAIL    node03"))
    assert lines[first + 1].startswith(" " * 8)
    assert "[fleet.driver]" in lines[first + 1]
    assert (
        "node03: driver 550.54.15, where 3 of 4 nodes have 550.90.07  [fleet.driver]"
        in _piped(rigcheck, COMMANDS["fleet"], 60)[3]
    )


def test_a_web_address_is_never_cut() -> None:
    url = "https://example.org/" + "a" * 70
    text = Text(f"Bus bandwidth: 50 GB/s (a source, {url}) and the rest of it")
    lines = [line.plain for line in wrapped(text, 60, 2)]
    assert any(line.strip() == f"{url})" for line in lines), lines
    assert all(len(line) <= 60 for line in lines if url not in line)
    assert " ".join(line.strip() for line in lines) == text.plain
    word = "x" * 70  # a run that is no address is still folded at the width
    assert all(len(line.plain) <= 60 for line in wrapped(Text(f"a {word} b"), 60, 2))


def test_a_command_wider_than_a_line_breaks_between_its_words() -> None:
    command = "`rigcheck plan --params N --gpus G --link NV4 --model NAME`"
    text = Text(f"INFO    3 pairs     the path sets the pace ({command} times a step)")
    lines = [line.plain for line in wrapped(text, 60, 10)]
    printed = {word for line in lines for word in line.split()}
    assert {"--model", "NAME`", "--params"} <= printed  # each word of the command whole: never `--m` and `odel`
    assert len(lines) == 3
    assert " ".join(line.strip() for line in lines) == text.plain
    assert all(len(line) <= 60 for line in lines)

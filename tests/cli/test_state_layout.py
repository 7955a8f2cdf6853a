"""`rigcheck power` and `rigcheck thermal` as a person reads them: the verdict first, each advice sentence once with
the GPUs it is for, on a terminal every further line of a finding indented under its bullet and no `command` split,
in a pipe every line whole, and a narrow table that leaves columns out rather than cutting a cell."""

from __future__ import annotations

import re

import pytest

from rigcheck.report.advice import sentences
from tests.support.cli import Rigcheck

THROTTLING = "tests/fixtures/snapshots/2x-3090-phb-throttling.json"
COMMANDS = ("power", "thermal")
SEVERITY_WORDS = ("FAIL", "WARN", "UNKNOWN", "INFO")
BULLET = "        → "
# Colour and style (SGR), any other control sequence, and an OSC string such as a hyperlink.
_ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")
# The GPUs of an nvidia-smi command: one per finding in the JSON, their comma list where the report says it once.
_SMI_GPUS = re.compile(r"nvidia-smi -i [\d,]+")


def _report(rigcheck: Rigcheck, command: str, columns: str, *, tty: bool, source: str = THROTTLING) -> str:
    """The report at ``columns``, on a terminal (FORCE_COLOR=1, as rich reads it; escapes taken off) or piped."""
    env = {"COLUMNS": columns, "FORCE_COLOR": "1" if tty else None, "TTY_COMPATIBLE": None}
    result = rigcheck(command, "--from", source, env=env)
    assert result.code in (0, 1), result.stderr
    return _ESCAPES.sub("", result.stdout)


def _advice_sentences(out: str) -> list[str]:
    """The sentences of every advice line (``→ ...``, a ``GPU 0, 1:`` scope taken off), as printed."""
    lines = [line.split("→ ", 1)[1] for line in out.splitlines() if line.startswith(BULLET)]
    return [s for line in lines for s in sentences(re.sub(r"^GPU [\d, ]+: ", "", line))]


@pytest.mark.parametrize("columns", ["60", "160"])
@pytest.mark.parametrize("command", COMMANDS)
def test_no_advice_sentence_is_printed_twice(rigcheck: Rigcheck, command: str, columns: str) -> None:
    out = _report(rigcheck, command, columns, tty=False)
    printed = _advice_sentences(out)
    assert len(printed) >= 4
    assert len(printed) == len(set(printed)), [s for s in printed if printed.count(s) > 1]
    # Nothing lost: every sentence of every finding's advice in the JSON is printed (its GPU in a comma list).
    doc = rigcheck(command, "--from", THROTTLING, "--json").json
    given = {_SMI_GPUS.sub("nvidia-smi -i N", s) for f in doc["findings"] for s in sentences(f["advice"] or "")}
    assert {_SMI_GPUS.sub("nvidia-smi -i N", s) for s in printed} == given


def test_thermal_says_the_cooling_paragraph_once_for_both_gpus(rigcheck: Rigcheck) -> None:
    out = _report(rigcheck, "thermal", "160", tty=False)
    assert out.count("improve airflow") == 1  # five findings on two GPUs give it
    airflow = next(line for line in out.splitlines() if "improve airflow" in line)
    assert airflow.startswith(f"{BULLET}GPU 0, 1: improve airflow: ")  # GPU0 throttles, GPU1 runs warm


def test_power_says_each_limit_command_once_for_both_gpus(rigcheck: Rigcheck) -> None:
    out = _report(rigcheck, "power", "160", tty=False)
    assert "`sudo nvidia-smi -i 0,1 -pl 350`" in out
    assert "`sudo nvidia-smi -i 0,1 -pl WATTS`" in out
    assert "nvidia-smi -i 0 " not in out
    assert "nvidia-smi -i 1 " not in out
    assert out.count("power limit 280 W is 20% below the default 350 W") == 1
    limit = next(line for line in out.splitlines() if "[power.limit-below-default]" in line)
    assert limit.split()[1:3] == ["2", "GPUs"]
    assert "GPU0, GPU1" in limit


def _finding_lines(lines: list[str]) -> dict[str, int]:
    return {w.lower(): sum(1 for line in lines if line.startswith(w + " ")) for w in SEVERITY_WORDS}


@pytest.mark.parametrize(("command", "word", "code"), [("power", "WARN", 0), ("thermal", "FAIL", 1)])
def test_the_verdict_comes_first_with_the_counts_printed(
    rigcheck: Rigcheck, command: str, word: str, code: int
) -> None:
    lines = _report(rigcheck, command, "160", tty=False).splitlines()
    assert lines[0].startswith(f"rigcheck {command}: {word}, exit {code} — ")
    said = ", ".join(f"{n} {sev}" for sev, n in _finding_lines(lines).items() if n)
    assert f": {said}" in lines[0]
    assert lines[-1].startswith("Result: ")  # the last line, for scripts
    assert f"({said})" in lines[-1]
    first_finding = next(i for i, line in enumerate(lines) if line.startswith(SEVERITY_WORDS))
    table = next(i for i, line in enumerate(lines) if line.startswith("GPU  "))
    assert first_finding < table  # what is wrong before the figures


def test_power_counts_the_lines_it_prints_and_says_why_they_differ(rigcheck: Rigcheck) -> None:
    head = _report(rigcheck, "power", "160", tty=False).splitlines()[0]
    # 4 warn and 2 info findings; the limit below the default is one line for both GPUs.
    assert head == (
        "rigcheck power: WARN, exit 0 — warnings to look at: 3 warn, 2 info; 6 findings in 5 lines "
        "(a finding about several GPUs or pairs is one line)"
    )


def test_passed_checks_alone_are_healthy(rigcheck: Rigcheck) -> None:
    lines = _report(rigcheck, "thermal", "160", tty=False, source="tests/fixtures/snapshots/healthy-8x-h100.json")
    lines = lines.splitlines()
    assert lines[0] == "rigcheck thermal: PASS, exit 0 — healthy: no problems; 8 checks passed"
    assert lines[-1] == "Result: healthy (no problems) — exit 0"


# Where each kind of line starts, the indent its further lines have on a terminal.
_INDENTS = {
    "rigcheck ": 2,
    **dict.fromkeys(SEVERITY_WORDS, 20),
    BULLET: len(BULLET),
    "OK ": 8,
    "(left out": 1,
    "guide: ": 7,
    "Result: ": 8,
}


@pytest.mark.parametrize("command", COMMANDS)
def test_a_narrow_terminal_wraps_under_the_bullet_and_keeps_commands_whole(rigcheck: Rigcheck, command: str) -> None:
    lines = _report(rigcheck, command, "60", tty=True).splitlines()
    assert max(len(line) for line in lines) <= 60
    assert all(line.count("`") % 2 == 0 for line in lines), "a `command` split across lines"
    indent, further = 0, 0
    for line in lines:
        start = next((s for s in _INDENTS if line.startswith(s)), None)
        if start is not None:
            indent = _INDENTS[start]
        elif line.startswith(" "):
            further += 1
            assert indent, line
            assert line.startswith(" " * indent), line
        else:
            indent = 0  # a table row, a note: a line of its own
    assert further >= 10  # the findings did wrap at 60 columns


@pytest.mark.parametrize("columns", ["60", "160"])
@pytest.mark.parametrize("command", COMMANDS)
def test_a_pipe_gets_whole_lines(rigcheck: Rigcheck, command: str, columns: str) -> None:
    lines = _report(rigcheck, command, columns, tty=False).splitlines()
    assert all(line.startswith(BULLET) for line in lines if line.startswith(" ")), "a line broken in a pipe"
    doc = rigcheck(command, "--from", THROTTLING, "--json").json
    for finding in doc["findings"]:
        if finding["severity"] != "ok":
            assert any(finding["message"] in line for line in lines), finding["message"]


@pytest.mark.parametrize(("command", "events"), [("power", "sw_power_cap"), ("thermal", "sw_thermal_slowdown")])
def test_a_narrow_table_leaves_out_columns_not_the_events(rigcheck: Rigcheck, command: str, events: str) -> None:
    narrow = _report(rigcheck, command, "60", tty=True)
    assert "…" not in narrow
    lines = narrow.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("GPU  "))
    assert lines[header].rstrip().endswith("active events")
    assert "name" not in lines[header]
    assert lines[header + 1].startswith("0 ")
    assert lines[header + 1].rstrip().endswith(f"  {events}")
    assert "(left out at this width: name" in narrow
    wide = _report(rigcheck, command, "160", tty=True)
    assert "(left out" not in wide
    assert "NVIDIA GeForce RTX 3090" in wide

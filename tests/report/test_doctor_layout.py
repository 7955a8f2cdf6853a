"""The doctor terminal report as a person reads it: each advice sentence once, naming the GPUs it is for."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rigcheck.checks.verdicts import NODE_RULES
from rigcheck.report.advice import sentences
from tests.support.cli import Rigcheck

THROTTLING = "tests/fixtures/snapshots/2x-3090-phb-throttling.json"


def _advice(text: str) -> list[str]:
    """The advice lines' text (``→ ...``, with a ``GPU 0, 1:`` scope taken off), joined across wrapped lines."""
    return [re.sub(r"^GPU [\d, ]+: ", "", line.split("→ ", 1)[1]) for line in text.splitlines() if "→ " in line]


def test_no_advice_sentence_is_printed_twice(rigcheck: Rigcheck) -> None:
    out = rigcheck("doctor", "--from", THROTTLING, env={"COLUMNS": "400"}).stdout
    printed = [s for line in _advice(out) for s in sentences(line)]
    assert len(printed) > 10
    assert len(printed) == len(set(printed)), [s for s in printed if printed.count(s) > 1]
    assert out.count("improve airflow") == 1
    assert out.count("power limit 280 W is 20% below the default 350 W") == 1


def test_a_shared_sentence_names_its_gpus(rigcheck: Rigcheck) -> None:
    out = rigcheck("doctor", "--from", THROTTLING, env={"COLUMNS": "400"}).stdout
    lines = out.splitlines()
    airflow = next(line for line in lines if "improve airflow" in line)
    assert airflow.strip().startswith("→ GPU 0, 1: improve airflow")  # GPU0 throttles, GPU1 runs warm
    assert "`sudo nvidia-smi -i 0,1 -pl 350`" in out  # one command for both capped GPUs
    assert "`sudo nvidia-smi -i 0,1 -pl WATTS`" in out
    limit = next(line for line in lines if "[power.limit-below-default]" in line)
    assert limit.split()[1:3] == ["2", "GPUs"]
    assert "GPU0, GPU1" in limit


def test_sentences_keep_the_cooling_paragraph_and_commands_whole() -> None:
    from rigcheck.checks.doctor.thermal import COOLING_ADVICE

    said = sentences(f"expect reduced clocks; {COOLING_ADVICE}. run `a; b. c` to see; e.g. this")
    assert said == ["expect reduced clocks", COOLING_ADVICE, "run `a; b. c` to see", "e.g. this"]


SEVERITY_WORDS = ("FAIL", "WARN", "UNKNOWN", "INFO")
# The words of the verdict contract (docs/verdicts.md): a node's verdicts, and doctor's WARN.
VERDICT_WORDS = {v.upper() for v in NODE_RULES} | {"WARN"}
GPU_LOST = "tests/fixtures/snapshots/gpu-lost.json"


def _printed(out: str) -> dict[str, int]:
    """Finding lines per severity as printed (a line starts with its severity word)."""
    lines = out.splitlines()[1:]
    return {w.lower(): sum(1 for line in lines if line.startswith(w + " ")) for w in SEVERITY_WORDS}


@pytest.mark.parametrize(
    ("snapshot", "word"),
    [(THROTTLING, "FAIL"), (GPU_LOST, "FAIL"), ("tests/fixtures/snapshots/healthy-8x-h100.json", "PASS")],
)
def test_the_verdict_comes_first_with_the_counts_printed(rigcheck: Rigcheck, snapshot: str, word: str) -> None:
    out = rigcheck("doctor", "--from", snapshot, env={"COLUMNS": "400"}).stdout
    lines = out.splitlines()
    assert lines[0].split()[:3] == ["rigcheck", "doctor:", f"{word},"]
    assert word in VERDICT_WORDS
    printed = {sev: n for sev, n in _printed(out).items() if n}
    said = ", ".join(f"{n} {sev}" for sev, n in printed.items())
    assert f": {said};" in lines[0]
    assert sum(_printed(lines[0]).values()) == 0  # the verdict is no finding line
    assert lines[-1].startswith("Result: ")  # the last line, for scripts
    assert f"({said})" in lines[-1]
    # What failed comes before the inventory: the first finding before the host and the GPU table.
    first_finding = next(i for i, line in enumerate(lines) if line.startswith(SEVERITY_WORDS))
    assert first_finding < next(i for i, line in enumerate(lines) if line.startswith("host: "))
    assert first_finding < next(i for i, line in enumerate(lines) if line.startswith("GPU  "))


def test_grouped_findings_are_counted_as_lines_and_said(rigcheck: Rigcheck) -> None:
    out = rigcheck("doctor", "--from", "tests/fixtures/snapshots/healthy-8x-h100.json", env={"COLUMNS": "400"}).stdout
    head = out.splitlines()[0]
    assert head.startswith("rigcheck doctor: PASS, exit 0 — healthy: 4 info; 31 findings in 4 lines")
    assert "42 checks passed" in head
    assert out.splitlines()[-1] == "Result: healthy (4 info) — exit 0"


def test_folded_unknowns_are_said_with_how_to_list_them(rigcheck: Rigcheck) -> None:
    out = rigcheck("doctor", "--from", "tests/fixtures/corpus/smi/002-2x2080ti-550.txt", env={"COLUMNS": "400"}).stdout
    head = out.splitlines()[0]
    assert head.startswith("rigcheck doctor: INCOMPLETE, exit 0 — ")
    folded = re.search(r"(\d+) unknown folded into (\d+) lines under NOT IN INPUT \(--show-unknown lists them\)", head)
    assert folded is not None
    assert f"{folded.group(1)} of the " in out  # the NOT IN INPUT heading counts the same findings


def _on_a_terminal(snapshot: str, width: int) -> list[str]:
    from rich.console import Console

    from rigcheck.checks.doctor import run_checks
    from rigcheck.cli.exits import exit_code_for
    from rigcheck.model.doctor import doctor_document
    from rigcheck.readers.from_file import load_file
    from rigcheck.report.doctor import doctor_terminal

    snap = load_file(Path(snapshot))
    findings = run_checks(snap)
    doc = doctor_document(snap, findings, exit_code=exit_code_for(findings), strict=False)
    console = Console(force_terminal=True, color_system=None, width=width, markup=False, highlight=False)
    with console.capture() as captured:
        console.print(doctor_terminal(doc))
    return captured.get().splitlines()


@pytest.mark.parametrize("width", [60, 80, 120])
def test_a_terminal_wraps_under_the_bullet_and_keeps_commands_whole(width: int) -> None:
    lines = _on_a_terminal(THROTTLING, width)
    assert max(len(line) for line in lines) <= width
    lines = lines[: lines.index("GPU topology (nvidia-smi topo -m)")]  # the topology's legend is report/topo.py's
    assert all(line.count("`") % 2 == 0 for line in lines), "a `command` split across lines"
    findings = [i for i, line in enumerate(lines) if line.startswith(SEVERITY_WORDS)]
    assert len(findings) == 18
    for i in findings:  # a finding's further lines start under its message, its advice under the arrow
        for line in lines[i + 1 : i + 4]:
            if line.startswith((*SEVERITY_WORDS, "OK ")) or not line.strip():
                break
            assert line.startswith((" " * 20, "        → ", " " * 10)), line
    assert not any(line.startswith(("-", ",", ")")) for line in lines)


def test_a_narrow_terminal_leaves_out_columns_not_the_clock_events() -> None:
    lines = _on_a_terminal(THROTTLING, 60)
    assert "sw_power_cap, sw_thermal_slowdown" in "\n".join(lines)
    assert not any("…" in line for line in lines)
    header = next(line for line in lines if line.startswith("GPU  "))
    assert header.split("  ")[0] == "GPU"
    assert "clock events" in header
    assert "name" not in header  # the first column to go: the GPUs: line names the model
    assert any(line.startswith("(left out at this width: name") for line in lines)
    wide = _on_a_terminal(THROTTLING, 160)
    assert not any(line.startswith("(left out") for line in wide)


@pytest.mark.parametrize("columns", [None, "60"])
def test_a_pipe_gets_whole_lines(rigcheck: Rigcheck, columns: str | None) -> None:
    out = rigcheck("doctor", "--from", THROTTLING, env={"COLUMNS": columns}).stdout
    doc = rigcheck("doctor", "--from", THROTTLING, "--json").json
    lines = out.splitlines()
    assert "5 checks passed" in lines[0]
    for finding in doc["findings"]:
        if finding["severity"] != "ok":
            assert any(finding["message"] in line for line in lines), finding["message"]
    assert any("GPU 0, 1: improve airflow: " in line and line.endswith("(the guide)") for line in lines)
    assert "sw_power_cap, sw_thermal_slowdown" in out


def test_wrapping_breaks_between_words_outside_commands() -> None:
    from rich.text import Text

    from rigcheck.report.common import wrapped

    text = Text(
        "WARN    GPU0        restore it: `sudo nvidia-smi -i 0,1 -pl 350` now, then `rigcheck burn --analyze FILE`"
    )
    for width in (60, 70, 80):  # each command fits a line after the indent
        lines = [line.plain for line in wrapped(text, width, 20)]
        assert all(len(line) <= width for line in lines)
        assert all(line.startswith(" " * 20) for line in lines[1:])
        assert " ".join(line.strip() for line in lines).endswith("`rigcheck burn --analyze FILE`")
        assert all(line.count("`") % 2 == 0 for line in lines)

"""The doctor terminal report as a person reads it: each advice sentence once, naming the GPUs it is for."""

from __future__ import annotations

import re

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

"""readers/reference/gpu_burn.py: gpu-burn's output read (tests/fixtures/gpu-burn) and judged by `rigcheck burn
--analyze`:
a FAULTY or dead GPU fails, a run without wrong results passes, the thermal verdict as for any trace."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rigcheck.errors import ParseError
from rigcheck.readers.reference.gpu_burn import is_faulty, looks_like_gpu_burn, parse_gpu_burn, trace_of
from tests.support.cli import Rigcheck

FIXTURES = Path(__file__).parent.parent / "fixtures" / "gpu-burn"


def _parse(name: str) -> Any:
    path = FIXTURES / name
    return parse_gpu_burn(path.read_text(), str(path))


def _analyze(rigcheck: Rigcheck, name: str) -> tuple[int, dict[str, Any]]:
    code, out, _ = rigcheck("burn", "--analyze", str(FIXTURES / name), "--json")
    return code, json.loads(out)


def test_progress_lines_per_gpu() -> None:
    burn = _parse("2x1080-water-no-errors-cut-issue48.txt")
    assert burn.names == {0: "NVIDIA GeForce GTX 1080", 1: "NVIDIA GeForce GTX 1080"}
    assert len(burn.lines) == 7
    first = burn.lines[0]
    assert (first.percent, first.gflops, first.errors, first.temps) == (11.7, [7124.0, 6963.0], [0, 0], [56.0, 73.0])
    assert burn.verdicts == {}
    assert not is_faulty(burn)


def test_overflowed_counts_warnings_and_the_summary() -> None:
    burn = _parse("16gpu-all-faulty-issue12.txt")
    (line,) = burn.lines
    assert len(line.gflops) == len(line.errors) == len(line.temps) == 16
    assert line.errors[:3] == [0, -524288000, -524288000]
    assert line.flags[:3] == [None, "WARNING", "WARNING"]
    assert burn.tested == 16
    assert set(burn.verdicts.values()) == {"FAULTY"}


def test_died_processes_and_the_abort() -> None:
    burn = _parse("8gpu-died-aborting-issue69.txt")
    assert burn.aborted
    assert burn.lines[0].flags == ["DIED"] * 8
    assert burn.lines[0].gflops == [None] * 8  # proc'd -1: nothing computed
    assert burn.faults(0) == ["its gpu-burn process died (DIED!)"]


def test_time_from_the_duration_and_percent() -> None:
    burn = _parse("k80-azure-10s-issue8.txt")
    assert burn.duration_s == 10
    assert [s.t_s for s in trace_of(burn, "k80").samples] == [5.0, 10.0, 10.0]


def test_not_gpu_burn() -> None:
    assert not looks_like_gpu_burn("timestamp, index, temperature.gpu\n")
    with pytest.raises(ParseError):
        parse_gpu_burn("GPU 0: Tesla K80 (UUID: GPU-x)\n", "x")


@pytest.mark.parametrize("name", ["16gpu-all-faulty-issue12.txt", "8gpu-died-aborting-issue69.txt"])
def test_faulty_gpus_fail(name: str, rigcheck: Rigcheck) -> None:
    code, doc = _analyze(rigcheck, name)
    assert code == 1
    assert doc["source"] == "gpu-burn"
    assert all(g["verdict"].startswith("FAULTY (gpu-burn)") for g in doc["gpus"])


def test_faulty_gpus_of_a_healthy_neighbour() -> None:
    burn = _parse("16gpu-all-faulty-issue12.txt")
    # GPU 0's progress count is 0 but the summary says FAULTY: the summary is gpu-burn's verdict over the run
    assert burn.faults(0) == ["gpu-burn's summary says FAULTY (a wrong result during the run)"]
    assert "wrong results" in burn.faults(1)[1]


@pytest.mark.parametrize("name", ["2x1080-water-no-errors-cut-issue48.txt", "k80-azure-10s-issue8.txt"])
def test_runs_without_wrong_results_pass(name: str, rigcheck: Rigcheck) -> None:
    code, doc = _analyze(rigcheck, name)
    assert code == 0
    assert not any(g["verdict"].startswith("FAULTY") for g in doc["gpus"])


def test_sustained_gflops_and_error_lines(rigcheck: Rigcheck) -> None:
    _, doc = _analyze(rigcheck, "2x1080-water-no-errors-cut-issue48.txt")
    gpu0 = doc["gpus"][0]
    assert gpu0["errors"] == 0
    # (7020 + 7088) / 2: the median of the six lines after the first
    assert gpu0["tflops_sustained"] == pytest.approx(7.054)
    assert gpu0["loaded_s"] > 0  # Gflop/s > 0: loaded, not "never loaded"


def test_a_gpu_at_93c_fails_on_heat(rigcheck: Rigcheck) -> None:
    code, doc = _analyze(rigcheck, "k40m-m4000-93c-cut-issue1.txt")
    assert code == 1
    assert doc["gpus"][0]["temp_c_max"] == 93
    assert not doc["gpus"][0]["verdict"].startswith("FAULTY")

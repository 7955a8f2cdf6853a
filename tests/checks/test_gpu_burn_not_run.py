"""`rigcheck burn --analyze` on gpu-burn output whose test never ran: no GPU that computed nothing passes.

gpu-burn prints "Couldn't init a GPU test: ...", "0 (0 Gflop/s)" for every GPU and then "GPU n: OK" (its OK only
means no comparison failed, and none ran). Real outputs: tests/calibration/cases (gpu-burn's issues #7, #14,
#123, #124, #133, #52) and tests/fixtures/gpu-burn; the inputs built in a test are labelled synthetic.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from rigcheck.readers.reference.gpu_burn import is_faulty, looks_like_gpu_burn, parse_gpu_burn
from tests.support.cli import Rigcheck

CASES = Path(__file__).parent.parent / "calibration" / "cases"
FIXTURES = Path(__file__).parent.parent / "fixtures" / "gpu-burn"


def _analyze(rigcheck: Rigcheck, path: Path, *extra: str) -> tuple[int, Any, str]:
    code, out, err = rigcheck("burn", "--analyze", str(path), *extra)
    return code, (json.loads(out) if "--json" in extra else out), err


@pytest.mark.parametrize(
    ("name", "error"),
    [
        ("gpuburn-6gpu-load-module-error-says-ok.txt", """Couldn't init a GPU test: Error in "load module":"""),
        ("gpuburn-8x1080ti-cublas-init-error.txt", "CUBLAS_STATUS_NOT_INITIALIZED"),
        ("gpuburn-8xv100-cuda-error-unknown-says-ok.txt", "Couldn't init a GPU test: Error: CUDA_ERROR_UNKNOWN"),
        ("gpuburn-8xh200-system-not-yet-initialized.txt", "system not yet initialized"),
    ],
)
def test_a_test_that_never_started_fails_each_gpu_naming_the_error(name: str, error: str, rigcheck: Rigcheck) -> None:
    code, doc, _ = _analyze(rigcheck, CASES / name, "--json")
    assert code == 1
    assert doc["exit_code"] == 1
    assert doc["gpus"]
    for gpu in doc["gpus"]:
        assert gpu["verdict"].startswith("FAILED (gpu-burn): the test never ran on this GPU"), gpu["verdict"]
        assert error in gpu["verdict"]
        assert "OK (gpu-burn" not in gpu["verdict"]


def test_gpu_burn_saying_ok_after_zero_gflops_is_named(rigcheck: Rigcheck) -> None:
    _, doc, _ = _analyze(rigcheck, CASES / "gpuburn-6gpu-load-module-error-says-ok.txt", "--json")
    assert [g["index"] for g in doc["gpus"]] == list(range(6))
    assert all("gpu-burn still says OK: it compared nothing" in g["verdict"] for g in doc["gpus"])
    assert all("load module" in g["advice"] for g in doc["gpus"])


def test_no_progress_line_in_a_whole_run_fails(rigcheck: Rigcheck) -> None:
    # issue #124: "Burning for 10 seconds.", the A2000 initialized, no progress line, "Tested 1 GPUs: GPU 0: OK"
    code, doc, _ = _analyze(rigcheck, FIXTURES / "a2000-ok-summary-only-issue124.txt", "--json")
    assert code == 1
    (gpu,) = doc["gpus"]
    assert gpu["verdict"].startswith("FAILED (gpu-burn): the test never ran on this GPU in the whole run")
    assert "gpu-burn printed no progress line" in gpu["verdict"]
    assert "printed no error" in gpu["advice"]


def test_no_cuda_devices_fails_every_listed_gpu(rigcheck: Rigcheck) -> None:
    # issue #36: nvidia-smi -L lists eight TITAN RTX, gpu-burn finds no CUDA device; no progress, no summary
    path = FIXTURES / "8x-titan-rtx-no-cuda-devices-issue36.txt"
    assert looks_like_gpu_burn(path.read_text())
    code, doc, _ = _analyze(rigcheck, path, "--json")
    assert code == 1
    assert len(doc["gpus"]) == 8
    assert all("'No CUDA devices'" in g["verdict"] for g in doc["gpus"])


def test_no_gpu_at_all_is_exit_1_not_a_pass(rigcheck: Rigcheck, tmp_path: Path) -> None:
    # synthetic: the last two lines of issue #133's output without its `nvidia-smi -L` lines
    path = tmp_path / "burn.txt"
    path.write_text("Couldn't init CUDA: Error (gpu_burn-drv.cpp:304): system not yet initialized\nNo CUDA devices\n")
    code, doc, _ = _analyze(rigcheck, path, "--json")
    assert code == 1
    assert doc["exit_code"] == 1
    assert doc["gpus"] == []
    assert any("nothing was tested" in d for d in doc["diagnostics"])
    code, text, _ = _analyze(rigcheck, path)
    assert code == 1
    assert "the run failed" in text
    assert "no GPU throttled" not in text


def _two_gpus(last_percent: float, *, ended: bool) -> str:
    """Synthetic: two GPUs in gpu-burn's format, GPU 0 computing, GPU 1 at 0 Gflop/s in every line."""
    lines = ["Burning for 60 seconds."]
    for pct in (10.0, 20.0, last_percent):
        lines.append(f"{pct:.1f}%  proc'd: 900 (7100 Gflop/s) - 0 (0 Gflop/s)   errors: 0 - 0   temps: 60 C - 35 C ")
    if ended:
        lines += [
            "Killing processes with SIGTERM (soft kill)",
            "done",
            "",
            "Tested 2 GPUs:",
            "\tGPU 0: OK",
            "\tGPU 1: OK",
        ]
    return "\n".join(lines) + "\n"


def test_one_gpu_idle_beside_a_working_one_fails_alone(rigcheck: Rigcheck, tmp_path: Path) -> None:
    path = tmp_path / "burn.txt"
    path.write_text(_two_gpus(100.0, ended=True))
    code, doc, _ = _analyze(rigcheck, path, "--json")
    assert code == 1
    gpu0, gpu1 = doc["gpus"]
    assert gpu0["verdict"].startswith("OK (gpu-burn")
    assert gpu1["verdict"].startswith("FAILED (gpu-burn): the test never ran on this GPU in the whole run")


def test_a_cut_output_before_a_gpu_reported_is_incomplete(rigcheck: Rigcheck, tmp_path: Path) -> None:
    path = tmp_path / "burn.txt"
    path.write_text(_two_gpus(30.0, ended=False))
    code, doc, _ = _analyze(rigcheck, path, "--json")
    assert code == 1
    assert doc["gpus"][1]["verdict"].startswith("INCOMPLETE (gpu-burn): the output ends before this GPU computed")
    assert not doc["gpus"][0]["verdict"].startswith(("FAILED", "INCOMPLETE"))


def test_a_summary_kept_without_the_run_keeps_gpu_burns_verdict(rigcheck: Rigcheck) -> None:
    # the tail of a Slurm log (a README's sample of a passing node): no start, no progress, "GPU n: OK"
    code, doc, _ = _analyze(rigcheck, CASES / "gpuburn-8gpu-slurm-sample-ok.txt", "--json")
    assert code == 0
    assert all(g["verdict"].startswith("OK (gpu-burn") for g in doc["gpus"])
    assert any("only gpu-burn's summary is in the output" in d for d in doc["diagnostics"])


def test_runs_that_computed_still_pass(rigcheck: Rigcheck) -> None:
    code, doc, _ = _analyze(rigcheck, CASES / "gpuburn-1xa500-healthy-10s.txt", "--json")
    assert code == 0
    assert not doc["gpus"][0]["verdict"].startswith(("FAILED", "INCOMPLETE", "FAULTY"))


@pytest.mark.parametrize(
    ("path", "closing"),
    [
        (CASES / "gpuburn-16gpu-faulty.txt", "gpu-burn: GPU 0, 1, 2, 3, 4, 5, 6, 7, 8, 9"),
        (CASES / "gpuburn-8x1080ti-cublas-init-error.txt", "gpu-burn: GPU 0, 1, 2, 3, 4, 5, 6, 7 faulty or never"),
        (CASES / "gpuburn-4xk80-gpu0-died.txt", "gpu-burn: GPU 0, 1, 2, 3 faulty or never tested"),
    ],
)
def test_the_closing_line_counts_gpu_burns_faults(path: Path, closing: str, rigcheck: Rigcheck) -> None:
    code, text, _ = _analyze(rigcheck, path)
    assert code == 1
    assert closing in " ".join(text.split())
    assert "no GPU throttled for heat or was lost" not in text


def test_markdown_closing_line_too(rigcheck: Rigcheck) -> None:
    from rigcheck.model.burn import BurnDocument
    from rigcheck.report.burn.render import markdown

    code, doc_json, _ = _analyze(rigcheck, CASES / "gpuburn-16gpu-faulty.txt", "--json")
    text = markdown(BurnDocument.model_validate(doc_json))
    assert code == 1
    assert "faulty or never tested" in text
    assert "no GPU throttled" not in text


def test_failure_lines_are_read_once_and_bounded() -> None:
    # synthetic: a progress line glued after a failure line, the same failure printed by several processes,
    # and a 2 MB run of carriage-return progress (gpu-burn's "\r" updates kept without newlines)
    progress = "\r10.0%  proc'd: 0 (0 Gflop/s)   errors: 0   temps: 30 C " * 30_000
    text = (
        'Couldn\'t init a GPU test: Error in "load module": \n'
        'Couldn\'t init a GPU test: Error in "load module": ' + progress + "\n"
    )
    start = time.perf_counter()
    burn = parse_gpu_burn(text, "x")
    assert time.perf_counter() - start < 5
    assert burn.failures == ['Couldn\'t init a GPU test: Error in "load module":']
    assert is_faulty(burn)


@pytest.mark.parametrize(
    ("line", "read"),
    [
        # real: issue #14's line
        (
            'Couldn\'t init a GPU test: Error in "init": CUBLAS_STATUS_NOT_INITIALIZED',
            'Couldn\'t init a GPU test: Error in "init": CUBLAS_STATUS_NOT_INITIALIZED',
        ),
        # synthetic: a CUDA runtime message on a line of its own, prefixed as a launcher prints it
        ("worker0: CUDA error: unknown error", "worker0: CUDA error: unknown error"),
        # synthetic: gpu_burn-drv.cpp's -l message, and a status code inside another line
        ("No CUDA capable GPUs found.", "No CUDA capable GPUs found."),
        ("cuInit returned CUDA_ERROR_NO_DEVICE", "cuInit returned CUDA_ERROR_NO_DEVICE"),
    ],
)
def test_failure_lines_of_each_kind_are_quoted(line: str, read: str) -> None:
    burn = parse_gpu_burn("GPU 0: Tesla V100-SXM2-32GB (UUID: GPU-x)\n" + line + "\n", "x")
    assert burn.failures == [read]
    verdict = burn.not_run(0)
    assert verdict is not None
    assert verdict[0] == "FAILED"

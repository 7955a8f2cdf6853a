"""The GPU model is `--model` on `plan` and on every `bench … --from` reader, as on `power plan` and `verify --explain`:
`--gpu`, its former name, still works there (hidden from --help), both together are refused, and every message that
asks for the model names --model."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli import Rigcheck

FIXTURES = Path(__file__).parent.parent / "fixtures"
TOOLS = FIXTURES / "reference-tools"
NVBANDWIDTH_H100 = TOOLS / "nvbandwidth-1xh100-vm-v0.8.txt"  # host copies and device-local copy of an H100 SXM5
NVBANDWIDTH_D2D = TOOLS / "nvbandwidth-8xh100-v0.10-d2d-read-write-two-runs.txt"  # GPU pairs, no device name
MAMF_NAMELESS = FIXTURES / "mamf" / "mamf-1xh200-v4-readme-example.txt"
NCCL_TESTS_NAMELESS = FIXTURES / "corpus" / "nccl-tests" / "002-awsbatch-allreduce-mpirun-tag-output.txt"

# Each command that takes the model, with what it reads (nothing for plan) and a model that changes its judgement.
TAKING = {
    "plan": (["plan", "--params", "124M", "--link", "NV2"], "TITAN RTX"),
    "bench matmul": (["bench", "matmul", "--from", str(MAMF_NAMELESS)], "H200 SXM"),
    "bench membw": (["bench", "membw", "--from", str(NVBANDWIDTH_H100)], "A100 SXM4 80GB"),  # overrides the file's
    "bench hostlink": (["bench", "hostlink", "--from", str(NVBANDWIDTH_H100)], "A100 SXM4 80GB"),
    "bench p2p": (["bench", "p2p", "--from", str(NVBANDWIDTH_D2D)], "H100 SXM5"),
    "bench allreduce": (["bench", "allreduce", "--from", str(NCCL_TESTS_NAMELESS)], "H100 SXM5"),
}


@pytest.mark.parametrize("command", TAKING, ids=list(TAKING))
def test_model_and_its_former_name_give_the_same_document(command: str, rigcheck: Rigcheck) -> None:
    argv, model = TAKING[command]
    by_model = rigcheck(*argv, "--model", model, "--json")
    by_gpu = rigcheck(*argv, "--gpu", model, "--json")
    assert by_model.code in (0, 1), by_model.stderr
    assert (by_gpu.code, by_gpu.stdout) == (by_model.code, by_model.stdout)
    if command != "plan":  # plan --link NV2 needs the model; the readers judge without it, differently
        assert rigcheck(*argv, "--json").stdout != by_model.stdout


@pytest.mark.parametrize("command", TAKING, ids=list(TAKING))
def test_model_and_gpu_together_are_refused(command: str, rigcheck: Rigcheck) -> None:
    argv, model = TAKING[command]
    message = rigcheck(*argv, "--model", model, "--gpu", model).error()
    assert message == "--gpu is the former name of --model: give --model only"


@pytest.mark.parametrize(
    "command",
    [
        ["plan"],
        ["bench", "matmul"],
        ["bench", "membw"],
        ["bench", "p2p"],
        ["bench", "allreduce"],
        ["bench", "allgather"],
        ["bench", "reducescatter"],
        ["bench", "broadcast"],
    ],
)
def test_help_shows_model_and_not_gpu(command: list[str], rigcheck: Rigcheck) -> None:
    out = rigcheck(*command, "--help", env={"COLUMNS": "200"}).stdout
    assert "--model" in out
    assert "--gpu " not in out
    assert "--gpu\n" not in out
    assert "--gpu)" not in out  # no help text asks for the former name


def test_hostlink_keeps_gpu_as_the_cuda_index_of_a_run(rigcheck: Rigcheck) -> None:
    out = rigcheck("bench", "hostlink", "--help", env={"COLUMNS": "200"}).stdout
    gpu_line = next(line for line in out.splitlines() if "--gpu " in line)
    assert "CUDA device index" in gpu_line
    assert "model" not in gpu_line
    assert "--model" in out
    message = rigcheck("bench", "hostlink", "--from", NVBANDWIDTH_H100, "--gpu", "0").error()
    assert message.startswith("--gpu with --from is the former name of --model"), message
    assert message.endswith("not an index")


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["plan", "--params", "124M", "--model", "Voodoo 5", "--tokens", "1"], "--model 'Voodoo 5': not in rigcheck's"),
        (["plan", "--params", "124M", "--gpu", "Voodoo 5", "--tokens", "1"], "--model 'Voodoo 5': not in rigcheck's"),
        (["plan", "--params", "124M", "--link", "NV2"], "--link NV#: give --model too"),
        (["bench", "matmul", "--from", str(MAMF_NAMELESS), "--gpu", "H9000"], "--model 'H9000': not a GPU rigcheck"),
        (["bench", "p2p", "--from", str(NVBANDWIDTH_D2D), "--gpu", "H9000"], "--model 'H9000': not a GPU rigcheck"),
        (["bench", "allreduce", "--from", str(NCCL_TESTS_NAMELESS), "--gpu", "H9"], "--model 'H9' is not in"),
        (["bench", "membw", "--model", "H100 SXM5"], "--model names the GPU model of a --from file"),
        (["bench", "hostlink", "--model", "H100 SXM5"], "--model names the GPU model of a --from file"),
        (["bench", "broadcast", "--model", "H100 SXM5"], "--link, --pcie, --model and --nics describe the machine"),
    ],
)
def test_errors_name_model(argv: list[str], expected: str, rigcheck: Rigcheck) -> None:
    message = rigcheck(*argv).error()
    assert message.startswith(expected), message


def test_what_is_unknown_without_a_model_says_to_give_model(rigcheck: Rigcheck) -> None:
    planned = rigcheck("plan", "--params", "124M", "--json").json
    assert planned["missing"]["gpu_memory_bytes"] == "no --model: the memory per GPU is unknown"
    assert "or --model (catalog peak" in planned["missing"]["achieved_tflops"]
    pairs = rigcheck("bench", "p2p", "--from", NVBANDWIDTH_D2D, "--json").json
    assert all('name the GPU with --model "H100 SXM5"' in j["reason"] for j in pairs["judgement"])
    matmul = rigcheck("bench", "matmul", "--from", MAMF_NAMELESS, "--json").json
    assert "name the GPU with --model NAME" in matmul["judgement"][0]["reason"]
    collective = rigcheck("bench", "allreduce", "--from", NCCL_TESTS_NAMELESS, "--json").json
    assert collective["judgement"]["reason"] == "no band: the GPU model is not in the output: name it with --model NAME"
    advice = rigcheck("topo", "--from", FIXTURES / "snapshots" / "2x-titan-rtx-nv2.json", "--json").stdout
    assert "--link NV2 --model NAME` times a step" in advice
    assert "--gpu NAME" not in advice

"""`-i/--id` on the commands that run on this machine or judge saved runs (verify, burn, monitor, bench): the GPUs
named as nvidia-smi names them (an index, a UUID, a PCI bus id, a comma list), resolved as doctor resolves them,
and never together with --gpus. The machine is a fake: a snapshot where the command probes one, a fake NVML where
it polls; the measurement itself is replaced by a stand-in that records what it was given."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import typer

from rigcheck.cli import bench_common
from rigcheck.cli import monitor as monitor_cmd
from rigcheck.probe.nvml import NvmlPoller
from tests.support.cli import Rigcheck
from tests.support.fakenvml import FakeNvml, burn_power_capped_h100
from tests.support.snapshots import healthy_8x_h100

FIXTURES = Path(__file__).parent.parent / "fixtures"
SLOW_DIR = FIXTURES / "verify" / "h100x8-gpu3-slow"  # the 8x H100 snapshot: GPU i is ...-3c2f7e9d000i
UUID = "GPU-5b0f6a3e-91c2-4d7e-8a10-3c2f7e9d000{}".format
BOTH = "-i/--id and --gpus both choose GPUs: give one of them"


def _refusal(result: Any) -> str:
    code, out, err = result
    assert (code, out) == (2, ""), err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return str(lines[0]).removeprefix("rigcheck: error: ")


# --- verify ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("selection", "judged"),
    [
        (["-i", "0"], [0]),
        (["--id", "0,1"], [0, 1]),
        (["-i", f"{UUID(3)},5d:00.0,7"], [3, 7]),  # GPU 3 named by UUID and by bus id is one GPU
        (["--gpus", "3,7"], [3, 7]),  # as before
    ],
)
def test_verify_from_judges_the_gpus_i_names(selection: list[str], judged: list[int], rigcheck: Rigcheck) -> None:
    result = rigcheck("verify", "--from", SLOW_DIR, *selection, "--json")
    assert result.code in (0, 1), result.stderr
    assert [g["index"] for g in result.json["gpus"]] == judged


def test_verify_i_naming_no_gpu_lists_the_saved_ones(rigcheck: Rigcheck) -> None:
    message = rigcheck("verify", "--from", SLOW_DIR, "-i", "9").error()
    assert message.startswith(f"-i: no GPU here has the id '9'; the GPUs here are 0 ({UUID(0)}, 00000000:18:00.0)")


@pytest.mark.parametrize("where", [["--from", str(SLOW_DIR)], []])
def test_verify_refuses_i_with_gpus(where: list[str], rigcheck: Rigcheck) -> None:
    assert rigcheck("verify", *where, "-i", "0", "--gpus", "1").error() == BOTH


@pytest.mark.parametrize(("ids", "judged"), [("0", [0]), ("0,1", [0, 1]), (f"{UUID(6)},2a:00.0", [1, 6])])
def test_verify_live_resolves_i_against_the_probed_machine(
    ids: str, judged: list[int], rigcheck: Rigcheck, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rigcheck.bench.verify import run as verify_run
    from rigcheck.cli import common

    given: dict[str, Any] = {}

    def run_verify(**kwargs: Any) -> None:
        given.update(kwargs)
        raise typer.Exit(0)

    monkeypatch.setattr(common, "load_snapshot", lambda *a, **k: healthy_8x_h100())
    monkeypatch.setattr(verify_run, "run_verify", run_verify)
    assert rigcheck("verify", "--only", "matmul", "-i", ids).code == 0
    assert given["gpus"] == judged
    assert len(given["snapshot"].gpus) == 8  # the node's checks still see the whole machine, as with --gpus


# --- monitor and burn: ids resolved against what NVML lists -----------------------------------------------------


@pytest.fixture
def four_gpus(monkeypatch: pytest.MonkeyPatch) -> list[FakeNvml]:
    """NVML sees four H100s (UUID GPU-burn-i, bus ids 18, 2A, 3A, 5D); returns each fake library opened."""
    opened: list[FakeNvml] = []

    def factory(gpus: list[int] | None = None) -> NvmlPoller:
        lib = burn_power_capped_h100(4)
        opened.append(lib)
        return NvmlPoller(lib, gpus=gpus)

    monkeypatch.setattr(monitor_cmd, "make_poller", factory)
    return opened


@pytest.mark.parametrize(
    ("selection", "polled"),
    [
        (["-i", "0"], [0]),
        (["--id", "0,1"], [0, 1]),
        (["-i", "GPU-burn-2"], [2]),
        (["-i", "3a:00.0,00000000:5D:00.0"], [2, 3]),
        (["--id", "0,1,2,3"], [0, 1, 2, 3]),  # every GPU: the poller opened to list them is the one kept
        (["--gpus", "1,3"], [1, 3]),
    ],
)
def test_monitor_polls_the_gpus_i_names(
    selection: list[str], polled: list[int], four_gpus: list[FakeNvml], rigcheck: Rigcheck
) -> None:
    result = rigcheck("monitor", "--interval", "0.02", "--duration", "0.1", *selection, "--json")
    assert result.code == 0, result.stderr
    assert [g["index"] for g in result.json["gpus"]] == polled
    assert all(lib.initialized == 0 for lib in four_gpus)  # NVML shut down after listing as after polling
    # -i of some GPUs: one poller to list them all, one on those; of every GPU, or --gpus: one
    assert len(four_gpus) == (2 if selection[0] != "--gpus" and len(polled) < 4 else 1)


def test_monitor_i_naming_no_gpu_is_a_usage_line(four_gpus: list[FakeNvml], rigcheck: Rigcheck) -> None:
    message = _refusal(rigcheck("monitor", "--duration", "0.1", "-i", "GPU-burn-9"))
    assert message.startswith("-i: no GPU here has the id 'GPU-burn-9'; the GPUs here are 0 (GPU-burn-0, 00000000:18")
    assert message.endswith("; 3 (GPU-burn-3, 00000000:5D:00.0)")  # NVML's UUIDs and bus ids, as doctor lists them
    assert all(lib.initialized == 0 for lib in four_gpus)


def test_monitor_an_ambiguous_uuid_start(four_gpus: list[FakeNvml], rigcheck: Rigcheck) -> None:
    message = _refusal(rigcheck("monitor", "--duration", "0.1", "-i", "GPU-burn"))
    assert message == "-i: 'GPU-burn' matches GPUs 0, 1, 2, 3; give more of the UUID"


@pytest.mark.parametrize("command", [["monitor", "--duration", "0.1"], ["burn", "--minutes", "0.1"]])
def test_monitor_and_burn_refuse_i_with_gpus(command: list[str], four_gpus: list[FakeNvml], rigcheck: Rigcheck) -> None:
    assert _refusal(rigcheck(*command, "-i", "0", "--gpus", "1")) == BOTH
    assert four_gpus == []  # refused before NVML is asked anything


@pytest.mark.parametrize(("selection", "loaded"), [(["-i", "0"], [0]), (["--id", "GPU-burn-1,3"], [1, 3])])
def test_burn_loads_the_gpus_i_names(
    selection: list[str],
    loaded: list[int],
    four_gpus: list[FakeNvml],
    rigcheck: Rigcheck,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from rigcheck.bench import burn as burn_bench

    seen: list[list[int]] = []

    def run_burn(poller: NvmlPoller, **kwargs: Any) -> None:
        seen.append(sorted(poller.gpus))
        raise typer.Exit(0)

    monkeypatch.setattr(burn_bench, "run_burn", run_burn)
    assert rigcheck("burn", "--minutes", "0.1", *selection).code == 0
    assert seen == [loaded]


# --- bench ----------------------------------------------------------------------------------------------------


@pytest.fixture
def eight_h100(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """This machine as `bench` probes it (the 8x H100 snapshot), and each measurement replaced by one that records
    what it was given and stops (exit 0)."""
    from rigcheck.bench import collectives, train
    from rigcheck.bench.device import hostlink, matmul, membw, p2p

    given: dict[str, Any] = {}

    def record(*args: Any, **kwargs: Any) -> None:
        given.update(kwargs)
        raise typer.Exit(0)

    monkeypatch.setattr(bench_common, "load_snapshot", lambda *a, **k: healthy_8x_h100())
    for module, name in (
        (matmul, "run_matmul"),
        (membw, "run_membw"),
        (hostlink, "run_hostlink"),
        (p2p, "run_p2p"),
        (collectives, "run_collective"),
        (train, "run_train"),
    ):
        monkeypatch.setattr(module, name, record)
    monkeypatch.setattr(collectives, "resolve_world_size", lambda cpu, n: n)
    return given


BENCH_RUNS = (["matmul"], ["membw"], ["hostlink"], ["p2p"], ["allreduce"], ["broadcast"], ["train"])


@pytest.mark.parametrize("command", BENCH_RUNS)
@pytest.mark.parametrize(
    ("selection", "placed"),
    [
        (["--id", "0,1"], (0, 1)),
        (["-i", f"{UUID(5)},3a:00.0"], (2, 5)),  # in index order, as every -i
        (["--gpus", "5,2"], (5, 2)),  # --gpus keeps the order given
    ],
)
def test_bench_places_its_workers_on_the_gpus_i_names(
    command: list[str], selection: list[str], placed: tuple[int, ...], eight_h100: dict[str, Any], rigcheck: Rigcheck
) -> None:
    result = rigcheck("bench", *command, *selection)
    assert result.code == 0, result.stderr
    placement = eight_h100["placement"]
    assert placement.indices == placed
    assert placement.snapshot.gpu_selection == sorted(placed)
    assert placement.env["CUDA_VISIBLE_DEVICES"] == ",".join(UUID(i) for i in placed)


@pytest.mark.parametrize("command", [c for c in BENCH_RUNS if c != ["p2p"]])
def test_bench_takes_i_0(command: list[str], eight_h100: dict[str, Any], rigcheck: Rigcheck) -> None:
    assert rigcheck("bench", *command, "-i", "0").code == 0
    assert eight_h100["placement"].indices == (0,)


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["matmul", "-i", "0", "--gpus", "1"], BOTH),
        (["p2p", "-i", "0", "--gpus", "0,1"], BOTH),
        (["hostlink", "--id", "0", "--gpus", "all"], BOTH),
        (["allreduce", "-i", "0", "--gpus", "1"], BOTH),
        (["train", "-i", "0", "--gpus", "1"], BOTH),
        (["matmul", "--cpu", "-i", "0"], "-i/--id picks GPUs and a --cpu run has none"),
        (["allreduce", "--cpu", "-i", "0"], "-i/--id picks GPUs and a --cpu run has none"),
        (["membw", "-i", "0,1", "-n", "3"], "--world-size 3 and -i 0,1 disagree: -i starts one worker per GPU (2)"),
        (["p2p", "-i", UUID(4)], f"-i {UUID(4)}: bench p2p needs at least two GPUs"),
        (["hostlink", "--gpu", "0", "-i", "1"], "--gpu (a CUDA index) and -i/--id (nvidia-smi's ids) both pick GPUs"),
        (["broadcast", "-i", "GPU-5b0f"], "-i: 'GPU-5b0f' matches GPUs 0, 1, 2, 3, 4, 5, 6, 7; give more of the UUID"),
        (["matmul", "-i", "8"], "-i: no GPU here has the id '8'; the GPUs here are 0 ("),
    ],
)
def test_bench_i_usage_errors_are_one_line(
    argv: list[str], expected: str, eight_h100: dict[str, Any], rigcheck: Rigcheck
) -> None:
    assert expected in _refusal(rigcheck("bench", *argv))
    assert eight_h100 == {}  # nothing was measured


@pytest.mark.parametrize("command", ["allreduce", "matmul", "membw", "hostlink", "p2p"])
def test_bench_i_with_from_is_refused_nothing_is_run(command: str, tmp_path: Path, rigcheck: Rigcheck) -> None:
    saved = tmp_path / "out.txt"
    saved.write_text("anything\n")
    line = _refusal(rigcheck("bench", command, "--from", saved, "-i", "0"))
    assert line == "-i/--id only apply to a run; with --from nothing is run (drop them)"


# --- every command that takes --gpus takes -i ------------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        ["verify"],
        ["burn"],
        ["monitor"],
        ["bench", "matmul"],
        ["bench", "membw"],
        ["bench", "hostlink"],
        ["bench", "p2p"],
        ["bench", "allreduce"],
        ["bench", "allgather"],
        ["bench", "reducescatter"],
        ["bench", "broadcast"],
        ["bench", "train"],
    ],
)
def test_help_lists_i_beside_gpus(command: list[str], rigcheck: Rigcheck) -> None:
    out = rigcheck(*command, "--help", env={"COLUMNS": "200"}).stdout
    assert "--gpus" in out
    assert "--id" in out
    assert " -i " in out

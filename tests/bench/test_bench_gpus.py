"""`bench … --gpus 0,2` (issue #17): the placement (selection -> worker env + rank -> NVML index), the documents
it labels, and the one-line usage errors, on fake snapshots (no GPU needed); one `gpu` test runs it for real."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rigcheck.bench.gpu_select import label_rows, place_gpus, workers_for
from rigcheck.cli import bench_common
from rigcheck.errors import UsageError
from rigcheck.model.snapshot import Snapshot
from tests.support.cli import Rigcheck
from tests.support.snapshots import healthy_8x_h100, make_gpu, make_snapshot, no_gpu

# --- the placement: pure -------------------------------------------------------------------------------------


def test_uuids_in_the_order_given_place_rank_r_on_the_r_th_gpu() -> None:
    snap = healthy_8x_h100()
    placement = place_gpus(snap, [2, 0])
    uuid = {g.index: g.uuid for g in snap.gpus}
    assert placement.env == {"CUDA_VISIBLE_DEVICES": f"{uuid[2]},{uuid[0]}"}  # exact whatever CUDA's order
    assert placement.indices == (2, 0)
    assert [placement.index_of(r) for r in range(2)] == [2, 0]
    assert placement.note is None
    # the document's snapshot: the machine narrowed as every --gpus narrows it (gpu_selection says so)
    assert [g.index for g in placement.snapshot.gpus] == [0, 2]
    assert placement.snapshot.gpu_selection == [0, 2]
    # a run's own variables (--compare-p2p's) come on top of the placement's
    assert placement.worker_env({"NCCL_P2P_DISABLE": "1"}) == {**placement.env, "NCCL_P2P_DISABLE": "1"}


def test_a_uuid_without_its_prefix_gets_the_one_cuda_expects() -> None:
    snap = make_snapshot([make_gpu(0, uuid="abcd-1"), make_gpu(1, uuid="MIG-ef01-2")])
    assert place_gpus(snap, [1, 0]).env == {"CUDA_VISIBLE_DEVICES": "MIG-ef01-2,GPU-abcd-1"}


def test_without_uuids_the_indices_in_nvidia_smi_order_and_a_note() -> None:
    snap = make_snapshot([make_gpu(0, uuid=None), make_gpu(1), make_gpu(2, uuid=None)])
    placement = place_gpus(snap, [2, 1])
    assert placement.env == {"CUDA_VISIBLE_DEVICES": "2,1", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}
    assert placement.note is not None
    assert "no UUID for GPU 2" in placement.note
    assert "nvidia-smi numbers GPUs by PCI bus id" in placement.note


def test_an_absent_or_repeated_index_is_a_usage_error() -> None:
    snap = make_snapshot([make_gpu(0), make_gpu(1)])
    with pytest.raises(UsageError, match=r"^--gpus: no GPU 3 in this snapshot; the GPUs here are 0, 1$"):
        place_gpus(snap, [0, 3])
    with pytest.raises(UsageError, match="distinct"):
        place_gpus(snap, [1, 1])


def test_one_worker_per_gpu() -> None:
    assert workers_for([3, 1], None) == 2
    assert workers_for([3, 1], 2) == 2
    with pytest.raises(UsageError, match=r"^--world-size 3 and --gpus 3,1 disagree"):
        workers_for([3, 1], 3)


# --- the documents: rows named by NVML index --------------------------------------------------------------------


def _fake_launch(captured: dict[str, Any], rows: list[dict[str, Any]]) -> Any:
    from rigcheck.bench.launcher import LaunchOutcome

    def launch(fn: Any, payload: Any, **kwargs: Any) -> LaunchOutcome:
        captured.update(kwargs)
        return LaunchOutcome(rows=rows, partial=False, error=None, wall_s=0.1)

    return launch


def test_matmul_rows_name_each_ranks_gpu_by_its_nvml_index(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("torch")
    from rigcheck.bench.device import matmul
    from rigcheck.bench.launcher import WorkerContext

    rows: list[dict[str, Any]] = []
    payload = matmul.MatmulPayload(dtypes=("fp32",), shapes=((16, 16, 16),), warmup=0, repeats=1, flush_bytes=1024)
    for rank in range(2):
        ctx = WorkerContext(rank=rank, world_size=2, local_rank=rank, backend="gloo", device="cpu", on_row=rows.append)
        matmul.matmul_worker(ctx, payload)
    # as a GPU worker labels them: its CUDA ordinal, which is its rank under the placement's CUDA_VISIBLE_DEVICES
    rows = [{**r, "gpu": r["rank"]} for r in rows]
    captured: dict[str, Any] = {}
    monkeypatch.setattr(matmul, "launch", _fake_launch(captured, rows))
    monkeypatch.setattr(matmul, "require_gpus", lambda *a, **k: 8)
    placement = place_gpus(healthy_8x_h100(), [5, 3])
    doc = matmul.run_matmul(dtypes=["fp32"], snapshot=placement.snapshot, placement=placement)
    assert captured["world_size"] == 2
    assert captured["env"] == placement.env
    assert [(r.rank, r.gpu) for r in doc.results] == [(0, 5), (1, 3)]
    assert [(b.rank, b.gpu) for b in doc.best] == [(0, 5), (1, 3)]
    data = doc.to_json_dict()
    assert data["gpus"] == [5, 3]
    assert data["snapshot"]["gpu_selection"] == [3, 5]


def test_without_gpus_a_document_has_no_gpus_key_and_cuda_ordinals(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("torch")
    from rigcheck.bench.device import membw

    captured: dict[str, Any] = {}
    monkeypatch.setattr(membw, "launch", _fake_launch(captured, []))
    doc = membw.run_membw(cpu=True, sizes=[1024], snapshot=None)
    assert captured["env"] is None  # nothing added to the workers' environment
    assert "gpus" not in doc.to_json_dict()
    assert label_rows([], None) == []


def test_collective_workers_get_the_placement_and_the_runs_own_env(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("torch")
    from rigcheck.bench import collectives

    captured: dict[str, Any] = {}
    monkeypatch.setattr(collectives, "launch", _fake_launch(captured, []))
    monkeypatch.setattr(collectives, "resolve_world_size", lambda cpu, n: n)
    snap = make_snapshot([make_gpu(0, uuid=None), make_gpu(1, uuid=None), make_gpu(2, uuid=None)])
    placement = place_gpus(snap, [2, 0])
    doc, _ = collectives.run_collective(
        "allreduce",
        cpu=False,
        world_size=2,
        sizes=[8],
        warmup=0,
        repeats=1,
        timeout_s=5,
        snapshot=placement.snapshot,
        env={"NCCL_P2P_DISABLE": "1"},
        placement=placement,
    )
    assert captured["world_size"] == 2
    assert captured["env"] == {**placement.env, "NCCL_P2P_DISABLE": "1"}
    assert placement.env == {"CUDA_VISIBLE_DEVICES": "2,0", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}
    data = doc.to_json_dict()
    assert data["gpus"] == [2, 0]
    assert placement.note in data["notes"]
    with pytest.raises(UsageError, match="disagree"):
        collectives.run_collective(
            "allreduce", cpu=False, world_size=3, sizes=[8], warmup=0, repeats=1, timeout_s=5,
            snapshot=placement.snapshot, placement=placement,
        )  # fmt: skip


# --- the commands: one line, exit 2 -----------------------------------------------------------------------------


@pytest.fixture
def two_gpus(monkeypatch: pytest.MonkeyPatch) -> Snapshot:
    """This machine, as `bench` probes it: two GPUs (nothing is measured: every case stops at a usage error)."""
    snap = make_snapshot([make_gpu(0), make_gpu(1)])
    monkeypatch.setattr(bench_common, "load_snapshot", lambda *a, **k: snap)
    return snap


def _usage_error(argv: list[str], rigcheck: Rigcheck) -> str:
    code, out, err = rigcheck(*argv)
    assert code == 2, err
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.usefixtures("two_gpus")
@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["bench", "allreduce", "--gpus", "0,5"], "--gpus: no GPU 5 in this snapshot; the GPUs here are 0, 1"),
        (["bench", "matmul", "--gpus", "7"], "--gpus: no GPU 7 in this snapshot; the GPUs here are 0, 1"),
        (["bench", "hostlink", "--gpus", "2"], "--gpus: no GPU 2 in this snapshot; the GPUs here are 0, 1"),
        (["bench", "allgather", "--gpus", "1,1"], "--gpus: indices must be distinct and not negative: '1,1'"),
        (["bench", "membw", "--gpus", "0,x"], "--gpus takes GPU indices separated by commas"),
        (["bench", "allreduce", "--cpu", "--gpus", "0"], "--gpus picks GPUs and a --cpu run has none"),
        (["bench", "matmul", "--cpu", "--gpus", "0"], "--gpus picks GPUs and a --cpu run has none"),
        (["bench", "train", "--cpu", "--gpus", "0"], "--gpus picks GPUs and a --cpu run has none"),
        (["bench", "broadcast", "--gpus", "0,1", "-n", "3"], "--world-size 3 and --gpus 0,1 disagree"),
        (["bench", "membw", "--gpus", "0,1", "-n", "1"], "--world-size 1 and --gpus 0,1 disagree"),
        (["bench", "hostlink", "--gpu", "0", "--gpus", "1"], "--gpu (a CUDA index) and --gpus"),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(argv: list[str], expected: str, rigcheck: Rigcheck) -> None:
    assert expected in _usage_error(argv, rigcheck)


@pytest.mark.parametrize("command", ["allreduce", "membw", "hostlink", "p2p"])
def test_gpus_with_from_is_refused_nothing_is_run(command: str, tmp_path: Path, rigcheck: Rigcheck) -> None:
    saved = tmp_path / "out.txt"
    saved.write_text("anything\n")
    line = _usage_error(["bench", command, "--from", str(saved), "--gpus", "0"], rigcheck)
    assert "--gpus" in line
    assert "with --from nothing is run" in line


def test_the_no_gpu_rule_is_unchanged(monkeypatch: pytest.MonkeyPatch, rigcheck: Rigcheck) -> None:
    monkeypatch.setattr(bench_common, "load_snapshot", lambda *a, **k: no_gpu())
    code, out, err = rigcheck("bench", "matmul", "--gpus", "0")
    assert code == 1
    assert out == ""
    assert err.strip().splitlines()[0].startswith("rigcheck: no NVIDIA GPU visible: ")


# --- on a GPU ---------------------------------------------------------------------------------------------------


@pytest.mark.gpu
def test_matmul_quick_on_gpu_0_names_gpu_0(rigcheck: Rigcheck) -> None:
    pytest.importorskip("torch")
    code, out, err = rigcheck("bench", "matmul", "--quick", "--gpus", "0", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["gpus"] == [0]
    assert doc["world_size"] == 1
    assert doc["results"]
    assert {r["gpu"] for r in doc["results"]} == {0}
    assert doc["snapshot"]["gpu_selection"] == [0]

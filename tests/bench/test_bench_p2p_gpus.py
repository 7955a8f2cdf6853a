"""`bench p2p --gpus 0,2,5`: the GPUs given, each found among CUDA's devices by UUID, rows and matrix headers named
by nvidia-smi index, `matrix_gpus` in the document; a run without --gpus unchanged. No GPU needed: a fake torch
stands for CUDA (its own order of the GPUs) and made-up copy times for the measurement; one `gpu` test runs it.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from rigcheck.bench.device import p2p  # imports no torch: the fake below stands for it
from rigcheck.bench.gpu_select import GpuPlacement, place_gpus, same_index_note
from rigcheck.cli import bench_common
from rigcheck.errors import BenchError, UsageError
from rigcheck.model.bench import P2PDocument, Versions
from rigcheck.model.snapshot import Gpu, Snapshot
from tests.bench.test_bench_gpus import _usage_error
from tests.support.cli import Rigcheck
from tests.support.snapshots import healthy_8x_h100

# What `run_p2p` without --gpus wrote for this fake machine and measurement before --gpus existed (its snapshot
# left out): a run without --gpus must still write exactly this.
BEFORE = Path(__file__).parent.parent / "fixtures" / "bench-p2p" / "run-without-gpus.json"

# The GPUs CUDA sees (4 of the 8) in its own order: CUDA ordinal i is nvidia-smi GPU CUDA_ORDER[i].
CUDA_ORDER = (5, 0, 2, 7)
VERSIONS = Versions(rigcheck="0", python="3", torch="2.5.0", cuda="12.4", nccl=None)


def machine() -> Snapshot:
    """The 8×H100 node, each pair with its own link count (10·a + b), so a row shows which pair it was told of."""
    snap = healthy_8x_h100()
    pairs = [p.model_copy(update={"nvlinks": 10 * p.a + p.b}) for p in snap.pairs]
    return snap.model_copy(update={"pairs": pairs})


class FakeCuda:
    """torch.cuda as far as p2p asks it: CUDA's devices are ``gpus`` (snapshot records), in that order."""

    def __init__(self, gpus: list[Gpu]) -> None:
        self.gpus = gpus

    def is_available(self) -> bool:
        return True

    def device_count(self) -> int:
        return len(self.gpus)

    def get_device_properties(self, i: int) -> Any:
        g = self.gpus[i]
        assert g.pci_bus_id is not None
        assert g.uuid is not None
        bus = int(g.pci_bus_id.split(":")[1], 16)
        # torch's uuid has no "GPU-" prefix
        return SimpleNamespace(uuid=g.uuid.removeprefix("GPU-"), pci_bus_id=bus, pci_device_id=0, pci_domain_id=0)

    def get_device_name(self, i: int) -> str:
        return str(self.gpus[i].name)


def fake_torch(snap: Snapshot) -> Any:
    gpus = [g for i in CUDA_ORDER if (g := snap.gpu(i)) is not None]
    return SimpleNamespace(cuda=FakeCuda(gpus), version=SimpleNamespace(cuda="12.4"), __version__="2.5.0")


def measure(src: int, dst: int, mode: str) -> p2p.PairMeasurement:
    """Seconds per copy, by CUDA ordinal: every ordered pair its own; CUDA 1 -> 2 without peer access."""
    t = (0.002 if mode == "peer" else 0.02) * (1 + src + 2 * dst)
    peer = mode == "peer" and (src, dst) != (1, 2)
    return p2p.PairMeasurement([t, t * 1.1, t * 0.9], [t * 1.2], [(1 + src) * 1e-6], peer, True)


@pytest.fixture
def cuda_calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int, str]]:
    """The fake torch and measurement in place of CUDA's; the (src, dst, mode) each copy was measured on."""
    calls: list[tuple[int, int, str]] = []
    snap = machine()

    def measured(a: int, b: int, mode: str) -> p2p.PairMeasurement:
        calls.append((a, b, mode))
        return measure(a, b, mode)

    monkeypatch.setattr(p2p, "require_torch", lambda: fake_torch(snap))
    monkeypatch.setattr(p2p, "cuda_measure", lambda torch, **kw: measured)
    monkeypatch.setattr(p2p, "software_versions", lambda: VERSIONS)
    return calls


def run_fake(placement: GpuPlacement | None = None, progress: list[str] | None = None) -> P2PDocument:
    snapshot = placement.snapshot if placement is not None else machine()
    return p2p.run_p2p(
        size_bytes=1 << 20,
        repeats=3,
        iters=2,
        compare=True,
        snapshot=snapshot,
        placement=placement,
        on_progress=progress.append if progress is not None else None,
    )


def without_snapshot(doc: P2PDocument) -> dict[str, Any]:
    data: dict[str, Any] = doc.to_json_dict()
    del data["snapshot"]
    return data


# --- nvidia-smi index -> CUDA ordinal ---------------------------------------------------------------------------


def test_each_gpu_given_is_found_among_cudas_devices_by_uuid() -> None:
    torch = fake_torch(machine())
    assert p2p.cuda_ordinals(torch, place_gpus(machine(), [7, 2, 5])) == [3, 2, 0]
    assert p2p.cuda_ordinals(torch, place_gpus(machine(), [0, 5])) == [1, 0]
    # a GPU CUDA does not show (CUDA_VISIBLE_DEVICES) is not replaced by CUDA's device of the same index
    with pytest.raises(BenchError, match=r"GPU 1 \(GPU-.*\) is not visible to CUDA"):
        p2p.cuda_ordinals(torch, place_gpus(machine(), [1, 0]))


def test_without_a_uuid_the_same_index_and_the_note_hostlink_gives(cuda_calls: list[tuple[int, int, str]]) -> None:
    snap = machine()
    gpus = [g.model_copy(update={"uuid": None}) if g.index == 2 else g for g in snap.gpus]
    placement = place_gpus(snap.model_copy(update={"gpus": gpus}), [2, 0])
    assert p2p.cuda_ordinals(fake_torch(snap), placement) == [2, 1]
    note = same_index_note(placement)
    assert note is not None
    assert note.startswith("--gpus: the snapshot has no UUID for GPU 2: CUDA's device of the same index was measured")
    assert note in run_fake(placement).notes
    # GPU 1 falls back to CUDA 1, which is GPU 0's by its UUID: the same device twice is no pair
    gpus = [g.model_copy(update={"uuid": None}) if g.index == 1 else g for g in snap.gpus]
    with pytest.raises(BenchError, match=r"two GPUs map to the same CUDA device \(GPU 0 -> CUDA 1, GPU 1 -> CUDA 1\)"):
        p2p.cuda_ordinals(fake_torch(snap), place_gpus(snap.model_copy(update={"gpus": gpus}), [0, 1]))


def test_one_gpu_is_no_pair() -> None:
    with pytest.raises(UsageError, match=r"^--gpus 3: bench p2p needs at least two GPUs"):
        p2p.require_pair([3])
    with pytest.raises(UsageError, match="needs at least two GPUs"):
        p2p.cuda_ordinals(fake_torch(machine()), place_gpus(machine(), [5]))


# --- the document ------------------------------------------------------------------------------------------------


def test_rows_and_matrices_name_the_gpus_given_by_nvidia_smi_index(cuda_calls: list[tuple[int, int, str]]) -> None:
    from tests.contracts.test_schemas import validator

    progress: list[str] = []
    placement = place_gpus(machine(), [7, 2, 5])
    doc = run_fake(placement, progress)
    # measured on CUDA's devices of those GPUs (7, 2, 5 are CUDA 3, 2, 0), every ordered pair, in the order given
    assert [(a, b) for a, b, mode in cuda_calls if mode == "peer"] == [(3, 2), (3, 0), (2, 3), (2, 0), (0, 3), (0, 2)]
    peer = [r for r in doc.results if r.mode == "peer"]
    assert [(r.src, r.dst) for r in peer] == [(7, 2), (7, 5), (2, 7), (2, 5), (5, 7), (5, 2)]
    assert progress[0] == "GPU 7 -> GPU 2 (peer)"
    assert peer[0].name == "GPU 7 -> GPU 2 peer"
    # each row told of its own pair of the snapshot (nvlinks 10·a + b), found through CUDA's PCI address
    assert all(r.nvlinks == 10 * min(r.src, r.dst) + max(r.src, r.dst) for r in doc.results)
    # the pair without peer access is CUDA 1 -> 2 in the fake: not among these GPUs; CUDA 2 -> 0 is GPU 2 -> 5
    r25 = next(r for r in peer if (r.src, r.dst) == (2, 5))
    assert r25.unidirectional_gbps == pytest.approx((1 << 20) / (0.002 * (1 + 2 + 0)) / 1e9)
    data = doc.to_json_dict()
    assert data["gpus"] == 3  # the count, as on every p2p document
    assert data["matrix_gpus"] == [7, 2, 5]
    uni = data["matrices"]["unidirectional_gbps_peer"]
    assert [len(row) for row in uni] == [3, 3, 3]
    assert uni[1][2] == pytest.approx(r25.unidirectional_gbps)  # row 1 = GPU 2, column 2 = GPU 5
    assert [uni[i][i] for i in range(3)] == [None, None, None]
    assert [(c["src"], c["dst"]) for c in data["comparison"]["pairs"]][:2] == [(7, 2), (7, 5)]
    assert data["snapshot"]["gpu_selection"] == [2, 5, 7]
    assert not any("UUID" in n for n in data["notes"])
    assert list(data)[-3:] == ["matrices", "matrix_gpus", "comparison"]  # no warning: every pair had peer access
    validator("rigcheck.bench/1").validate(data)


def test_without_gpus_the_document_is_the_one_before_and_gpus_only_renames(
    cuda_calls: list[tuple[int, int, str]],
) -> None:
    """No --gpus: byte for byte what the code before --gpus wrote (rows in CUDA's numbering). --gpus naming the
    same GPUs in CUDA's order measures the same copies: the same figures and matrices, only named by nvidia-smi
    index, with matrix_gpus."""
    before = json.loads(BEFORE.read_text())
    plain = without_snapshot(run_fake())
    assert json.dumps(plain, indent=1) + "\n" == BEFORE.read_text()
    assert "matrix_gpus" not in plain

    cuda_calls.clear()
    placed = without_snapshot(run_fake(place_gpus(machine(), list(CUDA_ORDER))))
    assert cuda_calls[:3] == [(0, 1, "peer"), (0, 2, "peer"), (0, 3, "peer")]
    smi = dict(enumerate(CUDA_ORDER))

    def renamed(text: str) -> str:
        return re.sub(r"GPU (\d+)", lambda m: f"GPU {smi[int(m[1])]}", text)

    expected = json.loads(json.dumps(before))
    for row in expected["results"]:
        row.update(src=smi[row["src"]], dst=smi[row["dst"]], name=renamed(row["name"]))
    for pair in expected["comparison"]["pairs"]:
        pair.update(src=smi[pair["src"]], dst=smi[pair["dst"]])
    expected["comparison"]["warnings"] = expected["warnings"] = [renamed(w) for w in before["warnings"]]
    assert expected["warnings"][0].startswith("GPU 0 -> GPU 2: no CUDA peer access")  # CUDA 1 -> 2
    assert placed.pop("matrix_gpus") == [5, 0, 2, 7]
    assert placed == expected


# --- the reports -------------------------------------------------------------------------------------------------


def test_reports_name_the_gpus_by_nvidia_smi_index(cuda_calls: list[tuple[int, int, str]]) -> None:
    from rich.console import Console

    from rigcheck.report.bench.html import bench_html
    from rigcheck.report.bench.reference import matrices, matrix_lines
    from rigcheck.report.bench.render import markdown, terminal

    doc = run_fake(place_gpus(machine(), [7, 2, 5]))
    console = Console(file=io.StringIO(), width=200, color_system=None)
    console.print(terminal(doc))
    out = console.file.getvalue()  # type: ignore[attr-defined]
    assert "7 -> 2" in out  # the --compare-p2p pair
    table = out[out.index("p2p: GPU-to-GPU copies") :]
    assert [line.split()[:3] for line in table.splitlines()[3:5]] == [["7", "2", "peer"], ["7", "5", "peer"]]
    md = markdown(doc)
    assert "| 7 -> 2 | Y |" in md
    assert "| 7 | 2 | peer |" in md
    page = bench_html(doc)
    assert '<td class="num">7</td><td class="num">2</td><td class="">peer</td>' in page

    # a matrix drawn from the document is headed by its matrix_gpus
    name, lines = matrices(doc)[0]
    assert name == "unidirectional_gbps_peer"
    assert lines[0].split() == ["7", "2", "5"]
    assert [line.split()[0] for line in lines[1:]] == ["7", "2", "5"]
    assert matrix_lines([[None, 1.0], [2.0, None]])[0].split() == ["0", "1"]  # without it: positions, as before
    assert p2p.matrix_text(doc.matrices["latency_us_peer"], labels=doc.matrix_gpus)[0].split() == [
        "src\\dst",
        "7",
        "2",
        "5",
    ]


# --- the command: one line, exit 2, before anything is measured ----------------------------------------------------


@pytest.fixture
def eight_gpus(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """This machine, as `bench` probes it: the 8×H100 node; returns a list that counts the probes."""
    probes: list[int] = []

    def probe(*args: Any, **kwargs: Any) -> Snapshot:
        probes.append(1)
        return healthy_8x_h100()

    monkeypatch.setattr(bench_common, "load_snapshot", probe)
    return probes


def test_one_gpu_is_refused_before_the_machine_is_probed(eight_gpus: list[int], rigcheck: Rigcheck) -> None:
    line = _usage_error(["bench", "p2p", "--gpus", "3"], rigcheck)
    assert "--gpus 3: bench p2p needs at least two GPUs (a GPU-to-GPU copy needs a pair)" in line
    assert eight_gpus == []


@pytest.mark.parametrize(
    ("gpus", "expected"),
    [
        ("0,9", "--gpus: no GPU 9 in this snapshot; the GPUs here are 0, 1, 2, 3, 4, 5, 6, 7"),
        ("2,2", "--gpus: indices must be distinct and not negative: '2,2'"),
        ("0,x", "--gpus takes GPU indices separated by commas"),
    ],
)
def test_gpus_the_machine_lacks_or_malformed_are_usage_errors(
    gpus: str, expected: str, eight_gpus: list[int], rigcheck: Rigcheck
) -> None:
    assert expected in _usage_error(["bench", "p2p", "--gpus", gpus], rigcheck)


# --- on GPUs ------------------------------------------------------------------------------------------------------


@pytest.mark.gpu
def test_gpu_p2p_on_two_gpus_by_nvidia_smi_index(rigcheck: Rigcheck) -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.device_count() < 2:
        pytest.skip("p2p --gpus needs two GPUs")
    code, out, err = rigcheck("bench", "p2p", "--gpus", "1,0", "--size", "16M", "--repeats", "2", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["matrix_gpus"] == [1, 0]
    assert [(r["src"], r["dst"]) for r in doc["results"] if r["mode"] == "peer"] == [(1, 0), (0, 1)]
    assert all(r["correct"] for r in doc["results"])
    assert doc["snapshot"]["gpu_selection"] == [0, 1]

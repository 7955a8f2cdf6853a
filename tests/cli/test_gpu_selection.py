"""`--gpus 0,2` on doctor, power, thermal, snapshot and topo: the snapshot narrowed before checks run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rigcheck.checks.doctor import run_checks
from rigcheck.errors import UsageError
from rigcheck.model.kernel_log import KernelEvent
from rigcheck.model.links import nvlink_pairs_from_state
from rigcheck.model.selection import gpu_indices, select_gpus
from rigcheck.model.snapshot import Diagnostic
from tests.support.cli import Rigcheck
from tests.support.snapshots import healthy_8x_h100, make_gpu, make_snapshot, nvlinks

FIXTURES = Path(__file__).parent.parent / "fixtures"
H100 = str(FIXTURES / "snapshots" / "healthy-8x-h100.json")
NO_GPU = str(FIXTURES / "snapshots" / "no-gpu.json")
TOPO_4NIC = str(FIXTURES / "corpus" / "topo" / "004-4x-rtx6000ada-node-sys-4nic-spaces.txt")


# --- the pure narrowing ---------------------------------------------------------------------------------------


def test_select_keeps_the_gpus_their_pairs_and_matrix() -> None:
    snap = healthy_8x_h100()
    narrowed = select_gpus(snap, [5, 2])
    assert [g.index for g in narrowed.gpus] == [2, 5]
    assert [(p.a, p.b) for p in narrowed.pairs] == [(2, 5)]
    assert narrowed.topology is not None
    assert narrowed.topology.labels == ["GPU2", "GPU5"]
    assert narrowed.topology.matrix == [["X", "NV18"], ["NV18", "X"]]
    assert [g.index for g in narrowed.topology.gpus] == [2, 5]
    assert narrowed.gpu_selection == [2, 5]
    kept_buses = {g.pci_bus_id for g in narrowed.gpus}
    assert len(narrowed.system.pcie_paths) == 2
    assert all(any(bus[-7:].lower() in (k or "").lower() for k in kept_buses) for bus in narrowed.system.pcie_paths)
    # pure: the input is untouched, and the node facts travel whole
    assert len(snap.gpus) == 8
    assert snap.gpu_selection is None
    assert len(snap.topology.labels) == 8
    assert narrowed.host == snap.host
    assert narrowed.software == snap.software


def test_matrix_keeps_nic_rows_and_columns() -> None:
    from rigcheck.readers.from_file import load_files

    snap = load_files([TOPO_4NIC])
    narrowed = select_gpus(snap, [1, 3])
    assert narrowed.topology is not None
    assert snap.topology is not None
    nics = [label for label in snap.topology.labels if label.startswith("NIC")]
    assert narrowed.topology.labels == ["GPU1", "GPU3", *nics]
    assert all(len(row) == len(narrowed.topology.labels) for row in narrowed.topology.matrix)
    old = snap.topology.labels
    for i, a in enumerate(narrowed.topology.labels):
        for j, b in enumerate(narrowed.topology.labels):
            assert narrowed.topology.matrix[i][j] == snap.topology.matrix[old.index(a)][old.index(b)]


def test_nvlink_pairs_only_among_the_selected() -> None:
    buses = [f"00000000:{0x18 + i:02X}:00.0" for i in range(3)]
    gpus = [
        make_gpu(0, nvlinks=nvlinks(2, remote=buses[1], remote_type="gpu")),
        make_gpu(1, nvlinks=nvlinks(2, remote=buses[0], remote_type="gpu")),
        make_gpu(2, nvlinks=[]),
    ]
    snap = make_snapshot(gpus)
    assert set(nvlink_pairs_from_state(select_gpus(snap, [0, 1]).gpus)) == {(0, 1)}
    assert set(nvlink_pairs_from_state(select_gpus(snap, [0, 2]).gpus)) == set()


def test_gpu_diagnostics_and_kernel_lines_of_dropped_gpus_go_node_ones_stay() -> None:
    snap = healthy_8x_h100().model_copy(
        update={
            "diagnostics": [Diagnostic(source="nvml", message="a", gpu=1), Diagnostic(source="nvml", message="b")],
            "kernel_events": [
                KernelEvent(kind="xid", code=79, pci_bus_id="PCI:0000:2a:00", message="fallen off"),
                KernelEvent(kind="xid", code=13, pci_bus_id="PCI:0000:18:00", message="graphics exception"),
                KernelEvent(kind="nvrm", message="a node line"),
            ],
        }
    )
    narrowed = select_gpus(snap, [0])
    assert [d.message for d in narrowed.diagnostics] == ["b"]
    assert [e.code for e in narrowed.kernel_events] == [13, None]


def test_findings_name_only_selected_gpus_and_keep_node_findings() -> None:
    snap = healthy_8x_h100()
    snap.gpus[6].temp_c = 95.0  # a hot GPU left out must not be reported
    findings = run_checks(select_gpus(snap, [0, 3]))
    assert {f.gpu for f in findings if f.gpu is not None} <= {0, 3}
    assert all(set(f.pair) <= {0, 3} for f in findings if f.pair is not None)
    assert any(f.subject == "host" for f in findings)
    assert not any(f.gpu == 6 for f in findings)
    assert any(f.gpu == 6 for f in run_checks(snap))


def test_an_absent_index_names_the_gpus_there_are() -> None:
    with pytest.raises(UsageError, match=r"no GPU 8, 9 .* the GPUs here are 0, 1, 2, 3, 4, 5, 6, 7$"):
        select_gpus(healthy_8x_h100(), [0, 8, 9])
    assert gpu_indices(make_snapshot([])) == []


# --- the commands ---------------------------------------------------------------------------------------------


def test_doctor_json_says_which_gpus(rigcheck: Rigcheck) -> None:
    code, out, _ = rigcheck("doctor", "--from", H100, "--gpus", "4,1", "--json")
    doc = json.loads(out)
    assert code == 0
    assert doc["snapshot"]["gpu_selection"] == [1, 4]
    assert [g["index"] for g in doc["snapshot"]["gpus"]] == [1, 4]
    _, out, _ = rigcheck("doctor", "--from", H100, "--json")
    assert "gpu_selection" not in json.loads(out)["snapshot"]  # without --gpus: written as before
    _, out, _ = rigcheck("doctor", "--from", H100, "--gpus", "4,1")
    assert "GPUs: 2 × NVIDIA H100 80GB HBM3 (only these: --gpus 1,4)" in out


@pytest.mark.parametrize("command", [["power"], ["thermal"], ["topo"]])
def test_power_thermal_topo_list_the_selected(command: list[str], rigcheck: Rigcheck) -> None:
    code, out, err = rigcheck(*command, "--from", H100, "--gpus", "2,7", "--json")
    assert code == 0, err
    assert [g["index"] for g in json.loads(out)["gpus"]] == [2, 7]


def test_snapshot_and_topo_file_narrowed(rigcheck: Rigcheck) -> None:
    _, out, _ = rigcheck("snapshot", "--from", H100, "--gpus", "3")
    assert json.loads(out)["gpu_selection"] == [3]
    code, out, err = rigcheck("topo", "--from", TOPO_4NIC, "--gpus", "0,2", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert [p["a"] for p in doc["pairs"]] == [0]
    assert [p["b"] for p in doc["pairs"]] == [2]


@pytest.mark.parametrize(
    ("gpus", "says"),
    [("9", "no GPU 9 in this snapshot; the GPUs here are 0, 1, 2"), ("a,b", "GPU indices separated by commas")],
)
def test_bad_gpus_is_one_usage_line(gpus: str, says: str, rigcheck: Rigcheck) -> None:
    for command in (["doctor"], ["power"], ["thermal"], ["snapshot"], ["topo"]):
        code, out, err = rigcheck(*command, "--from", H100, "--gpus", gpus)
        assert code == 2
        assert out == ""
        assert says in err, err
        assert len(err.strip().splitlines()) == 1, err


def test_no_gpu_rule_wins_over_gpus(rigcheck: Rigcheck) -> None:
    code, out, _ = rigcheck("doctor", "--from", NO_GPU, "--gpus", "0", "--json")
    assert code == 1
    assert any(f["id"] == "health.no-gpu" for f in json.loads(out)["findings"])

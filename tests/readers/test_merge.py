"""`--from A --from B …`: several real outputs combined into one snapshot (readers/merge.py).

The inputs are corpus files; where two are of one machine the corpus MANIFEST says so (h100-vm/ is one VM;
the 3x A6000 topo + nvlink pair; the 4x RTX 6000 Ada table + topo pair; Princeton's H100 table + -q).
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import jsonschema
import pytest

from rigcheck.errors import InputError
from rigcheck.model import Missing, snapshot_from_json, snapshot_to_dict, snapshot_to_json
from rigcheck.model.schema import snapshot_schema
from rigcheck.model.snapshot import Diagnostic, P2PStatus, Snapshot
from rigcheck.readers.from_file import load_file, load_files
from rigcheck.readers.merge_fields import MERGE_SOURCE
from tests.support.cli import Rigcheck

CORPUS = Path(__file__).parent.parent / "fixtures" / "corpus"
H100 = CORPUS / "h100-vm"
A6000_TOPO = CORPUS / "topo/014-3xa6000-nv4-bridge-pair-plus-pcie-ansi.txt"
A6000_NVLINK = CORPUS / "nvlink/002-3xa6000-bridge-pair-third-inactive.txt"
ADA_TABLE = CORPUS / "smi/001-4x-rtx6000ada-575-truncated-names.txt"
ADA_TOPO = CORPUS / "topo/004-4x-rtx6000ada-node-sys-4nic-spaces.txt"
A5000_XML = CORPUS / "smi-xml/005-2xa5000-590-v13.xml"
NV2_TOPO = CORPUS / "topo/006-2gpu-nv2-minimal-no-legend.txt"


def load(*paths: Path | str) -> Snapshot:
    return load_files([str(p) for p in paths])


def merge_notes(snap: Snapshot) -> list[str]:
    return [d.message for d in snap.diagnostics if d.source == MERGE_SOURCE]


# --- one machine, several outputs ------------------------------------------------------------------


def test_h100_vm_outputs_make_one_gpu() -> None:
    """Every output of the one H100 VM: the facts its README lists, each from the file that holds it."""
    snap = load(H100 / "q.xml", H100 / "topo-m.txt", H100 / "nvlink-s.txt", H100 / "q.txt", H100 / "topo-p2p-r.txt")
    assert len(snap.gpus) == 1
    gpu = snap.gpus[0]
    assert (gpu.name, gpu.pci_bus_id) == ("NVIDIA H100 80GB HBM3", "00000000:00:06.0")
    assert gpu.power_draw_w == pytest.approx(74.21)  # q.xml's, the first file
    assert (gpu.power_limit_w, gpu.power_default_limit_w, gpu.power_min_limit_w, gpu.power_max_limit_w) == (
        700,
        700,
        200,
        700,
    )
    assert (gpu.temp_slowdown_c, gpu.temp_shutdown_c, gpu.temp_max_operating_c) == (89, 95, 87)
    assert (gpu.pcie_gen_current, gpu.pcie_gen_max, gpu.pcie_width_current, gpu.pcie_width_max) == (5, 5, 16, 16)
    assert gpu.clock_event_reasons_active == ["idle"]
    assert (gpu.persistence_mode, gpu.ecc_enabled, gpu.mig_enabled) == (True, True, False)
    assert gpu.cpu_affinity == "0-15"  # only topo -m has it
    assert "cpu_affinity" not in gpu.missing
    assert snap.topology is not None
    assert snap.topology.gpus[0].gpu_numa_id == "N/A"
    assert [(p.kind, Path(p.path or "").name) for p in snap.source.parts] == [
        ("nvidia-smi-xml", "q.xml"),
        ("topo", "topo-m.txt"),
        ("none", "nvlink-s.txt"),
        ("nvidia-smi-q", "q.txt"),
        ("topo-p2p", "topo-p2p-r.txt"),
    ]
    assert snap.source.kind == "combined"
    notes = merge_notes(snap)
    assert any("nvlink-s.txt is empty" in n for n in notes)
    # q.txt was read seconds after q.xml: its readings differ and are reported, not taken
    moved = next(n for n in notes if "readings differ" in n)
    assert "q.xml" in moved
    assert "q.txt" in moved
    assert "power_draw_w 74.21 vs 74.53" in moved


def test_missing_reason_is_the_most_informative_whatever_the_order() -> None:
    """topo -m holds no fan speed (not_in_source); -q -x prints N/A for it (reported_na): N/A wins."""
    for paths in ((H100 / "topo-m.txt", H100 / "q.xml"), (H100 / "q.xml", H100 / "topo-m.txt")):
        gpu = load(*paths).gpus[0]
        assert gpu.fan_percent is None
        assert gpu.missing["fan_percent"] == Missing.REPORTED_NA
        assert gpu.power_limit_w == 700  # and the topo file's nulls never hide a value
        assert gpu.cpu_affinity == "0-15"


def test_3xa6000_topo_and_nvlink_status() -> None:
    """The MANIFEST's same-machine pair: links from topo -m, speeds and names from nvlink -s."""
    for paths in ((A6000_TOPO, A6000_NVLINK), (A6000_NVLINK, A6000_TOPO)):
        snap = load(*paths)
        assert [g.name for g in snap.gpus] == ["NVIDIA RTX A6000"] * 3
        assert snap.gpus[0].uuid == "GPU-5baec991-de63-c196-1766-04c38407e133"
        pair = snap.pair(0, 1)
        assert pair is not None
        assert (pair.link, pair.nvlinks) == ("NV4", 4)
        assert [(link.link, link.active, link.speed_gbps) for link in snap.gpus[1].nvlinks or []] == [
            (n, True, 14.062) for n in range(4)
        ]
        assert not any(link.active for link in snap.gpus[2].nvlinks or [])  # "all links are inActive"
        assert [g.cpu_affinity for g in snap.gpus] == ["0-31,64-95"] * 3
        assert merge_notes(snap) == []  # nothing disagrees, each file adds something
        # the nvlink file's own note is kept, with its file named and its GPU
        inactive = next(d for d in snap.diagnostics if "inActive" in d.message)
        assert inactive.gpu == 2
        assert inactive.message.startswith(str(A6000_NVLINK))


def test_4x_rtx6000ada_table_and_topo() -> None:
    snap = load(ADA_TABLE, ADA_TOPO)
    assert [g.pci_bus_id for g in snap.gpus] == [
        "00000000:01:00.0",
        "00000000:41:00.0",
        "00000000:C1:00.0",
        "00000000:E1:00.0",
    ]
    assert [g.power_limit_w for g in snap.gpus] == [300] * 4
    assert [g.cpu_affinity for g in snap.gpus] == ["0-31", "0-31", "32-63", "32-63"]
    assert [g.numa_node for g in snap.gpus] == [0, 0, 1, 1]
    assert [(n.label, n.name) for n in snap.nics] == [(f"NIC{i}", f"mlx5_{i}") for i in range(4)]
    assert {(p.a, p.b): p.link for p in snap.pairs} == {
        (0, 1): "NODE",
        (0, 2): "SYS",
        (0, 3): "SYS",
        (1, 2): "SYS",
        (1, 3): "SYS",
        (2, 3): "NODE",
    }
    assert merge_notes(snap) == []


def test_princeton_h100_table_and_q_keep_the_precise_figures() -> None:
    """The table prints "72W" and a cut name; -q prints "72.02 W" and the full name: the finer one wins, no
    conflict, in either order."""
    table, q = CORPUS / "smi/003-1xh100-545.txt", CORPUS / "smi-q/001-1xh100-545-full-event-reasons-tlimit.txt"
    for paths in ((table, q), (q, table)):
        snap = load(*paths)
        gpu = snap.gpus[0]
        assert gpu.power_draw_w == pytest.approx(72.02)
        assert gpu.name == "NVIDIA H100 80GB HBM3"
        assert gpu.power_limit_w == 700
        assert not any("power_draw_w" in n for n in merge_notes(snap))


def test_table_names_cut_with_dots_give_way_to_the_full_name() -> None:
    from rigcheck.model import Gpu
    from rigcheck.readers.merge_fields import Merger

    kept, other = Gpu(index=0, name="NVIDIA RTX 6000 Ada Gene..."), Gpu(index=0, name="NVIDIA RTX 6000 Ada Generation")
    merger = Merger("table.txt")
    merger.merge(kept, other, scope="GPU0", path="q.xml")
    assert kept.name == "NVIDIA RTX 6000 Ada Generation"
    assert merger.diagnostics == []


def test_topo_and_p2p_matrix_fill_one_pair() -> None:
    """topo -m gives the link, topo -p2p rw (the file's name says rw) the read and write status. Both were posted
    by one user for his 2x RTX 5090 rig (club-3090 issues #1229 and #1124)."""
    topo, p2p = CORPUS / "topo/017-2x5090-phb-tabs.txt", CORPUS / "topo-p2p/201-2x5090-p2p-rw-gns-tabs-dr-legend.txt"
    for paths in ((topo, p2p), (p2p, topo)):
        snap = load(*paths)
        assert len(snap.gpus) == 2
        assert len(snap.pairs) == 1
        pair = snap.pairs[0]
        assert (pair.a, pair.b, pair.link) == (0, 1, "PHB")
        assert (pair.p2p_read, pair.p2p_write) == (P2PStatus.GPU_NOT_SUPPORTED, P2PStatus.GPU_NOT_SUPPORTED)
        assert snap.topology is not None
        assert [p.kind for p in snap.source.parts] == ["topo" if x == topo else "topo-p2p" for x in paths]
        assert merge_notes(snap) == []


def test_p2p_matrices_that_disagree_keep_the_first_and_say_so() -> None:
    """GNS for the pair 0-1 in one matrix, OK in the other: kept as the first file says, with a note naming both."""
    gns, ok = (
        CORPUS / "topo-p2p/201-2x5090-p2p-rw-gns-tabs-dr-legend.txt",
        CORPUS / "topo-p2p/202-8gpu-vfio-guest-p2p-r-all-ok.txt",
    )
    snap = load(gns, ok)
    pair = snap.pair(0, 1)
    assert pair is not None
    assert pair.p2p_read == P2PStatus.GPU_NOT_SUPPORTED
    assert len(snap.pairs) == 28  # the 8-GPU matrix's other pairs are added
    note = next(n for n in merge_notes(snap) if "p2p_read" in n)
    assert note == f"GPU0-GPU1 p2p_read: gpu_not_supported in {gns}, ok in {ok}; kept {gns}'s"
    reverse = load(ok, gns).pair(0, 1)
    assert reverse is not None
    assert reverse.p2p_read == P2PStatus.OK


# --- the check from the issue ----------------------------------------------------------------------


def test_doctor_json_power_from_the_xml_links_from_the_topo(rigcheck: Rigcheck) -> None:
    """`doctor --from X.xml --from topo.txt --json`: the power figures of the first, the links of the second.

    (The two files are of two machines that a merge cannot tell apart: topo -m carries no bus id or UUID.)"""
    code, out, err = rigcheck("doctor", "--from", str(A5000_XML), "--from", str(NV2_TOPO), "--json")
    assert code in (0, 1), err
    snap = json.loads(out)["snapshot"]
    assert [(g["power_draw_w"], g["power_limit_w"]) for g in snap["gpus"]] == [(6.52, 230.0), (13.59, 230.0)]
    assert [(p["a"], p["b"], p["link"], p["kind"], p["nvlinks"]) for p in snap["pairs"]] == [(0, 1, "NV2", "nvlink", 2)]
    assert snap["topology"]["matrix"] == [["X", "NV2"], ["NV2", "X"]]
    assert [p["path"] for p in snap["source"]["parts"]] == [str(A5000_XML), str(NV2_TOPO)]
    jsonschema.validate(snap, snapshot_schema())


def test_doctor_json_same_machine_xml_and_topo(rigcheck: Rigcheck) -> None:
    code, out, err = rigcheck("doctor", "--from", str(H100 / "q.xml"), "--from", str(H100 / "topo-m.txt"), "--json")
    assert code in (0, 1), err
    snap = json.loads(out)["snapshot"]
    gpu = snap["gpus"][0]
    assert (gpu["power_draw_w"], gpu["power_limit_w"], gpu["cpu_affinity"]) == (74.21, 700.0, "0-15")
    assert snap["topology"]["labels"] == ["GPU0"]
    assert err == ""  # nothing to say: no conflict, both files contribute


def test_every_command_takes_several_files(rigcheck: Rigcheck) -> None:
    files = ["--from", str(A6000_NVLINK), "--from", str(A6000_TOPO)]
    for command in ("doctor", "power", "thermal", "topo"):
        code, out, err = rigcheck(command, *files, "--json")
        assert code in (0, 1), (command, err)
        assert json.loads(out)
    code, out, _ = rigcheck("snapshot", *files)
    assert code == 0
    assert json.loads(out)["source"]["kind"] == "combined"
    code, out, _ = rigcheck("topo", *files, "--json")
    assert json.loads(out)["matrix"][0] == ["X", "NV4", "NODE"]


# --- conflicts: reported, never silently resolved ---------------------------------------------------


def test_conflicting_limit_keeps_the_first_and_names_both_files(tmp_path: Path) -> None:
    other = tmp_path / "q-650.txt"
    other.write_text(
        (H100 / "q.txt")
        .read_text()
        .replace(
            "Current Power Limit                            : 700.00 W",
            "Current Power Limit                            : 650.00 W",
        )
    )
    snap = load(H100 / "q.xml", other)
    assert snap.gpus[0].power_limit_w == 700
    note = next(n for n in merge_notes(snap) if "power_limit_w" in n)
    assert str(H100 / "q.xml") in note
    assert str(other) in note
    assert "700" in note
    assert "650" in note
    assert load(other, H100 / "q.xml").gpus[0].power_limit_w == 650  # the first file wins, whichever it is


def test_a_fault_in_either_file_is_kept(tmp_path: Path, rigcheck: Rigcheck) -> None:
    """Health counters only grow: the worse value is kept, so a merge never passes a broken machine."""
    faulty = tmp_path / "q-later.txt"
    text = (H100 / "q.txt").read_text()
    text = text.replace(
        "        Uncorrectable Error                            : 0",
        "        Uncorrectable Error                            : 2",
        1,
    )
    text = text.replace(
        "        Pending                                        : No",
        "        Pending                                        : Yes",
        1,
    )
    text = text.replace(
        "            DRAM Uncorrectable                         : 0",
        "            DRAM Uncorrectable                         : 3",
        1,
    )
    faulty.write_text(text)
    alone = load_file(str(faulty)).gpus[0]
    assert (alone.remapped_rows_uncorrectable, alone.ecc_uncorrected_volatile) == (2, 3)  # the edits took
    for paths in ((H100 / "q.xml", faulty), (faulty, H100 / "q.xml")):
        snap = load(*paths)
        gpu = snap.gpus[0]
        assert gpu.remapped_rows_uncorrectable == 2
        assert gpu.remapped_rows_pending is True
        assert gpu.ecc_uncorrected_volatile == 3
        assert any("remapped_rows_uncorrectable" in n and "worse" in n for n in merge_notes(snap))
    code, _, _ = rigcheck("doctor", "--from", str(H100 / "q.xml"), "--from", str(faulty), "--json")
    healthy, _, _ = rigcheck("doctor", "--from", str(H100 / "q.xml"), "--json")
    assert (healthy, code) == (0, 1)


def test_outputs_of_two_machines_are_refused(rigcheck: Rigcheck) -> None:
    table = CORPUS / "smi/002-2x2080ti-550.txt"
    with pytest.raises(InputError, match="different machines") as info:
        load(table, A5000_XML)
    assert str(table) in str(info.value)
    assert str(A5000_XML) in str(info.value)
    code, out, err = rigcheck("doctor", "--from", str(table), "--from", str(A5000_XML))
    assert code == 2
    assert out == ""
    assert len(err.strip().splitlines()) == 1


def test_snapshots_of_two_hosts_are_refused() -> None:
    snaps = Path(__file__).parent.parent / "fixtures" / "snapshots"
    with pytest.raises(InputError, match=r"host 'titan-workstation'.*host 'club3090'|different machines"):
        load(snaps / "2x-titan-rtx-nv2.json", snaps / "2x-3090-phb-throttling.json")


# --- no file is dropped silently ---------------------------------------------------------------------


def test_empty_file_is_a_note_in_a_combination_and_an_error_alone(rigcheck: Rigcheck) -> None:
    with pytest.raises(InputError, match="empty file"):
        load(H100 / "nvlink-s.txt")
    code, out, err = rigcheck("doctor", "--from", str(H100 / "q.xml"), "--from", str(H100 / "nvlink-s.txt"), "--json")
    assert code == 0
    assert "nvlink-s.txt is empty" in err
    parts = json.loads(out)["snapshot"]["source"]["parts"]
    assert parts[1] == {"kind": "none", "path": str(H100 / "nvlink-s.txt"), "replayed_from": None}
    with pytest.raises(InputError, match="every file is empty"):
        load(H100 / "nvlink-s.txt", H100 / "nvlink-s.txt")


def test_a_file_that_adds_nothing_is_named() -> None:
    snap = load(H100 / "topo-m.txt", H100 / "q.xml", H100 / "topo-m.txt")
    assert any("given twice" in n for n in merge_notes(snap))
    q_again = load(H100 / "q.xml", H100 / "q.txt")
    assert any(n.startswith(f"{H100 / 'q.txt'} adds nothing") for n in merge_notes(q_again))


def test_gpus_some_files_lack_are_named() -> None:
    """nvlink -s of GPU 7 alone beside an 8-GPU topo -m: GPU 7 gets the links, and the note says which GPUs the
    nvlink file does not hold."""
    nvlink, topo = (
        CORPUS / "nvlink/004-1xa100-gpu7-12links-25gbs.txt",
        CORPUS / "topo/008-8xa100-nv12-realigned-columns.txt",
    )
    snap = load(topo, nvlink)
    assert len(snap.gpus) == 8
    assert len(snap.gpus[7].nvlinks or []) == 12
    assert snap.gpus[0].nvlinks is None
    note = next(n for n in merge_notes(snap) if n.startswith(str(nvlink)))
    assert "GPU0, GPU1, GPU2, GPU3, GPU4, GPU5, GPU6" in note


def test_stdin_can_be_one_of_the_files_but_only_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(A6000_NVLINK.read_bytes())))
    snap = load(A6000_TOPO, "-")
    assert snap.gpus[0].nvlinks is not None
    assert [p.path for p in snap.source.parts] == [str(A6000_TOPO), "-"]
    with pytest.raises(InputError, match="only once"):
        load("-", "-")


# --- the combined snapshot itself ----------------------------------------------------------------------


def test_one_file_reads_exactly_as_before() -> None:
    alone = load(H100 / "q.xml")
    assert alone == load_file(str(H100 / "q.xml"))
    assert "parts" not in snapshot_to_dict(alone)["source"]  # single-file JSON unchanged


def test_combined_snapshot_is_valid_and_replays(tmp_path: Path, rigcheck: Rigcheck) -> None:
    snap = load(A6000_TOPO, A6000_NVLINK)
    jsonschema.validate(snapshot_to_dict(snap), snapshot_schema())
    assert snapshot_from_json(snapshot_to_json(snap)) == snap
    saved = tmp_path / "combined.json"
    saved.write_text(snapshot_to_json(snap))
    replayed = load_file(str(saved))
    assert replayed.source.replayed_from == str(saved)
    assert [p.kind for p in replayed.source.parts] == ["topo", "nvlink-status"]
    code, out, _ = rigcheck("doctor", "--from", str(saved))
    assert code in (0, 1)
    assert f"combined: read from `nvidia-smi topo -m` output ({A6000_TOPO})" in out


def test_part_diagnostics_keep_their_source_and_name_their_file() -> None:
    alone = load_file(str(A6000_NVLINK)).diagnostics
    assert any("inActive" in d.message and d.gpu == 2 for d in alone)
    snap = load(A6000_TOPO, A6000_NVLINK)
    own = [d for d in snap.diagnostics if d.source != MERGE_SOURCE]
    assert own == [Diagnostic(source=d.source, message=f"{A6000_NVLINK}: {d.message}", gpu=d.gpu) for d in alone]


def test_vbios_from_the_file_that_holds_it_and_a_conflict_keeps_the_first(tmp_path: Path) -> None:
    """The VBIOS version names the card, as its name does: taken from whichever file holds it (the table does
    not), and where two files disagree the first file's is kept and a note names both."""
    for paths in ((H100 / "nvidia-smi.txt", H100 / "q.txt"), (H100 / "q.txt", H100 / "nvidia-smi.txt")):
        gpu = load(*paths).gpus[0]
        assert gpu.vbios_version == "96.00.DA.00.0C"
        assert "vbios_version" not in gpu.missing
    reflashed = tmp_path / "q-reflashed.txt"
    reflashed.write_text((H100 / "q.txt").read_text().replace(": 96.00.DA.00.0C", ": 96.00.DA.00.0E"))
    snap = load(H100 / "q.xml", reflashed)
    assert snap.gpus[0].vbios_version == "96.00.DA.00.0C"
    note = next(n for n in merge_notes(snap) if "vbios_version" in n)
    assert str(H100 / "q.xml") in note
    assert str(reflashed) in note
    assert "96.00.DA.00.0E" in note
    assert load(reflashed, H100 / "q.xml").gpus[0].vbios_version == "96.00.DA.00.0E"

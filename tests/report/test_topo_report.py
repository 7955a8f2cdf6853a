"""The topo document (the `rigcheck topo --json` contract, rigcheck.model.topo) and its renderings
(rigcheck.report.topo)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.console import Console

from rigcheck.model import GpuPair, TopoGpu, TopoMatrix
from rigcheck.model.topo import (
    TopoDocument,
    snapshot_topo_document,
    sorted_pairs,
    summarize_topology,
    topo_document,
    topology_from_pairs,
)
from rigcheck.readers.from_file import load_file
from rigcheck.readers.smi.topo import pairs_from_topology, parse_topo
from rigcheck.report.topo import topo_html, topo_markdown, topology_renderable

CORPUS = Path(__file__).parent.parent / "fixtures" / "corpus"

NV4 = "NV4: 4 bonded NVLinks — direct NVLink, the fastest path: peer-to-peer copies bypass PCIe and the CPU."
NODE = (
    "NODE: connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node"
    " — across PCIe host bridges within one CPU socket: traffic crosses the CPU's internal fabric."
)
SYS = (
    "SYS: connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)"
    " — across CPU sockets (QPI/UPI/Infinity Fabric): the slowest path, P2P usually unavailable"
)
CONTRACT_KEYS = {"schema", "labels", "matrix", "gpus", "nics", "pairs"}

BYTES = " DDP and ZeRO-1/2 move the same bytes per step over it, ZeRO-3/FSDP 1.5x"
PLAN = " (`rigcheck plan --params N --gpus G` times a step)"


def _load(rel: str) -> tuple[TopoMatrix, list[GpuPair]]:
    topo = parse_topo((CORPUS / rel).read_text(encoding="utf-8"), rel)
    return topo, pairs_from_topology(topo)


def _as_json(topo: TopoMatrix, pairs: list[GpuPair]) -> dict[str, object]:
    doc = json.loads(topo_document(topo, pairs).model_dump_json(by_alias=True))
    assert isinstance(doc, dict)
    return doc


def _render(doc: TopoDocument) -> str:
    console = Console(record=True, width=120, color_system=None)
    console.print(topology_renderable(doc), crop=False)  # as the CLI prints a report: a pipe's lines whole
    return console.export_text()


def _text(topo: TopoMatrix, pairs: list[GpuPair]) -> str:
    return _render(topo_document(topo, pairs))


def test_dict_for_3xa6000_is_exact() -> None:
    doc = _as_json(*_load("topo/014-3xa6000-nv4-bridge-pair-plus-pcie-ansi.txt"))
    assert set(doc) >= CONTRACT_KEYS
    assert {k: doc[k] for k in CONTRACT_KEYS} == {
        "schema": "rigcheck.topo/1",
        "labels": ["GPU0", "GPU1", "GPU2"],
        "matrix": [["X", "NV4", "NODE"], ["NV4", "X", "NODE"], ["NODE", "NODE", "X"]],
        "gpus": [
            {"index": 0, "cpu_affinity": "0-31,64-95", "numa_affinity": "0", "gpu_numa_id": None},
            {"index": 1, "cpu_affinity": "0-31,64-95", "numa_affinity": "0", "gpu_numa_id": None},
            {"index": 2, "cpu_affinity": "0-31,64-95", "numa_affinity": "0", "gpu_numa_id": None},
        ],
        "nics": [],
        "pairs": [
            {"a": 0, "b": 1, "link": "NV4", "kind": "nvlink", "nvlinks": 4, "explanation": NV4},
            {"a": 0, "b": 2, "link": "NODE", "kind": "numa_local", "nvlinks": None, "explanation": NODE},
            {"a": 1, "b": 2, "link": "NODE", "kind": "numa_local", "nvlinks": None, "explanation": NODE},
        ],
    }
    assert doc["legend"] == "new"
    assert doc["summary"] == (
        "3 GPUs: NVLink (NV4) for 1 of 3 pairs, the rest over NODE; collectives run at the slowest path, "
        "PCIe across the CPU's host bridges:" + BYTES
    )


def test_dict_for_4x_rtx6000ada_with_nics_and_numa() -> None:
    doc = _as_json(*_load("topo/004-4x-rtx6000ada-node-sys-4nic-spaces.txt"))
    assert doc["labels"] == ["GPU0", "GPU1", "GPU2", "GPU3", "NIC0", "NIC1", "NIC2", "NIC3"]
    assert doc["matrix"][4] == ["NODE", "NODE", "SYS", "SYS", "X", "PIX", "SYS", "SYS"]
    assert doc["nics"] == [{"label": f"NIC{i}", "name": f"mlx5_{i}"} for i in range(4)]
    assert doc["gpus"][2] == {"index": 2, "cpu_affinity": "32-63", "numa_affinity": "1", "gpu_numa_id": "N/A"}
    pairs = doc["pairs"]
    assert isinstance(pairs, list)
    assert [(p["a"], p["b"], p["link"]) for p in pairs] == [
        (0, 1, "NODE"),
        (0, 2, "SYS"),
        (0, 3, "SYS"),
        (1, 2, "SYS"),
        (1, 3, "SYS"),
        (2, 3, "NODE"),
    ]
    assert pairs[1] == {
        "a": 0,
        "b": 2,
        "link": "SYS",
        "kind": "cross_numa",
        "nvlinks": None,
        "explanation": SYS + " (GPU0 is on NUMA node 0, GPU2 on NUMA node 1).",
    }
    assert doc["summary"] == (
        "4 GPUs over NODE/SYS: no NVLink; every collective crosses the link between CPU sockets:" + BYTES + PLAN
    )


def test_dict_for_single_gpu_vm_and_old_nic_name() -> None:
    doc = _as_json(*_load("h100-vm/topo-m.txt"))
    assert {k: doc[k] for k in CONTRACT_KEYS} == {
        "schema": "rigcheck.topo/1",
        "labels": ["GPU0"],
        "matrix": [["X"]],
        "gpus": [{"index": 0, "cpu_affinity": "0-15", "numa_affinity": "0", "gpu_numa_id": "N/A"}],
        "nics": [],
        "pairs": [],
    }
    old = _as_json(*_load("topo/009-4xk40m-phb-soc-mlx4-old-legend.txt"))
    assert old["nics"] == [{"label": "mlx4_0", "name": "mlx4_0"}]
    assert old["legend"] == "old"
    assert old["gpus"] == [
        {"index": i, "cpu_affinity": aff, "numa_affinity": None, "gpu_numa_id": None}
        for i, aff in enumerate(["0-5", "0-5", "6-11", "6-11"])
    ]


def test_vm_sys_on_one_numa_node_says_so() -> None:
    doc = _as_json(*_load("topo/013-4xa10-all-sys-vm-2nic.txt"))
    pairs = doc["pairs"]
    assert isinstance(pairs, list)
    assert len(pairs) == 6
    for p in pairs:
        assert p["explanation"] == SYS + " (both report NUMA node 0, as VMs that hide the host's sockets often do)."
    assert doc["nics"] == [{"label": "NIC0", "name": "mlx5_0"}, {"label": "NIC1", "name": "mlx5_1"}]


def test_no_legend_means_nic_names_are_null() -> None:
    doc = _as_json(*_load("topo/016-8x4090-all-sys-2nic-no-legend.txt"))
    assert doc["nics"] == [{"label": "NIC0", "name": None}, {"label": "NIC1", "name": None}]
    assert doc["legend"] == "none"
    assert len(doc["pairs"]) == 28  # type: ignore[arg-type]


def test_explanations_are_one_sentence_everywhere() -> None:
    for path in sorted((CORPUS / "topo").glob("*.txt")):
        doc = _as_json(*_load(f"topo/{path.name}"))
        for p in doc["pairs"]:  # type: ignore[attr-defined]
            text = p["explanation"]
            assert text.endswith(".")
            assert text.replace("e.g.", "eg").count(". ") == 0, text
            assert text.startswith(p["link"] + ":")
            assert "\n" not in text


@pytest.mark.parametrize(
    ("rel", "summary"),
    [
        (
            "topo/007-8xh100-nv18-2numa-no-nics-spaces.txt",
            "8 GPUs: all pairs NVLink (NV18): 450-900 GB/s per direction by GPU model, several times any PCIe slot: "
            "the wire is rarely what limits DDP, ZeRO or FSDP",
        ),
        (
            "topo/017-2x5090-phb-tabs.txt",
            "2 GPUs over PHB: no NVLink; every collective crosses PCIe through the CPU:" + BYTES + PLAN,
        ),
        (
            "topo/010-2x2080ti-pix-numa1.txt",
            "2 GPUs over PIX: no NVLink; every collective crosses PCIe through a switch:" + BYTES + PLAN,
        ),
        ("h100-vm/topo-m.txt", "1 GPU: no GPU pairs, so nothing travels between GPUs"),
        (
            "topo/026-8xv100-sxm2-hybrid-cube-mesh-nv1-nv2-nic.txt",
            "8 GPUs: NVLink (NV2/NV1) for 16 of 28 pairs, the rest over SYS: the NVLink pairs close a ring through "
            "every GPU, so NCCL builds its rings (and trees) over the NVLink links, several at once to use them all; "
            "the pairs without NVLink carry none of the collective, so the slowest path does not limit it",
        ),
    ],
)
def test_summary(rel: str, summary: str) -> None:
    assert summarize_topology(*_load(rel)) == summary


def test_render_plain_text() -> None:
    topo, pairs = _load("topo/014-3xa6000-nv4-bridge-pair-plus-pcie-ansi.txt")
    text = _text(topo, pairs)
    assert "\x1b[" not in text
    for word in ("GPU0", "GPU1", "GPU2", "NV4", "NODE", "CPU Affinity", "NUMA Affinity", "0-31,64-95"):
        assert word in text
    assert "GPU NUMA ID" not in text  # absent in this file's header
    flat = " ".join(text.split())
    # One line per link kind, best first; a lone pair gets its own sentence, a group the code's.
    first = flat.index("NV4 GPU pair 0–1: " + NV4.removeprefix("NV4: "))
    second = flat.index("NODE GPU pairs 0–2, 1–2: " + NODE.removeprefix("NODE: "))
    assert first < second
    assert flat.rstrip().endswith("PCIe across the CPU's host bridges:" + BYTES)


def test_render_nics_and_unknown_names() -> None:
    text = " ".join(_text(*_load("topo/004-4x-rtx6000ada-node-sys-4nic-spaces.txt")).split())
    assert "NICs: NIC0 = mlx5_0, NIC1 = mlx5_1, NIC2 = mlx5_2, NIC3 = mlx5_3" in text
    no_legend = " ".join(_text(*_load("topo/016-8x4090-all-sys-2nic-no-legend.txt")).split())
    assert "NIC0 = name not printed" in no_legend


def test_render_colours_by_kind() -> None:
    topo, pairs = _load("topo/014-3xa6000-nv4-bridge-pair-plus-pcie-ansi.txt")
    console = Console(record=True, width=120, color_system="standard", force_terminal=True)
    console.print(topology_renderable(topo_document(topo, pairs)))
    coloured = console.export_text(styles=True)
    assert "\x1b[32mNV4" in coloured  # green
    assert "\x1b[33mNODE" in coloured  # yellow
    sys_topo, sys_pairs = _load("topo/024-4xm60-azure-all-soc-old-legend.txt")
    console = Console(record=True, width=120, color_system="standard", force_terminal=True)
    console.print(topology_renderable(topo_document(sys_topo, sys_pairs)))
    assert "\x1b[31mSOC" in console.export_text(styles=True)  # red


def test_topology_from_pairs() -> None:
    pairs = [
        GpuPair(a=0, b=1, link="NV12", kind="nvlink", nvlinks=12),
        GpuPair(a=0, b=2, link=None),
        GpuPair(a=1, b=2, link="SYS", kind="cross_numa"),
    ]
    gpus = [TopoGpu(index=0, cpu_affinity="0-7", numa_affinity="0"), TopoGpu(index=2, numa_affinity="1")]
    topo = topology_from_pairs(3, pairs, gpus)
    assert topo.labels == ["GPU0", "GPU1", "GPU2"]
    assert topo.matrix == [["X", "NV12", "?"], ["NV12", "X", "SYS"], ["?", "SYS", "X"]]
    assert topo.gpus == [gpus[0], TopoGpu(index=1), gpus[1]]
    assert topo.nics == []
    assert topo.legend == "none"
    doc = _as_json(topo, pairs)
    assert doc["pairs"][1] == {  # type: ignore[index]
        "a": 0,
        "b": 2,
        "link": None,
        "kind": None,
        "nvlinks": None,
        "explanation": "GPU0 and GPU2: the link between them is not in this input.",
    }
    assert doc["summary"] == (
        "3 GPUs: NVLink (NV12) for 1 of 3 pairs, the rest over SYS; collectives run at the slowest path, "
        "the link between CPU sockets:" + BYTES + "; 1 pair not in this input (save "
        "`nvidia-smi topo -m > topo.txt` on the machine and add it with another `--from topo.txt`)"
    )
    assert [(p.a, p.b) for p in sorted_pairs(pairs)] == [(0, 1), (1, 2), (0, 2)]
    text = _text(topo, pairs)
    assert "?" in text


def test_topology_from_pairs_round_trips_a_parsed_matrix() -> None:
    topo, pairs = _load("topo/022-7gpu-gtx10-pix-phb-no-leading-tab.txt")
    rebuilt = topology_from_pairs(len(topo.gpus), pairs, topo.gpus)
    assert rebuilt.matrix == topo.matrix
    assert rebuilt.gpus == topo.gpus


def test_markdown_and_html_say_what_the_terminal_says() -> None:
    doc = topo_document(*_load("topo/004-4x-rtx6000ada-node-sys-4nic-spaces.txt"))
    md = topo_markdown(doc)
    assert md.startswith("# rigcheck topo\n")
    assert "| **GPU2** | SYS | SYS | X | NODE | SYS | SYS | NODE | NODE | 32-63 | 1 | N/A |" in md
    assert "NICs: NIC0 = mlx5_0, NIC1 = mlx5_1, NIC2 = mlx5_2, NIC3 = mlx5_3" in md
    assert "- `SYS` GPU pairs 0–2, 0–3, 1–2, 1–3: " in md
    assert f"**{doc.summary}**" in md
    html = topo_html(doc)
    assert html.count('class="link k-cross_numa"') == sum(row.count("SYS") for row in doc.matrix) == 32
    assert html.count('data-kind="self"') == 8
    assert doc.summary in html
    doc.gpus[0].cpu_affinity = "<b>0-31</b>"
    assert "&lt;b&gt;0-31&lt;/b&gt;" in topo_html(doc)
    assert "<b>0-31</b>" not in topo_html(doc)


# --- honest sentences where the input has no links --------------------------------------------------------------


def _doctor_topology(rel: str) -> TopoDocument:
    doc = snapshot_topo_document(load_file(str(CORPUS / rel)), affinities=False)
    assert doc is not None
    return doc


def test_gpus_without_links_say_the_topology_is_missing_not_that_nothing_travels() -> None:
    # nvlink/001 alone: 8 V100s, 28 pairs, no topo -m. No "?" grid, no "no GPU pairs" sentence.
    doc = _doctor_topology("nvlink/001-8xv100-6links-25.781.txt")
    assert doc.summary == (
        "8 GPUs: how they are linked is not in this input (save `nvidia-smi topo -m > topo.txt` on the machine and "
        "add it with another `--from topo.txt`); NVLink state: 6 of 6 links active on each of 8 GPUs"
    )
    text = " ".join(_render(doc).split())
    assert "nothing travels" not in text
    assert " ? " not in text
    assert "GPU0 X" not in text  # no matrix drawn
    md = topo_markdown(doc)
    assert "| **GPU0** |" not in md
    assert doc.summary in md
    html = topo_html(doc)
    assert 'class="topo"' not in html
    assert "how they are linked is not in this input" in html
    # the same matrix without link state (as `rigcheck topo` builds it from the pairs alone)
    bare = topo_document(topology_from_pairs(3, [], []), [])
    assert bare.summary.startswith("3 GPUs: how they are linked is not in this input (save `nvidia-smi topo -m")


def test_bridged_pair_from_link_state_is_counted_and_marked() -> None:
    # nvlink/002 alone: the A6000 bridge pair is known from link state; the pairs with GPU2 are not in the input.
    doc = _doctor_topology("nvlink/002-3xa6000-bridge-pair-third-inactive.txt")
    assert doc.matrix == [["X", "NV4", "?"], ["NV4", "X", "?"], ["?", "?", "X"]]
    nv = next(p for p in doc.pairs if p.link == "NV4")
    assert (nv.a, nv.b, nv.kind, nv.nvlinks) == (0, 1, "nvlink", 4)
    assert nv.explanation.endswith("(known from the GPUs' NVLink state, not from a topology matrix).")
    assert doc.summary.startswith(
        "3 GPUs: NVLink (NV4) for 1 of 3 pairs (GPU0-GPU1: known from the GPUs' NVLink state, not from a topology "
        "matrix); 2 pairs not in this input (save `nvidia-smi topo -m"
    )
    assert doc.summary.endswith("NVLink state (active/reported links): GPU0 4/4, GPU1 4/4, GPU2 0/4")
    text = " ".join(_render(doc).split())
    assert "? GPU pairs 0–2, 1–2: the link between them is not in this input." in text
    assert "not a link code" not in text


def test_a_matrix_from_topo_m_wins_over_link_state() -> None:
    doc = _doctor_topology("topo/014-3xa6000-nv4-bridge-pair-plus-pcie-ansi.txt")
    assert doc.matrix == [["X", "NV4", "NODE"], ["NV4", "X", "NODE"], ["NODE", "NODE", "X"]]
    assert "NVLink state" not in doc.summary


def test_pairs_of_a_lost_gpu_are_unknown_for_that_reason_and_one_gpu_keeps_its_grid() -> None:
    snaps = Path(__file__).parent.parent / "fixtures" / "snapshots"
    lost = snapshot_topo_document(load_file(str(snaps / "gpu-lost.json")))
    assert lost is not None
    assert lost.summary == "4 GPUs: NVLink (NV4) for 3 of 6 pairs; 3 pairs unknown (gpu_lost)"
    assert "topo -m" not in lost.summary  # a saved matrix would not bring a lost GPU back
    assert "? GPU pairs 0–2, 1–2, 2–3: the link between them is unknown (gpu_lost)." in " ".join(_render(lost).split())
    one = snapshot_topo_document(load_file(str(snaps / "consumer-power-not-supported.json")))
    assert one is not None
    text = _render(one)
    assert "GPU0   X" in text  # a one-GPU matrix misses no pair: it is drawn
    assert one.summary == "1 GPU: no GPU pairs, so nothing travels between GPUs"


def test_two_socket_box_does_not_say_ddp_is_fine() -> None:
    """Issue 23: a two-socket PCIe box said "DDP is fine, ZeRO will be limited by the link between CPU sockets";
    DDP's all-reduce crosses the same link, and ZeRO-1/2 move DDP's bytes (plan/comm.py)."""
    summary = summarize_topology(*_load("topo/004-4x-rtx6000ada-node-sys-4nic-spaces.txt"))
    assert "DDP is fine" not in summary
    assert "ZeRO will be limited" not in summary
    assert "every collective crosses the link between CPU sockets" in summary
    assert "DDP and ZeRO-1/2 move the same bytes" in summary


def test_nvlink_sentence_scaled_to_the_bridge() -> None:
    """An RTX 3090 bridge's NV4 (4 x 14.0625 GB/s) and an H100's NV18 (18 x 25) are 8x apart: not one sentence."""
    from rigcheck.model.topo import nvlink_words

    bridge = nvlink_words("NV4", ("NVIDIA GeForce RTX 3090",))
    sxm = nvlink_words("NV18", ("NVIDIA H100 80GB HBM3",))
    assert bridge.startswith("56 GB/s per direction")
    assert "rarely what limits" not in bridge
    assert "ZeRO-3/FSDP 1.5x" in bridge
    assert sxm.startswith("450 GB/s per direction")
    assert "rarely what limits DDP, ZeRO or FSDP" in sxm

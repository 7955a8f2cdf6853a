"""Topologies at any size (issue #13): link codes never cut at 80 columns, a summary above 16 GPUs with the full
matrix behind --matrix, pair lookups through an index."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from collections import Counter
from pathlib import Path

from rich.console import Console

from rigcheck.model import GpuPair, Snapshot
from rigcheck.model.topo import UNKNOWN_LINK, TopoDocument, snapshot_topo_summary, sorted_pairs, topo_document
from rigcheck.readers.smi.topo import pairs_from_topology, parse_topo
from rigcheck.report.render import RenderOptions
from rigcheck.report.topo import link_groups, topo_html, topology_blocks, topology_renderable
from tests.support.cli import Rigcheck

TOPO = Path(__file__).parent.parent / "fixtures" / "corpus" / "topo"
NVLINK_8 = ["026-8xv100-sxm2-hybrid-cube-mesh-nv1-nv2-nic.txt", "008-8xa100-nv12-realigned-columns.txt"]


def _text(renderable: object, width: int) -> str:
    console = Console(width=width, record=True, color_system=None, legacy_windows=False)
    with console.capture() as cap:
        console.print(renderable)
    return cap.get()


def _grown(n: int, odd: tuple[int, int] | None = None) -> str:
    """A tab-separated `topo -m` of n GPUs, all NV18 on two NUMA nodes; ``odd``: one pair on SYS instead."""
    head = "\t" + "\t".join(f"GPU{i}" for i in range(n)) + "\tCPU Affinity\tNUMA Affinity"
    rows = [head]
    for a in range(n):
        cells = ["X" if a == b else ("SYS" if odd is not None and {a, b} == set(odd) else "NV18") for b in range(n)]
        rows.append(f"GPU{a}\t" + "\t".join(cells) + f"\t0-7\t{a * 2 // n}")
    return "\n".join(rows) + "\n"


def test_eighty_columns_keep_every_link_code_whole() -> None:
    for name in NVLINK_8:
        topo = parse_topo((TOPO / name).read_text(encoding="utf-8"), name)
        out = _text(topology_renderable(topo_document(topo, pairs_from_topology(topo))), 80)
        grid = out.split("NICs:")[0].split("\nNV")[0]
        assert "…" not in grid, out
        for row_label, row in zip(topo.labels, topo.matrix, strict=True):
            short = row_label.replace("GPU", "G").replace("NIC", "N")
            line = next(line for line in grid.splitlines() if line.startswith(short + " "))
            assert line.split()[1:] == row, (name, line)


def test_cli_at_80_columns_prints_nv1_and_nv2_whole() -> None:
    env = {**os.environ, "COLUMNS": "80"}
    out = subprocess.run(
        [sys.executable, "-m", "rigcheck", "topo", "--from", str(TOPO / NVLINK_8[0])],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    ).stdout
    grid = out.split("NICs:")[0]
    assert "…" not in grid
    assert "G0   X    NV1   NV1   NV2   NV2  SYS  SYS  SYS  NODE" in grid


def test_a_narrow_terminal_gets_column_blocks_not_cut_cells() -> None:
    topo = parse_topo((TOPO / NVLINK_8[0]).read_text(encoding="utf-8"))
    out = _text(topology_renderable(topo_document(topo, pairs_from_topology(topo))), 36)
    assert "…" not in out
    blocks = [line for line in out.splitlines() if line.startswith("G0 ")]
    assert len(blocks) >= 3  # the columns in blocks, then the affinity table
    codes = [tok for line in blocks for tok in line.split()[1:] if not tok[0].isdigit()]
    assert codes[: len(topo.matrix[0])] == topo.matrix[0]


def test_sixty_four_gpus_are_summarised_and_the_odd_pair_named() -> None:
    topo = parse_topo(_grown(64, odd=(5, 40)))
    doc = topo_document(topo, pairs_from_topology(topo))
    out = _text(topology_renderable(doc), 160)
    assert "64 GPUs, summarised" in out
    assert "NUMA node 0: GPU0-31 (32 GPUs)" in out
    assert "GPU5–GPU40 SYS" in out
    assert "NUMA node 0 ↔ NUMA node 1: NV18 × 1023, SYS × 1" in out
    assert len(out.splitlines()) < 20  # not a 64-row grid
    full = _text(topology_renderable(doc, RenderOptions(full_matrix=True)), 400)
    assert len(full.splitlines()) > 64
    assert "summarised" not in full


def test_a_box_of_sixteen_keeps_its_matrix() -> None:
    topo = parse_topo(_grown(16))
    out = _text(topology_renderable(topo_document(topo, pairs_from_topology(topo))), 160)
    assert "summarised" not in out
    assert "GPU15" in out


def test_snapshot_pair_lookup_is_indexed_and_follows_changes() -> None:
    snap = Snapshot(pairs=[GpuPair(a=a, b=b, link="NV18") for a in range(40) for b in range(a + 1, 40)])
    assert snap.pair(39, 3) is snap.pairs[[(p.a, p.b) for p in snap.pairs].index((3, 39))]
    assert snap.pair(3, 3) is None
    table = snap.pair_table()
    assert snap.pair_table() is table  # built once, shared by every reader
    assert table.get(39, 3) is snap.pair(3, 39)
    assert (0, 1) in table.nvlink
    snap.pairs.append(GpuPair(a=40, b=41, link="PHB"))  # appended: the index is rebuilt
    found = snap.pair(41, 40)
    assert found is not None
    assert found.link == "PHB"
    snap.pairs = [GpuPair(a=0, b=1, link="SYS")]  # replaced
    again = snap.pair(0, 1)
    assert again is not None
    assert again.link == "SYS"
    assert snap.pair(3, 39) is None
    snap.pairs[0].b = 2  # changed in place: the stale hit is not returned, the record is found the slow way
    assert snap.pair(0, 1) is None
    assert snap.pair(0, 2) is snap.pairs[0]


def test_pair_table_groups_the_pairs_by_link_once_each_in_order() -> None:
    pairs = [GpuPair(a=a, b=b, link=None if (a + b) % 5 == 0 else "NV18") for a in range(9) for b in range(a + 1, 9)]
    snap = Snapshot(pairs=[*pairs[::-1], GpuPair(a=0, b=1, link="SYS")])  # reversed, and a second record of 0-1
    by_link = snap.pair_table().by_link
    assert set(by_link) == {None, "NV18"}  # the second record of a pair is not counted: get() returns the first
    for members in by_link.values():
        assert [(p.a, p.b) for p in members] == sorted((p.a, p.b) for p in members)
    assert sum(map(len, by_link.values())) == len(pairs)
    assert snap.pair_table().by_link is by_link  # built once


def _blocks_by_sorting(doc: TopoDocument) -> list[tuple[str, list[tuple[str, int]], list[tuple[int, int]]]]:
    """The summary's blocks as it was computed before the pair table: every pair walked and sorted."""
    nodes = {g.index: g.numa_affinity or "" for g in doc.gpus}
    group_of = (
        {i: f"NUMA node {v}" for i, v in nodes.items()}
        if all(v.isdigit() for v in nodes.values()) and 1 < len(set(nodes.values())) <= 8
        else dict.fromkeys(nodes, "all GPUs")
    )
    order = {name: k for k, name in enumerate(dict.fromkeys(name for _, name in sorted(group_of.items())))}
    by_block: dict[tuple[str, str], list[object]] = {}
    for p in doc.pairs:
        ga, gb = group_of.get(p.a, "all GPUs"), group_of.get(p.b, "all GPUs")
        by_block.setdefault((ga, gb) if order.get(ga, 0) <= order.get(gb, 0) else (gb, ga), []).append(p)
    out = []
    for (ga, gb), block in sorted(by_block.items(), key=lambda kv: (order.get(kv[0][0], 0), order.get(kv[0][1], 0))):
        counts = Counter(p.link or UNKNOWN_LINK for p in block)  # type: ignore[attr-defined]
        usual = counts.most_common(1)[0][0]
        odd = sorted((p.a, p.b) for p in block if (p.link or UNKNOWN_LINK) != usual)  # type: ignore[attr-defined]
        out.append((f"within {ga}" if ga == gb else f"{ga} ↔ {gb}", counts.most_common(), odd))
    return out


def test_summary_from_the_pairs_by_link_is_the_summary_from_sorting_them() -> None:
    """The summary reads the pairs grouped by link (no sort of every pair): the same groups, blocks and odd pairs
    as walking and sorting them, ties and unknown links included."""
    rng = random.Random(26)
    for numa in (["0", "1"], ["0", "1", "2", "3"], ["0"], [str(i) for i in range(12)]):
        n = 24
        codes = ["NV18", "NV4", "PIX", "SYS", "FOO", None, "?"]
        rows = ["\t" + "\t".join(f"GPU{i}" for i in range(n)) + "\tCPU Affinity\tNUMA Affinity"]
        rows += [
            f"GPU{a}\t" + "\t".join("X" if a == b else "SYS" for b in range(n)) + f"\t0-7\t{rng.choice(numa)}"
            for a in range(n)
        ]
        topo = parse_topo("\n".join(rows) + "\n")
        links = rng.sample(codes, 3)
        pairs = [p.model_copy(update={"link": rng.choice(links)}) for p in pairs_from_topology(topo)]
        doc = topo_document(topo, pairs)
        _, blocks = topology_blocks(doc)
        got = [(b.name, b.counts, sorted((p.a, p.b) for p in b.odd)) for b in blocks]
        assert got == _blocks_by_sorting(doc), (numa, links)
        expected: dict[str, list[tuple[int, int]]] = {}
        for p in sorted_pairs(list(doc.pairs)):
            expected.setdefault(p.link or UNKNOWN_LINK, []).append((p.a, p.b))
        assert [(code, [(p.a, p.b) for p in members]) for code, members, _ in link_groups(doc)] == list(
            expected.items()
        )
        snap = Snapshot(pairs=pairs, topology=topo)
        summary = snapshot_topo_summary(snap)
        assert summary is not None
        assert summary.table is snap.pair_table()  # the snapshot's own table, the one the checks read


def _doctor(rigcheck: Rigcheck, path: Path, fmt: str) -> str:
    """``rigcheck doctor --from PATH --format FMT``'s output (exit 0 or 1: a finding is no error)."""
    code, out, err = rigcheck("doctor", "--from", path, "--format", fmt)
    assert code in (0, 1), err
    return out


def test_html_above_sixteen_gpus_is_a_summary_with_the_matrix_folded(tmp_path: Path, rigcheck: Rigcheck) -> None:
    path = tmp_path / "topo64.txt"
    path.write_text(_grown(64, odd=(3, 40)))
    topo = parse_topo(path.read_text())
    doctor = _doctor(rigcheck, path, "html")
    for page in (topo_html(topo_document(topo, pairs_from_topology(topo))), doctor):
        summary = page.index('<table class="topo-summary">')
        details = page.index("<details><summary>Full matrix (64 × 64)</summary>")
        assert summary < details < page.index('<table class="topo">') < page.index("</details>", details)
        assert "GPU3–GPU40 SYS" in page  # the odd pair named in the summary table
        assert "NUMA node 0 ↔ NUMA node 1" in page


def test_html_of_a_box_keeps_its_matrix_open() -> None:
    topo = parse_topo(_grown(16, odd=(3, 12)))
    page = topo_html(topo_document(topo, pairs_from_topology(topo)))
    assert '<table class="topo">' in page
    assert "topo-summary" not in page
    assert "Full matrix" not in page


def test_doctor_folds_pair_findings_above_sixteen_gpus(tmp_path: Path, rigcheck: Rigcheck) -> None:
    for n, folded in ((16, False), (17, True), (64, True)):
        path = tmp_path / f"topo{n}.txt"
        path.write_text(_grown(n, odd=(3, 12)))
        findings = json.loads(_doctor(rigcheck, path, "json"))["findings"]
        nvlink = [f for f in findings if f["id"] == "topology.nvlink"]
        sys_pairs = [f for f in findings if f["id"] == "topology.pcie-only"]
        pairs = n * (n - 1) // 2
        if not folded:
            assert len(nvlink) == pairs - 1
            assert [f["pair"] for f in sys_pairs] == [[3, 12]]
            continue
        assert [f["subject"] for f in nvlink + sys_pairs] == ["host", "host"]
        assert nvlink[0]["message"].startswith(f"{pairs - 1} GPU pairs on NV18 (18 NVLinks): ")
        assert sys_pairs[0]["message"].startswith("1 GPU pair on SYS: ")
        assert sys_pairs[0]["measured"].endswith("on GPU3-GPU12")


def test_gpu_table_of_a_big_machine_lists_every_gpu_in_aligned_columns() -> None:
    """Above 16 GPUs the doctor's GPU table is laid out as plain lines (rich's Table measures every cell):
    every GPU is still listed, the columns line up, and an unreadable GPU says so."""
    from rigcheck.model.snapshot import Missing
    from rigcheck.report.doctor import gpu_table
    from tests.support.snapshots import make_gpu, make_snapshot

    gpus = [make_gpu(i) for i in range(20)]
    gpus[7] = make_gpu(7, read_error=Missing.GPU_LOST)
    text = _text(gpu_table(make_snapshot(gpus)), 200)
    lines = text.splitlines()
    assert lines[0].split()[:2] == ["GPU", "name"]
    assert [line.split()[0] for line in lines[1:]] == [str(i) for i in range(20)]
    assert "unreadable (GPU lost)" in lines[8]
    column = lines[0].index("power draw")
    assert all(line[column - 2 : column] == "  " for line in lines[1:] if "unreadable" not in line)

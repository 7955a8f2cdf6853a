"""A cut `nvidia-smi topo -m` paste: the rows it holds are read, the devices the header names beyond them are said, and
the word the text ends on is never taken for a whole value. The device columns come from the header itself, so a
NIC the header names by its own name (mlx4_0) is a device even where its row was cut away."""

from __future__ import annotations

from pathlib import Path

import pytest

from rigcheck.errors import ParseError
from rigcheck.model import Missing
from rigcheck.model.snapshot import INPUT_ENDS_EARLY
from rigcheck.readers.from_file import detect_kind, load_file, load_text
from rigcheck.readers.smi.topo import CPU_AFFINITY, NUMA_AFFINITY, TopoCut, parse_topo, read_topo

REAL = Path(__file__).parent.parent / "fixtures" / "topo-extra" / "002-8gpu-mlx4-cut-after-gpu4-2017.txt"
PAIRS_0_TO_4 = {
    (0, 1): "PIX",
    (0, 2): "PHB",
    (0, 3): "PHB",
    (0, 4): "SYS",
    (1, 2): "PHB",
    (1, 3): "PHB",
    (1, 4): "SYS",
    (2, 3): "PIX",
    (2, 4): "SYS",
    (3, 4): "SYS",
}


def test_real_paste_cut_after_gpu4() -> None:
    text = REAL.read_text(encoding="utf-8")
    topo, cut = read_topo(text, str(REAL))
    assert topo.labels == ["GPU0", "GPU1", "GPU2", "GPU3", "GPU4"]
    assert topo.matrix[0] == ["X", "PIX", "PHB", "PHB", "SYS"]
    assert topo.matrix[4] == ["SYS", "SYS", "SYS", "SYS", "X"]
    assert [g.cpu_affinity for g in topo.gpus] == ["0-9,20-29"] * 4 + [None]
    assert topo.nics == []  # mlx4_0's row is not in the text
    assert cut == TopoCut(line=7, after="GPU4", unread=("GPU5", "GPU6", "GPU7", "mlx4_0"), partial=(4, CPU_AFFINITY))


def test_real_paste_as_a_snapshot() -> None:
    snap = load_file(str(REAL))
    assert snap.source.kind == "topo"
    assert {(p.a, p.b): p.link for p in snap.pairs} == PAIRS_0_TO_4
    assert [g.cpu_affinity for g in snap.gpus[:4]] == ["0-9,20-29"] * 4
    assert snap.gpus[4].cpu_affinity is None
    assert snap.gpus[4].missing["cpu_affinity"] == Missing.TRUNCATED  # "10-19,30-39" may have been longer
    (note,) = snap.diagnostics
    assert note.message.startswith(INPUT_ENDS_EARLY)
    assert "GPU5, GPU6, GPU7, mlx4_0" in note.message


def test_a_newline_after_the_last_row_makes_its_value_whole() -> None:
    topo, cut = read_topo(REAL.read_text(encoding="utf-8") + "\n")
    assert topo.gpus[4].cpu_affinity == "10-19,30-39"
    assert cut is not None
    assert cut.partial is None


# A cut paste of another machine: tabs, NICs named by their RDMA device (not mlx), NUMA columns, cut inside GPU2's
# row: GPU2 is left out (its codes may be short), GPU0 and GPU1 are read whole.
BNXT = (
    "\tGPU0\tGPU1\tGPU2\tGPU3\tbnxt_re0\tbnxt_re1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"
    "GPU0\t X \tNV12\tSYS\tSYS\tPXB\tSYS\t0-31\t0\t\tN/A\n"
    "GPU1\tNV12\t X \tSYS\tSYS\tPXB\tSYS\t0-31\t0\t\tN/A\n"
    "GPU2\tSYS\tSYS\t X \tNV1"
)


def test_cut_inside_a_row_of_a_table_with_other_nic_names() -> None:
    topo, cut = read_topo(BNXT)
    assert topo.labels == ["GPU0", "GPU1"]
    assert topo.matrix == [["X", "NV12"], ["NV12", "X"]]
    assert [(g.cpu_affinity, g.numa_affinity, g.gpu_numa_id) for g in topo.gpus] == [("0-31", "0", "N/A")] * 2
    assert cut is not None
    assert (cut.after, cut.unread, cut.partial) == ("GPU1", ("GPU2", "GPU3", "bnxt_re0", "bnxt_re1"), None)


def test_cut_on_a_numa_value_marks_the_numa_node() -> None:
    header, gpu0 = BNXT.split("\n")[:2]
    text = "\n".join([header, gpu0, "GPU1\tNV12\t X \tSYS\tSYS\tPXB\tSYS\t0-31\t0"])  # ends on GPU1's NUMA value
    topo, cut = read_topo(text)
    assert cut is not None
    assert cut.partial == (1, NUMA_AFFINITY)
    assert topo.gpus[1].numa_affinity is None
    gpu1 = load_text(text, "bnxt.txt").gpus[1]
    assert gpu1.missing["numa_node"] == Missing.TRUNCATED
    assert gpu1.cpu_affinity == "0-31"


def test_cut_inside_the_first_row_is_refused() -> None:
    with pytest.raises(ParseError, match="truncated: the text ends inside row GPU0"):
        parse_topo(BNXT.split("\n", maxsplit=1)[0] + "\nGPU0\t X \tNV1")


def test_a_row_missing_before_the_legend_is_still_refused() -> None:
    """Not a cut: the text goes on after the rows, so the header's NIC without its row is a broken table."""
    text = REAL.read_text(encoding="utf-8") + "\n\nLegend:\n\n  X    = Self\n"
    with pytest.raises(ParseError, match="the header names GPU5 but there is no GPU5 row"):
        parse_topo(text)


def test_a_missing_row_in_the_middle_is_refused() -> None:
    lines = BNXT.split("\n")
    with pytest.raises(ParseError, match="no GPU0 row"):
        parse_topo("\n".join([lines[0], lines[2]]) + "\n")


def test_header_nic_named_by_itself_is_a_device_before_its_row() -> None:
    """The real paste's case: "mlx4_0" counted as a device only once its own row was read."""
    lines = REAL.read_text(encoding="utf-8").split("\n")
    topo, _ = read_topo("\n".join(lines[:3]) + "\n")
    assert topo.labels == ["GPU0"]
    assert topo.gpus[0].cpu_affinity == "0-9,20-29"


def test_a_topo_kept_as_shell_comments_is_not_read() -> None:
    """`# ` lines are a script's comments: the reader strips no line prefix, so none is taken for the output."""
    text = "".join(f"# {line}\n" for line in REAL.read_text(encoding="utf-8").split("\n")[1:])
    assert detect_kind(text) is None

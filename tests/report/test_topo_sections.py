"""A saved report holding `topo -m` and `topo -p2p` matrices in one file: both are read (readers/from_file.py)."""

from __future__ import annotations

from pathlib import Path

from rigcheck.readers.from_file import detect_kind, load_file, load_text, topo_m_section

REPORT = Path(__file__).parent.parent / "fixtures" / "topo-extra" / "003-8gpu-topo-m-and-p2p-r-w-one-report.txt"


def test_the_link_matrix_beside_p2p_matrices_is_read() -> None:
    """It was dropped without a word: the file is recognised as topo -p2p, whose reader skips other matrices."""
    snap = load_file(str(REPORT))
    assert snap.topology is not None
    assert len(snap.gpus) == 8
    assert [(g.cpu_affinity, g.numa_node) for g in snap.gpus] == [("0-23,48-71", 0)] * 4 + [("24-47,72-95", 1)] * 4
    links = {(p.a, p.b): p.link for p in snap.pairs}
    assert (links[(0, 1)], links[(0, 2)], links[(3, 4)], links[(6, 7)]) == ("PIX", "NODE", "SYS", "PIX")
    assert len(snap.pairs) == 28
    assert all((p.p2p_read, p.p2p_write) == ("ok", "ok") for p in snap.pairs)  # from the two P2P matrices
    assert snap.diagnostics == []


def test_the_section_ends_at_the_next_matrix_or_rule() -> None:
    text = REPORT.read_text(encoding="utf-8")
    assert detect_kind(text) == "topo-p2p"
    for report in (text, "\n".join(line for line in text.splitlines() if not line.startswith("===="))):
        section = topo_m_section(report)
        assert section is not None
        lines = section.splitlines()
        assert "CPU Affinity" in lines[0]
        assert lines[1].startswith("GPU0     X      PIX")
        assert "NV#  = Connection traversing a bonded set of # NVLinks" in section
        assert "Status Ok" not in section  # the P2P legend belongs to the next matrix


def test_p2p_matrices_alone_have_no_link_section() -> None:
    only_p2p = REPORT.read_text(encoding="utf-8").split("nvidia-smi topo -p2p r (P2P Read)")[1]
    assert topo_m_section(only_p2p) is None
    snap = load_text(only_p2p)
    assert snap.topology is None
    assert len(snap.pairs) == 28

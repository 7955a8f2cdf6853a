"""`rigcheck bench p2p | membw | hostlink --from FILE`: nvbandwidth (text and -j JSON) and p2pBandwidthLatencyTest
outputs read (readers/reference/nvbandwidth.py, readers/reference/p2p_latency_test.py), mapped to bench documents
(readers/reference/reference_import.py), each figure beside its link's ceiling and judged against verify's band
(checks/reference/judge.py), end to end through the CLI. Real outputs in tests/fixtures/reference-tools/ (README.md
there gives each source) and the corpus' 2x RTX 2080 Ti p2pBandwidthLatencyTest.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rigcheck.errors import ParseError
from rigcheck.model.bench import HostlinkDocument, MembwDocument, P2PDocument, parse_bench
from rigcheck.probe import live
from rigcheck.readers.reference.nvbandwidth import looks_like_nvbandwidth, parse_nvbandwidth
from rigcheck.readers.reference.p2p_latency_test import looks_like_p2p_latency_test, parse_p2p_latency_test
from rigcheck.readers.reference.reference_import import detect_tool
from tests.support.cli import Rigcheck

FIXTURES = Path(__file__).parent.parent / "fixtures"
TOOLS = FIXTURES / "reference-tools"
H100 = TOOLS / "nvbandwidth-1xh100-vm-v0.8.txt"
RTX2080TI_P2P = FIXTURES / "corpus/p2p/001-2x2080ti-cannot-access-peer.txt"
H100_Q = FIXTURES / "corpus/h100-vm/q.txt"


@pytest.fixture(autouse=True)
def no_live_probe(monkeypatch: pytest.MonkeyPatch) -> None:
    """With --from nothing is run and this machine is never probed: a probe would fail the test."""

    def refuse() -> None:
        raise AssertionError("the live machine was probed")

    monkeypatch.setattr(live, "probe_machine", refuse)


def bench_json(argv: list[str], rigcheck: Rigcheck, expect: int = 0) -> Any:
    code, out, err = rigcheck(*argv, "--json")
    assert code == expect, err
    return parse_bench(json.loads(out))


# --- p2pBandwidthLatencyTest -------------------------------------------------------------------------------------


def test_2080ti_p2p_latency_test_every_matrix() -> None:
    run_ = parse_p2p_latency_test(RTX2080TI_P2P.read_text())
    assert [(d.index, d.name, d.bus_id) for d in run_.devices] == [
        (0, "NVIDIA GeForce RTX 2080 Ti", "0000:b4:00.0"),
        (1, "NVIDIA GeForce RTX 2080 Ti", "0000:b5:00.0"),
    ]
    assert run_.peer_access == {(0, 1): False, (1, 0): False}
    assert run_.connectivity == [[1, 0], [0, 1]]
    assert run_.matrices == {
        "unidirectional_gbps_staged": [[541.84, 5.71], [5.70, 543.05]],
        "unidirectional_gbps_peer": [[538.62, 5.72], [5.72, 532.54]],
        "bidirectional_gbps_staged": [[533.91, 6.12], [6.10, 533.91]],
        "bidirectional_gbps_peer": [[533.34, 6.10], [6.10, 534.01]],
        "latency_us_staged": [[1.33, 14.76], [13.95, 1.26]],
        "cpu_latency_us_staged": [[3.55, 11.08], [10.48, 3.32]],
        "latency_us_peer": [[1.32, 14.99], [13.63, 1.25]],
        "cpu_latency_us_peer": [[3.36, 10.34], [10.47, 3.27]],
    }
    assert not run_.truncated


def test_2080ti_p2p_cli_rows_ceiling_and_failed_judgement(rigcheck: Rigcheck) -> None:
    doc = bench_json(["bench", "p2p", "--from", str(RTX2080TI_P2P)], rigcheck, expect=0)
    assert isinstance(doc, P2PDocument)
    assert doc.source is not None
    assert doc.source.tool == "p2pBandwidthLatencyTest"
    rows = {(r.mode, r.src, r.dst): r for r in doc.results}
    assert set(rows) == {(m, a, b) for m in ("peer", "staged") for a, b in ((0, 1), (1, 0))}
    peer = rows[("peer", 0, 1)]
    assert (peer.unidirectional_gbps, peer.bidirectional_gbps, peer.latency_us) == (5.72, 6.10, 14.99)
    assert peer.peer_access is False
    assert peer.size_bytes is None
    assert peer.missing == {"size_bytes": "not_in_source"}
    assert rows[("staged", 1, 0)].latency_us == 13.95
    # No peer access: the copies cross PCIe through the host, the 2080 Ti's Gen3 x16 (15.75 GB/s one way).
    assert peer.theoretical_gbps == pytest.approx(15.75, abs=0.01)
    assert doc.matrices["unidirectional_gbps_peer"] == [[538.62, 5.72], [5.72, 532.54]]
    assert doc.judgement is not None
    # Staged through host memory (no peer access): held to the staged band, 0.30 x 15.75 (it failed 8.7, the
    # direct-P2P floor, though the box was published working).
    assert [(j.subject, j.verdict, j.floor) for j in doc.judgement] == [
        ("GPU0->GPU1", "pass", 4.7),
        ("GPU1->GPU0", "pass", 4.7),
    ]


def test_8xh100_cut_p2p_keeps_what_was_printed_and_judges_nvlink(rigcheck: Rigcheck) -> None:
    path = TOOLS / "p2p-8xh100-nv18-cut.txt"
    parsed = parse_p2p_latency_test(path.read_text())
    assert parsed.truncated
    assert parsed.connectivity == [[1.0] * 8] * 8
    assert parsed.matrices["unidirectional_gbps_staged"][7] == [
        37.02, 37.38, 37.24, 37.09, 37.92, 37.46, 37.38, 2503.38,
    ]  # fmt: skip
    # The file ends in "375.6", which may be a number cut short: that cell is dropped, the six before it kept.
    assert parsed.matrices["unidirectional_gbps_peer"] == [[2494.76, 371.02, 376.65, 376.60, 376.82, 375.59, 375.94]]
    doc = bench_json(["bench", "p2p", "--from", str(path), "--gpu", "H100 SXM5"], rigcheck, expect=1)
    assert doc.partial
    assert doc.error is not None
    assert "input ends early" in doc.error
    peer = [r for r in doc.results if r.mode == "peer"]
    assert [(r.dst, r.unidirectional_gbps) for r in peer][:2] == [(1, 371.02), (2, 376.65)]
    assert peer[0].theoretical_gbps == 450  # SXM5: 18 NVLinks x 25 GB/s one way
    assert peer[0].peer_access is True  # no CAN/CANNOT lines in the excerpt: its connectivity matrix says 1
    assert doc.judgement is not None
    assert {j.verdict for j in doc.judgement} == {"pass"}
    assert doc.judgement[0].floor == pytest.approx(351.0)


def test_p2p_reads_variant_named_apart() -> None:
    parsed = parse_p2p_latency_test((TOOLS / "p2p-6gpu-pcie-writes-reads-cut.txt").read_text())
    assert parsed.matrices["unidirectional_gbps_peer"][0] == [912.68, 9.90, 9.90, 9.90, 9.90, 9.90]
    assert parsed.matrices["unidirectional_gbps_peer_reads"][3] == [9.95, 9.95, 10.45, 920.20, 9.95, 10.21]
    assert parsed.matrices["bidirectional_gbps_staged"] == [[918.31, 21.12, 30.53, 29.85]]  # "3" dropped: cut
    assert parsed.truncated
    assert parsed.size == 6


# --- nvbandwidth --------------------------------------------------------------------------------------------------


def test_h100_nvbandwidth_text() -> None:
    run_ = parse_nvbandwidth(H100.read_text())
    assert (run_.version, run_.cuda_runtime, run_.driver_version) == ("v0.8", 13000, "580.159.04")
    assert [(d.index, d.name, d.bus_id) for d in run_.devices] == [(0, "NVIDIA H100 80GB HBM3", "00000000:00:06")]
    figures = {t.name: (t.rows, t.sum, t.status) for t in run_.testcases}
    assert figures == {
        "host_to_device_memcpy_ce": ({0: [49.47]}, 49.47, "passed"),
        "device_to_host_memcpy_ce": ({0: [54.36]}, 54.36, "passed"),
        "host_to_device_memcpy_sm": ({0: [51.17]}, 51.17, "passed"),
        "device_to_host_memcpy_sm": ({0: [52.44]}, 52.44, "passed"),
        "device_local_copy": ({0: [1489.50]}, 1489.50, "passed"),
    }


def test_crlf_ansi_and_quoted_lines_read_the_same() -> None:
    text = H100.read_text()
    mangled = "\r\n".join(
        f"> \x1b[1m{line}\x1b[0m" if line.startswith("Running") else line for line in text.split("\n")
    )
    assert [t.rows for t in parse_nvbandwidth(mangled).testcases] == [t.rows for t in parse_nvbandwidth(text).testcases]


def test_h100_membw_beside_the_sxm5_peak(rigcheck: Rigcheck) -> None:
    doc = bench_json(["bench", "membw", "--from", str(H100), "--gpu", "H100 SXM5"], rigcheck)
    assert isinstance(doc, MembwDocument)
    (row,) = doc.results
    assert (row.name, row.gpu, row.copy_gbps, row.read_write_gbps) == ("device_local_copy", 0, 1489.50, 2979.0)
    assert row.peak_memory_gbps == 3350
    assert row.fraction_of_peak == pytest.approx(2979.0 / 3350)
    assert row.size_bytes is None
    assert row.missing["size_bytes"] == "not_in_source"
    assert doc.judgement is not None
    (j,) = doc.judgement
    assert (j.check, j.subject, j.verdict, j.floor) == ("membw", "GPU0", "pass", 2680.0)


def test_h100_hostlink_beside_pcie_gen5_from_the_name_or_a_snapshot(rigcheck: Rigcheck) -> None:
    named = bench_json(["bench", "hostlink", "--from", str(H100), "--gpu", "H100 SXM5"], rigcheck)
    described = bench_json(["bench", "hostlink", "--from", str(H100), "--from", str(H100_Q)], rigcheck)
    for doc in (named, described):
        assert isinstance(doc, HostlinkDocument)
        rows = {r.name: r for r in doc.results}
        assert (rows["host_to_device_memcpy_ce"].gbps, rows["device_to_host_memcpy_ce"].gbps) == (49.47, 54.36)
        assert rows["host_to_device_memcpy_ce"].direction == "h2d"
        assert rows["device_to_host_memcpy_sm"].direction == "d2h"
        assert {r.pcie_link for r in doc.results} == {"Gen5 x16"}
        assert rows["host_to_device_memcpy_ce"].pcie_theoretical_gbps == pytest.approx(63.0, abs=0.05)
        assert doc.judgement is not None
        assert [(j.check, j.verdict) for j in doc.judgement] == [("hostlink_h2d", "pass"), ("hostlink_d2h", "pass")]
    assert named.snapshot is None
    assert "PCIe links: GPU0 Gen5 x16 (H100 SXM5 as built" in " ".join(named.notes)
    assert "PCIe links: GPU0 Gen5 x16 (as the machine description reports it)" in described.notes
    assert described.snapshot is not None
    assert described.snapshot.gpus[0].name == "NVIDIA H100 80GB HBM3"


def test_nvbandwidth_json(rigcheck: Rigcheck) -> None:
    path = TOOLS / "nvbandwidth-2gpu-json-synthetic.json"
    assert detect_tool(path.read_text()) == "nvbandwidth"
    run_ = parse_nvbandwidth(path.read_text())
    assert (run_.form, run_.version, run_.cuda_runtime) == ("json", "v0.6", 12040)
    read = run_.testcase("device_to_device_memcpy_read_ce")
    assert read is not None
    assert read.rows == {0: [None, 51.7203], 1: [51.6988, None]}
    assert read.arrow == "<-"
    waived = run_.testcase("device_to_device_memcpy_write_ce")
    assert waived is not None
    assert waived.status == "waived"
    doc = bench_json(["bench", "p2p", "--from", str(path)], rigcheck)
    # "GPU(row) <- GPU(column)": row 0's 51.7203 is a copy from GPU1 to GPU0.
    assert {(r.src, r.dst): r.unidirectional_gbps for r in doc.results} == {(1, 0): 51.7203, (0, 1): 51.6988}
    assert any("device_to_device_memcpy_write_ce: waived" in n for n in doc.notes)
    # A PCIe card that may carry an NVLink bridge and no topology given: no verdict, and how to give one.
    assert doc.judgement is not None
    assert {j.verdict for j in doc.judgement} == {"unjudged"}


def test_6xa6000_excerpt_without_running_line(rigcheck: Rigcheck) -> None:
    path = TOOLS / "nvbandwidth-6xa6000-d2d-read-ce-v0.8.txt"
    doc = bench_json(["bench", "p2p", "--from", str(path), "--gpu", "RTX A6000"], rigcheck)
    assert doc.gpus == 6
    assert len(doc.results) == 30
    assert doc.matrices["device_to_device_memcpy_read_ce"][3] == [21.82, 21.82, 22.26, None, 26.34, 26.35]
    assert doc.judgement is not None
    # No topology: an A6000 pair is held to its PCIe band (a bridge would only raise the figure), and says so.
    assert {j.verdict for j in doc.judgement} == {"pass"}
    assert all("an NVLink bridge, if any, is not assumed" in j.reason for j in doc.judgement)


def test_cut_nvbandwidth_keeps_the_figures_before_the_cut(rigcheck: Rigcheck) -> None:
    path = TOOLS / "nvbandwidth-8x4090-v0.2-cut.txt"
    doc = bench_json(["bench", "hostlink", "--from", str(path)], rigcheck, expect=1)
    assert doc.partial
    assert doc.error is not None
    assert "host_to_device_bidirectional_memcpy_ce" in doc.error
    bidi = [r.gbps for r in doc.results if r.name == "host_to_device_bidirectional_memcpy_ce"]
    assert bidi == [11.24, 14.42]  # "16." was cut mid-number
    h2d = [r.gbps for r in doc.results if r.name == "host_to_device_memcpy_ce"]
    assert h2d == [25.50, 24.26, 23.90, 26.30, 26.28, 26.38, 26.09, 26.31]
    # RTX 4090 by its printed name: Gen4 x16, band floor 0.75 x 31.51 = 23.6; GPU2's 23.90 passes, all do.
    assert doc.judgement is not None
    assert {j.verdict for j in doc.judgement} == {"pass"}
    assert doc.results[0].pcie_link == "Gen4 x16"


def test_waived_testcase_is_a_note(rigcheck: Rigcheck) -> None:
    doc = bench_json(["bench", "p2p", "--from", str(TOOLS / "nvbandwidth-2x2080ti-waived-v0.2.txt")], rigcheck)
    assert doc.results == []
    assert any("waived" in n for n in doc.notes)


# --- bad input and usage ----------------------------------------------------------------------------------------


def test_wrong_tool_output_names_the_command_that_reads_it(rigcheck: Rigcheck) -> None:
    code, out, err = rigcheck("bench", "p2p", "--from", str(H100))
    assert (code, out) == (2, "")
    assert len(err.splitlines()) == 1
    assert "device_local_copy" in err
    assert "`rigcheck bench membw --from`" in err
    code, _, err = rigcheck("bench", "membw", "--from", str(RTX2080TI_P2P))
    assert code == 2
    assert "p2pBandwidthLatencyTest" in err
    assert "bench p2p --from" in err


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["bench", "p2p", "--from", "EMPTY"], "empty file"),
        (["bench", "p2p", "--from", str(FIXTURES / "corpus/nccl-tests/001-2x2080ti-allreduce-pcie-no-p2p.txt")],
         "nccl-tests"),
        (["bench", "membw", "--from", str(H100_Q)], "not nvbandwidth"),
        (["bench", "p2p", "--from", str(RTX2080TI_P2P), "--size", "1M"], "--size"),
        (["bench", "membw", "--from", str(H100), "--world-size", "2"], "--world-size"),
        (["bench", "hostlink", "--from", str(H100), "--gpu", "Foo 9000"], "not a GPU rigcheck knows"),
        (["bench", "hostlink", "--from", str(H100), "--gpu", "0"], "not an index"),
        (["bench", "membw", "--from", str(H100), "--from", str(H100)], "two tool outputs"),
    ],
)  # fmt: skip
def test_bad_input_is_one_line_exit_2(argv: list[str], words: str, tmp_path: Path, rigcheck: Rigcheck) -> None:
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    code, out, err = rigcheck(*[str(empty) if a == "EMPTY" else a for a in argv])
    assert (code, out) == (2, "")
    assert len(err.splitlines()) == 1
    assert words in err


def test_parsers_refuse_what_holds_no_figure() -> None:
    assert not looks_like_nvbandwidth(RTX2080TI_P2P.read_text())
    assert not looks_like_p2p_latency_test(H100.read_text())
    with pytest.raises(ParseError, match="without any testcase"):
        parse_nvbandwidth("nvbandwidth Version: v0.8\nCUDA Runtime Version: 13000\n")
    with pytest.raises(ParseError, match="without any bandwidth or latency matrix"):
        parse_p2p_latency_test("[P2P (Peer-to-Peer) GPU Bandwidth Latency Test]\nDevice=0 CAN Access Peer Device=1\n")
    with pytest.raises(ParseError, match="does not parse"):
        parse_nvbandwidth('{"nvbandwidth": {"testcases": [')


def test_reports_show_source_verdicts_and_matrices(tmp_path: Path, rigcheck: Rigcheck) -> None:
    md, page = tmp_path / "p2p.md", tmp_path / "p2p.html"
    code, out, _ = rigcheck("bench", "p2p", "--from", str(RTX2080TI_P2P), "--markdown", str(md), "--html", str(page))
    assert code == 0
    assert "read from p2pBandwidthLatencyTest output" in out
    assert "pass" in out
    assert "matrix cpu_latency_us_peer" in out
    assert "10.47" in out
    markdown = md.read_text()
    assert "## Judged against verify's bands" in markdown
    assert "| p2p | GPU0->GPU1 | 5.72 | 4.70 | +22% | pass |" in markdown
    assert "## Matrix latency\\_us\\_peer" in markdown or "## Matrix latency_us_peer" in markdown
    html = page.read_text()
    assert "Judged against verify" in html
    assert "538.62" in html


def test_topology_file_names_each_pairs_link(rigcheck: Rigcheck) -> None:
    p2p = TOOLS / "p2p-8xh100-nv18-cut.txt"
    topo = FIXTURES / "corpus/topo/007-8xh100-nv18-2numa-no-nics-spaces.txt"
    unnamed = bench_json(["bench", "p2p", "--from", str(p2p), "--from", str(topo)], rigcheck, expect=1)
    peer = next(r for r in unnamed.results if r.mode == "peer")
    assert (peer.link, peer.nvlinks) == ("NV18", 18)
    # The excerpt names no device and topo -m no model: NV18 of an unknown NVLink generation stays unjudged.
    assert unnamed.judgement is not None
    assert {j.verdict for j in unnamed.judgement} == {"unjudged"}
    assert "NVLink generation" in unnamed.judgement[0].reason
    named = bench_json(["bench", "p2p", "--from", str(p2p), "--from", str(topo), "--gpu", "H100 SXM5"], rigcheck, 1)
    assert named.judgement is not None
    assert [j.verdict for j in named.judgement] == ["pass"] * 6
    assert next(r for r in named.results if r.mode == "peer").theoretical_gbps == 450


def test_unnamed_waivers_are_counted_and_close_the_matrix_before_them() -> None:
    # Written for this test in nvbandwidth v0.5+'s shape: a waived testcase prints "Waived: " and no name.
    text = (
        "nvbandwidth Version: v0.6\nDevice 0: NVIDIA H100 80GB HBM3 (00000000:1b:00)\n\n"
        "Running host_to_device_memcpy_ce.\nmemcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)\n"
        "           0\n 0     55.10\n\nWaived: \nWaived: \n"
    )
    parsed = parse_nvbandwidth(text)
    assert parsed.unnamed_waived == 2
    (testcase,) = parsed.testcases
    assert (testcase.status, testcase.rows, testcase.truncated) == ("passed", {0: [55.10]}, False)


V010 = TOOLS / "nvbandwidth-8xh100-v0.10-d2d-read-write-two-runs.txt"
MULTINODE = TOOLS / "nvbandwidth-2x4gb200-multinode-v0.7-d2d-read.txt"


def test_nvbandwidth_0_10_prints_the_cuda_version_dotted_with_its_integer() -> None:
    """`CUDA Runtime Version: 13.2 (13020)`: the version read was "0.1" (13 taken as CUDA's integer)."""
    run = parse_nvbandwidth(V010.read_text(encoding="utf-8"))
    assert run.cuda_runtime == 13020
    assert (run.version, run.cuda_driver) == ("v0.10.0", 13020)
    with_parens = parse_nvbandwidth(
        "nvbandwidth Version: v0.10.0\nCUDA Driver Version (API): 13.2 (13020)\n" + V010.read_text(encoding="utf-8")
    )
    assert with_parens.cuda_driver == 13020


def test_multinode_nvbandwidth_d2d_is_read_by_bench_p2p(rigcheck: Rigcheck) -> None:
    """`multinode_device_to_device_memcpy_read_ce` was refused: "no device_to_device_* testcase"."""
    doc = rigcheck("bench", "p2p", "--from", str(MULTINODE), "--json").json
    assert doc["gpus"] == 8
    cells = [c for row in doc["matrices"]["multinode_device_to_device_memcpy_read_ce"] for c in row if c is not None]
    assert len(cells) == 56
    assert 797.0 < min(cells) <= max(cells) < 799.0

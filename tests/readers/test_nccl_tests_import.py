"""nccl-tests output read with `bench <collective> --from FILE` (readers/reference/nccl_tests.py,
readers/reference/nccl_tests_doc.py): every
corpus file with its MANIFEST facts, the other layouts from tests/fixtures/nccl-tests-extra/, bad inputs, the
ceiling and the band's verdict, the CLI end to end, and `verify --from DIR` taking the saved document."""

from __future__ import annotations

import io
import json
import re
import statistics
import sys
from pathlib import Path

import pytest

from rigcheck.errors import ParseError, UsageError
from rigcheck.model.bench import CollectiveDocument, CollectiveRow, Method, Versions, parse_bench
from rigcheck.readers.reference.nccl_tests import looks_like_nccl_tests, parse_nccl_tests
from rigcheck.readers.reference.nccl_tests_doc import collective_document, error_tolerance, parse_link
from rigcheck.report.bench.collective import collective_summary
from tests.support.cli import Rigcheck

FIXTURES = Path(__file__).parent.parent / "fixtures"
CORPUS = FIXTURES / "corpus"
NCCL = CORPUS / "nccl-tests"
EXTRA = FIXTURES / "nccl-tests-extra"
PCIE_2080TI = NCCL / "001-2x2080ti-allreduce-pcie-no-p2p.txt"
AWS = NCCL / "002-awsbatch-allreduce-mpirun-tag-output.txt"
GB200 = NCCL / "004-gb200-nvl72-2racks-fragment.txt"
TOPO_2080TI = CORPUS / "topo" / "010-2x2080ti-pix-numa1.txt"


def text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def manifest_busbw(name: str) -> dict[int, float]:
    """The MANIFEST's "size (B) -> out-of-place busbw (GB/s)" line of one corpus file."""
    section = text(CORPUS / "MANIFEST.md").split(f"### `nccl-tests/{name}`", 1)[1]
    line = next(ln for ln in section.splitlines() if "out-of-place busbw" in ln)
    pairs = line.split(":", 1)[1].split(",")
    return {int(size): float(busbw) for size, busbw in (p.strip().split(": ") for p in pairs)}


# --- the corpus: every figure the MANIFEST lists ------------------------------------------------------------------

CORPUS_FACTS = {
    # file: (sizes, first, last, busbw at max, avg, hosts, ranks)
    PCIE_2080TI.name: (28, 8, 1 << 30, 4.00, 2.05774, ["autodl-container-xxxxx"], 2),
    AWS.name: (32, 8, 16 << 30, 483.05, 156.742, [], 8),
    GB200.name: (6, 512 << 20, 16 << 30, 810.41, 688.487, ["slurm-gb200-207-171"], 144),
}


@pytest.mark.parametrize("name", sorted(CORPUS_FACTS))
def test_corpus_file_gives_its_manifest_facts(name: str) -> None:
    count, first, last, top, avg, hosts, ranks = CORPUS_FACTS[name]
    parsed = parse_nccl_tests(text(NCCL / name), name)
    assert parsed.layout == "new"
    assert [r.size_bytes for r in parsed.rows][:: len(parsed.rows) - 1] == [first, last]
    assert len(parsed.rows) == count
    assert {r.size_bytes: r.out_of_place.busbw_gbps for r in parsed.rows} == manifest_busbw(name)
    assert (parsed.avg_busbw_gbps, parsed.out_of_bounds, parsed.hosts) == (avg, 0, hosts)
    doc = collective_document(parsed, op="allreduce", path=name)
    assert doc.results[-1].busbw_gbps == top
    assert doc.world_size == ranks
    assert doc.source is not None
    assert doc.source.ranks == ranks
    assert doc.source.avg_busbw_gbps == avg
    assert all(r.correct and r.wrong == 0 and r.in_place_wrong == 0 for r in doc.results)


def test_rank_lines_give_devices_and_the_header_its_counts() -> None:
    parsed = parse_nccl_tests(text(PCIE_2080TI))
    assert [(d.rank, d.device, d.pci_bus_id, d.name) for d in parsed.devices] == [
        (0, 0, "0000:b4:00", "NVIDIA GeForce RTX 2080 Ti"),
        (1, 1, "0000:b5:00", "NVIDIA GeForce RTX 2080 Ti"),
    ]
    assert (parsed.n_threads, parsed.n_gpus, parsed.warmup, parsed.iters, parsed.validation) == (1, 2, 5, 20, 1)
    row = parsed.rows[-1]
    assert (row.count, row.dtype, row.redop, row.root) == (268435456, "float", "sum", -1)
    assert row.in_place is not None
    assert (row.in_place.time_us, row.in_place.busbw_gbps) == (268461.0, 4.00)


def test_nccl_tests_average_is_the_mean_of_every_printed_busbw() -> None:
    """The footer nccl-tests prints is the mean over out-of-place and in-place figures (src/common.cu): the
    rule rigcheck's summary follows where a file has no footer (the printed figures are rounded to 0.01)."""
    parsed = parse_nccl_tests(text(PCIE_2080TI))
    figures = [f.busbw_gbps for r in parsed.rows for f in (r.out_of_place, r.in_place) if f is not None]
    assert statistics.fmean(figures) == pytest.approx(2.05774, abs=0.005)


def test_fragment_that_starts_at_rank_143_has_144_ranks() -> None:
    doc = collective_document(parse_nccl_tests(text(GB200)), op="allreduce", path="gb200.txt")
    assert doc.source is not None
    assert [(d.rank, d.device, d.pci_bus_id) for d in doc.source.devices] == [(143, 3, "0x01")]
    assert any("start mid-list" in n for n in doc.notes)


# --- other layouts and framings ------------------------------------------------------------------------------------


def test_old_layout_with_check_off() -> None:
    parsed = parse_nccl_tests(text(EXTRA / "old-allreduce-8xa100-c0.log"))
    assert (parsed.layout, parsed.check_disabled, parsed.validation) == ("old", True, 0)
    assert parsed.rows[-1].root is None
    assert parsed.rows[-1].redop == "sum"
    doc = collective_document(parsed, op="allreduce", path="a.log")
    last = doc.results[-1]
    assert (last.size_bytes, last.busbw_gbps, last.in_place_busbw_gbps) == (8 << 30, 235.26, 235.03)
    assert last.correct
    assert last.wrong is None
    assert last.note == "not checked (-c 0)"
    assert doc.world_size == 8
    assert doc.source is not None
    assert doc.source.hosts == ["localhost"]
    assert any("-c 0" in n for n in doc.notes)


@pytest.mark.parametrize(
    ("name", "op", "binary", "busbw", "avg"),
    [
        ("old-allgather-8xa100-c0.log", "allgather", "all_gather_perf", 223.39, 58.2651),
        ("old-reducescatter-8xa100-c0.log", "reducescatter", "reduce_scatter_perf", 231.52, 60.168),
        ("old-broadcast-8xa100-c0.log", "broadcast", "broadcast_perf", 232.81, 64.8653),
    ],
)
def test_old_layouts_of_the_other_collectives(name: str, op: str, binary: str, busbw: float, avg: float) -> None:
    doc = collective_document(parse_nccl_tests(text(EXTRA / name)), op=op, path=name)  # type: ignore[arg-type]
    assert (doc.op, doc.results[-1].busbw_gbps, doc.world_size) == (op, busbw, 8)
    assert doc.source is not None
    assert doc.source.avg_busbw_gbps == avg
    assert doc.notes[0].startswith(f"read as {binary} output: its columns")


def test_float_error_column_and_a_row_cut_short() -> None:
    parsed = parse_nccl_tests(text(EXTRA / "old-allreduce-128gpu-error-column-cut.txt"))
    assert parsed.layout == "old"
    assert parsed.cut
    assert [r.size_bytes for r in parsed.rows] == [4096, 8192, 16384, 32768, 65536, 131072]
    assert parsed.rows[-1].out_of_place.max_error == 1e-06
    assert parsed.rows[-1].out_of_place.wrong is None
    doc = collective_document(parsed, op="allreduce", path="cut.txt")
    assert doc.results[-1].max_error == 1e-06
    assert doc.results[-1].busbw_gbps == 2.15
    assert any("ends inside a row (line 12)" in n for n in doc.notes)
    assert doc.partial  # a sweep cut short, as a cut nvbandwidth / p2pBandwidthLatencyTest matrix
    assert doc.error is not None
    assert doc.error.startswith("input ends inside a row (line 12)")
    assert doc.source is not None
    assert doc.source.ranks is None


def test_file_named_binary_and_a_footer_cut_short() -> None:
    parsed = parse_nccl_tests(text(EXTRA / "new-allgather-1x4090-footer-cut.txt"))
    assert parsed.binary == "all_gather_perf"
    assert parsed.out_of_bounds == 0
    assert parsed.avg_busbw_gbps is None
    doc = collective_document(parsed, op="allgather", path="ag.txt")
    assert not doc.partial  # only the footer is missing: every row is whole
    assert doc.results[0].redop == "none"
    assert doc.results[0].algbw_gbps == 1816.16
    assert collective_summary(doc)[1].startswith("Avg bus bandwidth: 0 GB/s (computed from the rows")


def test_two_hosts_give_no_ceiling_and_a_verdict_against_the_nics() -> None:
    parsed = parse_nccl_tests(text(EXTRA / "new-allreduce-16xh100-2hosts-markdown.txt"))
    assert parsed.hosts == ["ztan-mig-235z", "ztan-mig-gq73"]
    assert parsed.binary == "all_reduce_perf"
    doc = collective_document(parsed, op="allreduce", path="x", choice=parse_link("NV18", None, None))
    assert doc.world_size == 16
    assert doc.ceiling is None  # the NVLink ceiling is not what bounds a run across hosts
    assert doc.judgement is not None
    # No NIC known: the smallest published fabric of 8x H100 nodes (4x200G), said in the verdict; the A3 Mega's
    # 338.82 GB/s passes it.
    assert (doc.judgement.verdict, doc.judgement.band_floor_gbps) == ("pass", 40.0)
    assert "2 hosts" in doc.judgement.reason
    assert "smallest published fabric" in doc.judgement.reason


def _framed(raw: str) -> str:
    """The corpus file as kubectl logs --timestamps over srun --label, a coloured terminal and Windows give it."""
    lines = [f"2026-11-26T08:00:00.123456Z 0: {line}   " for line in raw.splitlines()]
    lines[0] = "\x1b[1m" + lines[0] + "\x1b[0m"
    return "\r\n".join(lines)


def test_prefixes_ansi_crlf_and_lost_hashes_read_the_same() -> None:
    plain = parse_nccl_tests(text(PCIE_2080TI))
    framed = parse_nccl_tests(_framed(text(PCIE_2080TI)))
    # Pasted into Markdown, the leading "#" of each comment line is gone (nccl-tests issue #249).
    unhashed = parse_nccl_tests(re.sub(r"(?m)^#", "", text(PCIE_2080TI)))
    for other in (framed, unhashed):
        assert other.rows == plain.rows
        assert (other.devices, other.avg_busbw_gbps, other.iters) == (plain.devices, 2.05774, 20)


def test_a_row_broken_by_a_log_line_keeps_the_table() -> None:
    broken = text(PCIE_2080TI).replace(
        "11.79    0.35    0.35      0    11.89", "11.79    0.35    0.35      0\nhost:1:1 [0] NCCL INFO x\n    11.89"
    )
    parsed = parse_nccl_tests(broken)
    assert len(parsed.rows) == 28
    row = next(r for r in parsed.rows if r.size_bytes == 4096)
    assert (row.out_of_place.busbw_gbps, row.in_place) == (0.35, None)
    assert "line 19: a row with missing cells" in parsed.notes[0]
    assert not parsed.cut


def test_mpirun_tag_output_prefix() -> None:
    raw = text(AWS)
    assert raw.startswith("[1,0]<stdout>:")
    assert len(parse_nccl_tests(raw).rows) == 32


# --- refused inputs -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("", "empty file"),
        ("  \n\n", "empty file"),
        (text(TOPO_2080TI), "not nccl-tests output: no nccl-tests table"),
        (text(PCIE_2080TI) + text(PCIE_2080TI), "a second nccl-tests table"),
        (text(PCIE_2080TI).replace("     8     float", "     8      half", 1), "holds 2 sweeps"),
        ("./build/alltoall_perf -b 8\n" + text(PCIE_2080TI), "alltoall_perf output: rigcheck reads only"),
    ],
)
def test_refused_inputs_say_why_in_one_line(body: str, message: str) -> None:
    with pytest.raises(ParseError, match=message) as info:
        parse_nccl_tests(body, "in.txt")
    assert "\n" not in str(info.value)
    assert str(info.value).startswith("in.txt")


def test_old_alltoall_is_refused_by_its_blank_redop() -> None:
    parsed = parse_nccl_tests(text(EXTRA / "old-alltoall-8xa100-c0.log"))
    assert parsed.rows[-1].redop == ""
    with pytest.raises(ParseError, match=r"alltoall_perf.s shape\)\); rigcheck reads all_reduce_perf"):
        collective_document(parsed, op="allgather", path="a2a.log")


def test_wrong_collective_names_what_the_file_holds() -> None:
    parsed = parse_nccl_tests(text(EXTRA / "old-allgather-8xa100-c0.log"))
    with pytest.raises(ParseError, match=r"all_gather_perf output .*`bench allgather` reads it"):
        collective_document(parsed, op="allreduce", path="ag.log")


def test_detection_needs_the_table() -> None:
    assert looks_like_nccl_tests(text(AWS))
    assert looks_like_nccl_tests(text(EXTRA / "old-broadcast-8xa100-c0.log"))
    assert not looks_like_nccl_tests(text(TOPO_2080TI))


@pytest.mark.parametrize(
    ("link", "pcie", "gpu", "message"),
    [("NVX", None, None, "--link"), (None, "gen9x16", None, "--pcie"), (None, None, "RTX 6000", "did you mean")],
)
def test_bad_link_options(link: str | None, pcie: str | None, gpu: str | None, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        parse_link(link, pcie, gpu)


# --- the ceiling and the verdict --------------------------------------------------------------------------------


def test_nvswitch_a100_is_judged_against_verify_band() -> None:
    parsed = parse_nccl_tests(text(EXTRA / "old-allreduce-8xa100-c0.log"))
    doc = collective_document(parsed, op="allreduce", path="a", choice=parse_link("NV12", None, None))
    assert doc.ceiling is not None
    assert doc.ceiling.gbps == 300.0
    assert "NVLink gen 3, 12 links" in doc.ceiling.link
    assert doc.results[-1].fraction_of_ceiling == pytest.approx(235.26 / 300)
    assert doc.judgement is not None
    assert (doc.judgement.verdict, doc.judgement.band_floor_gbps) == ("pass", 180.0)
    slow = collective_document(parsed, op="allreduce", path="a", choice=parse_link("NV18", None, "H100 SXM5"))
    assert slow.judgement is not None
    assert slow.judgement.verdict == "fail"
    # Named H100 on NV18 with no NVLS evidence: held to the NVLS-off floor, the condition said.
    assert "floor 300 (NVLS unknown, the NVLS-off floor" in slow.judgement.reason
    assert "22% below" in slow.judgement.reason


def test_pcie_ceiling_from_the_link_and_pcie_named() -> None:
    parsed = parse_nccl_tests(text(PCIE_2080TI))
    doc = collective_document(parsed, op="allreduce", path="p", choice=parse_link("PHB", "gen4x16", None))
    assert doc.ceiling is not None
    assert doc.ceiling.gbps == 31.51
    assert doc.ceiling.link.startswith("PHB: PCIe Gen4 x16")
    bare = collective_document(parsed, op="allreduce", path="p")
    assert bare.ceiling is None
    assert "ceiling_gbps" not in bare.results[0].model_dump()
    assert any(n.startswith("no link named") for n in bare.notes)


# --- the CLI --------------------------------------------------------------------------------------------------


def test_cli_with_topo_gives_the_ceiling(rigcheck: Rigcheck, tmp_path: Path) -> None:
    page = tmp_path / "ar.md"
    code, out, err = rigcheck(
        "bench", "allreduce", "--from", str(PCIE_2080TI), "--from", str(TOPO_2080TI), "--json", "--markdown", str(page)
    )
    assert code == 0, err
    doc = parse_bench(json.loads(out))
    assert isinstance(doc, CollectiveDocument)
    assert doc.snapshot is not None
    assert len(doc.snapshot.gpus) == 2
    assert doc.ceiling is not None
    assert doc.ceiling.gbps == 15.75
    assert doc.ceiling.link.startswith("PIX: PCIe Gen3 x16")
    assert doc.results[-1].fraction_of_ceiling == pytest.approx(4.0 / 15.75)
    assert (doc.method.method_version, doc.method.warmup, doc.method.repeats) == ("nccl-tests", 5, 20)
    md = page.read_text(encoding="utf-8")
    assert "**Out of bounds values: 0 OK**" in md
    assert "Avg bus bandwidth: 2.05774 GB/s" in md


def test_cli_nvlink_ceiling_and_verdict_from_topo(rigcheck: Rigcheck) -> None:
    topo = CORPUS / "topo" / "008-8xa100-nv12-realigned-columns.txt"
    code, out, err = rigcheck(
        "bench", "allreduce", "--from", str(EXTRA / "old-allreduce-8xa100-c0.log"), "--from", str(topo), "--json"
    )
    assert code == 0, err
    data = json.loads(out)
    assert data["ceiling"]["gbps"] == 300.0
    assert data["ceiling"]["link"].startswith("NV12: NVLink gen 3, 12 links")
    assert (data["judgement"]["verdict"], data["judgement"]["band_floor_gbps"]) == ("pass", 180.0)
    assert data["results"][-1]["fraction_of_ceiling"] == pytest.approx(235.26 / 300)


def test_cli_terminal_report_and_stdin(rigcheck: Rigcheck, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text(GB200).encode())))
    code, out, _ = rigcheck("bench", "allreduce", "--from", "-", "--link", "NV18", "--gpu", "GB200")
    assert code == 0
    assert "read from nccl-tests output -: 144 ranks on slurm-gb200-207-171" in out
    assert "in-place busbw (GB/s)" in out
    assert "810.410" in out
    assert "Out of bounds values: 0 OK" in out
    assert "Avg bus bandwidth: 688.487 GB/s" in out


def test_cli_exits_1_when_values_were_wrong(rigcheck: Rigcheck, tmp_path: Path) -> None:
    bad = tmp_path / "wrong.txt"
    body = text(PCIE_2080TI).replace("    4.00      0   268461", "    4.00      3   268461")
    bad.write_text(body.replace("values : 0 OK", "values : 3 FAILED"), encoding="utf-8")
    code, out, _ = rigcheck("bench", "allreduce", "--from", str(bad), "--json")
    data = json.loads(out)
    assert code == 1
    assert data["results"][-1]["wrong"] == 3
    assert data["results"][-1]["correct"] is False
    assert data["source"]["out_of_bounds"] == 3


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--cpu"], "--cpu only apply to a run"),
        (["-n", "2", "--repeats", "3"], "--world-size, --repeats only apply to a run"),
        (["--from", str(AWS)], "two nccl-tests outputs"),
    ],
)
def test_cli_usage_errors(extra: list[str], message: str, rigcheck: Rigcheck) -> None:
    code, out, err = rigcheck("bench", "allreduce", "--from", str(PCIE_2080TI), *extra)
    assert (code, out) == (2, "")
    assert message in err
    assert err.count("\n") == 1


def test_cli_wrong_collective_and_link_without_from(rigcheck: Rigcheck) -> None:
    code, _, err = rigcheck("bench", "allreduce", "--from", str(EXTRA / "old-broadcast-8xa100-c0.log"))
    assert code == 2
    assert "broadcast_perf output" in err
    assert "`bench broadcast` reads it" in err
    code, _, err = rigcheck("bench", "allreduce", "--link", "NV18")
    assert code == 2
    assert "go with --from FILE" in err


# --- verify takes the saved document; the live summary ------------------------------------------------------------


def test_verify_reads_a_saved_imported_document(rigcheck: Rigcheck, tmp_path: Path) -> None:
    from rigcheck.readers.saved import load_saved

    code, out, _ = rigcheck("bench", "allreduce", "--from", str(PCIE_2080TI), "--from", str(TOPO_2080TI), "--json")
    assert code == 0
    (tmp_path / "allreduce.json").write_text(out, encoding="utf-8")
    inputs = load_saved(tmp_path)
    assert inputs.allreduce is not None
    assert inputs.allreduce.source is not None
    assert inputs.allreduce.results[-1].busbw_gbps == 4.0
    assert inputs.cpu is False
    assert inputs.notes == ["the machine is the snapshot embedded in allreduce.json (no snapshot file)"]
    from rigcheck.checks.verify.figures import allreduce_figure

    figure = allreduce_figure(inputs.allreduce)
    assert figure is not None
    # nccl-tests prints the mean time of its iterations: the verdict says so, not "median"
    assert figure.measured.endswith("bus bandwidth, mean of 20 (read from nccl-tests output)")


def test_live_collective_summary_counts_wrong_sizes_and_averages_busbw() -> None:
    method = Method(method_version="collectives-1", warmup=0, repeats=1)
    common = {"name": "allreduce", "unit": "GB/s", "repeats": 1, "warmup": 0, "backend": "gloo", "world_size": 2}
    rows = [
        CollectiveRow(
            **common,  # type: ignore[arg-type]
            value=b,
            median=b,
            min=b,
            max=b,
            sizes=[s],
            method_version="collectives-1",
            op="allreduce",
            size_bytes=s,
            time_us_median=1.0,
            algbw_gbps=b,
            busbw_gbps=b,
            correct=ok,
        )
        for s, b, ok in ((8, 1.0, True), (16, 2.0, False))
    ]
    versions = Versions(rigcheck=None, python=None, torch=None, cuda=None, nccl=None)
    doc = CollectiveDocument(
        benchmark="allreduce", partial=False, error=None, method=method, backend="gloo", world_size=2,
        versions=versions, snapshot=None, results=rows, op="allreduce", sizes=[8, 16], wall_s=0.1, notes=[],
    )  # fmt: skip
    assert "source" not in doc.model_dump()
    assert "ceiling" not in doc.model_dump()
    assert collective_summary(doc) == [
        "Out of bounds values: 1 FAILED",
        "Avg bus bandwidth: 1.5 GB/s (rigcheck: the mean busbw of its 2 sizes; nccl-tests also averages its "
        "in-place runs)",
    ]


# --- a run that failed ------------------------------------------------------------------------------------------

FAILED = (
    Path(__file__).parent.parent / "fixtures" / "nccl-tests-extra" / "new-allreduce-4xh200-cuda-failure-no-rows.txt"
)


def test_a_run_that_failed_before_its_first_size_is_a_partial_document_with_the_failure(
    rigcheck: Rigcheck,
) -> None:
    """It was refused as "not nccl-tests output: a table header but no rows"."""
    result = rigcheck("bench", "allreduce", "--from", str(FAILED), "--json")
    assert result.code == 1
    doc = result.json
    assert (doc["partial"], doc["results"], doc["world_size"]) == (True, [], 4)
    assert doc["error"] == (
        "the run failed: nccltest08192: Test CUDA failure common.cu:502 'an illegal memory access was encountered' "
        "(no size was measured)"
    )
    assert doc["versions"]["nccl"] == "2.18.3"  # from nccl-library=21803
    assert doc["source"]["hosts"] == ["nccltest08192"]


def test_a_run_that_failed_midway_keeps_the_sizes_before() -> None:
    raw = text(PCIE_2080TI)
    cut_at = raw.index("        8192")
    failed = raw[:cut_at] + "host1: Test NCCL failure common.cu:1018 'unhandled system error'\n"
    run = parse_nccl_tests(failed)
    assert run.failure == "host1: Test NCCL failure common.cu:1018 'unhandled system error'"
    assert [r.size_bytes for r in run.rows][-1] == 4096


@pytest.mark.parametrize(
    ("banner", "version"),
    [
        ("# nccl-tests version 2.19.7 nccl-headers=21803 nccl-library=21803", "2.18.3"),
        ("# nccl-tests version 2.19.7 nccl-headers=22703 nccl-library=22105", "2.21.5"),  # the library's wins
        ("# nccl-tests version 2.13.6 nccl-headers=2708", "2.7.8"),  # before 2.9: major*1000 + minor*100 + patch
    ],
)
def test_the_banners_version_code_names_nccl(banner: str, version: str) -> None:
    assert parse_nccl_tests(banner + "\n" + text(PCIE_2080TI)).nccl_version == version


OLD_FAILED = (
    Path(__file__).parent.parent / "fixtures" / "nccl-tests-extra" / "old-allgather-12xv100-dgx2-oob-4-failed.txt"
)


def test_old_layout_rows_past_the_tolerance_are_wrong_when_the_footer_counts_failures(
    rigcheck: Rigcheck,
) -> None:
    """The error column `1e+00` at 4 GiB and 8 GiB with "Out of bounds values : 4 FAILED": every row said correct."""
    result = rigcheck("bench", "allgather", "--from", str(OLD_FAILED), "--json")
    assert result.code == 1
    doc = result.json
    wrong = [(r["size_bytes"], r["max_error"], r["in_place_max_error"]) for r in doc["results"] if not r["correct"]]
    assert wrong == [(4294967280, 1.0, 1.0), (8589934560, 1.0, 1.0)]
    assert doc["source"]["out_of_bounds"] == 4


@pytest.mark.parametrize(
    ("dtype", "reduction", "tolerance"),
    [("float", True, 1e-5), ("half", True, 5e-2), ("float", False, 0.0), ("int32", True, 0.0)],
)
def test_the_error_tolerance_follows_nccl_tests(dtype: str, reduction: bool, tolerance: float) -> None:
    assert error_tolerance(dtype, reduction=reduction) == tolerance

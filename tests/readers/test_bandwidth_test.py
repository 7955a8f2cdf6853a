"""readers/reference/bandwidth_test.py and bandwidth_test_doc.py: the CUDA sample bandwidthTest's output read (every
layout
in tests/fixtures/bandwidth-test) and judged by `bench hostlink | membw --from` as nvbandwidth's figures are."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rigcheck.errors import InputError, ParseError
from rigcheck.readers.reference.bandwidth_test import looks_like_bandwidth_test, parse_bandwidth_test
from rigcheck.readers.reference.bandwidth_test_doc import bandwidth_test_document
from tests.contracts.test_schemas import assert_valid
from tests.support.cli import Rigcheck

FIXTURES = Path(__file__).parent.parent / "fixtures" / "bandwidth-test"


def _run(name: str) -> Any:
    path = FIXTURES / name
    return parse_bandwidth_test(path.read_text(), str(path))


def test_quick_mode_gbs_layout() -> None:
    run = _run("quadro-p1000-quick.txt")
    assert [(d.index, d.name) for d in run.devices] == [(0, "Quadro P1000")]
    assert run.mode == "quick"
    assert run.result == "PASS"
    assert [(t.kind, t.memory, t.devices, t.rows) for t in run.tables] == [
        ("h2d", "pinned", 1, [(32000000, 12.8)]),
        ("d2h", "pinned", 1, [(32000000, 13.0)]),
        ("d2d", "pinned", 1, [(32000000, 69.4)]),
    ]
    assert not run.truncated


def test_shmoo_takes_the_largest_size() -> None:
    run = _run("t4-shmoo.txt")
    assert run.mode == "shmoo"
    assert [len(t.rows) for t in run.tables] == [81, 81, 81]
    assert [t.largest for t in run.tables] == [(68000000, 12.3), (68000000, 13.2), (68000000, 241.4)]
    # 580.1 at 2 MB is the L2 cache, not the memory: the largest size is the figure, not the best one
    assert max(v for _, v in run.tables[2].rows) == 580.1


def test_older_mbs_layout_converted_as_the_sample_computed_it() -> None:
    run = _run("p100-mbs-numa-local.txt")
    h2d = run.tables[0].largest
    assert h2d is not None
    assert h2d[0] == 33554432
    assert h2d[1] == pytest.approx(12150.7 * 1.024e6 / 1e9)


def test_a_cut_table_marks_the_run_truncated_and_keeps_what_was_printed() -> None:
    run = _run("p100-mbs-numa-remote-cut.txt")
    assert run.truncated
    assert [t.kind for t in run.tables] == ["h2d", "d2h"]


def test_csv_layout() -> None:
    # Synthetic, in the form printResultsCSV writes (cuda-samples bandwidthTest.cu): two devices summed.
    text = (
        "bandwidthTest-H2D-Pinned, Bandwidth = 24.6 GB/s, Time = 0.00130 s, Size = 32000000 bytes, NumDevsUsed = 2\n"
        "bandwidthTest-D2H-Paged, Bandwidth = 9.0 GB/s, Time = 0.00356 s, Size = 32000000 bytes, NumDevsUsed = 2\n"
        "Result = PASS\n"
    )
    assert looks_like_bandwidth_test(text)
    run = parse_bandwidth_test(text, "csv")
    assert [(t.kind, t.memory, t.devices, t.rows) for t in run.tables] == [
        ("h2d", "pinned", 2, [(32000000, 24.6)]),
        ("d2h", "pageable", 2, [(32000000, 9.0)]),
    ]
    doc = bandwidth_test_document("hostlink", run, "csv")
    pinned = [r for r in doc.results if r.memory == "pinned"]
    assert [(r.gpu, r.gbps) for r in pinned] == [(0, 12.3), (1, 12.3)]  # the sum over two devices, halved
    assert any("SUM" in n for n in doc.notes)


def test_not_bandwidth_test_output() -> None:
    assert not looks_like_bandwidth_test("[P2P (Peer-to-Peer) GPU Bandwidth Latency Test]\n")
    with pytest.raises(ParseError):
        parse_bandwidth_test("[CUDA Bandwidth Test] - Starting...\nRunning on...\n", "x")


def test_p2p_refuses_it_naming_hostlink() -> None:
    with pytest.raises(InputError, match="bench hostlink --from"):
        bandwidth_test_document("p2p", _run("t4-shmoo.txt"), "t4")
    with pytest.raises(InputError, match="bench hostlink --from"):
        bandwidth_test_document("membw", _run("rtx2080ti-range-htod.txt"), "2080")


def _judged(rigcheck: Rigcheck, command: str, name: str, *extra: str) -> tuple[int, dict[str, Any]]:
    code, out, _ = rigcheck("bench", command, "--from", str(FIXTURES / name), *extra, "--json")
    return code, json.loads(out)


@pytest.mark.parametrize(
    "name", ["t4-shmoo.txt", "p100-mbs-numa-local.txt", "a10-quick-cut.txt", "rtx2080ti-range-htod.txt"]
)
def test_healthy_host_links_pass(name: str, rigcheck: Rigcheck) -> None:
    code, doc = _judged(rigcheck, "hostlink", name)
    assert code == 0
    assert doc["source"]["tool"] == "bandwidthTest"
    verdicts = {j["check"]: j["verdict"] for j in doc["judgement"]}
    assert set(verdicts.values()) == {"pass"}
    assert "hostlink_h2d" in verdicts
    assert_valid(doc)


def test_a_gpu_run_from_the_wrong_socket_fails(rigcheck: Rigcheck) -> None:
    code, doc = _judged(rigcheck, "hostlink", "p100-mbs-numa-remote-cut.txt")
    assert code == 1
    assert {j["verdict"] for j in doc["judgement"]} == {"fail"}
    assert doc["partial"] is True


def test_a_gpu_the_catalog_lacks_is_unjudged_and_says_to_name_it(rigcheck: Rigcheck) -> None:
    code, doc = _judged(rigcheck, "hostlink", "quadro-p1000-quick.txt")
    assert code == 0
    assert {j["verdict"] for j in doc["judgement"]} == {"unjudged"}
    assert all("--model" in j["reason"] for j in doc["judgement"])
    # --model names a model of the same host link (Gen3 x16) for the figure to be judged against
    code, named = _judged(rigcheck, "hostlink", "quadro-p1000-quick.txt", "--model", "Tesla T4")
    assert {j["verdict"] for j in named["judgement"]} == {"pass"}


def test_device_to_device_is_read_plus_write() -> None:
    """bandwidthTest prints 2 x bytes / time for a device copy: that is membw's read_write_gbps, not its copy."""
    doc = bandwidth_test_document("membw", _run("t4-shmoo.txt"), "t4")
    (row,) = doc.results
    assert (row.gpu, row.read_write_gbps, row.copy_gbps, row.size_bytes) == (0, 241.4, 120.7, 68000000)
    assert len(row.sizes) == 81


def test_all_devices_sum_is_divided_among_the_listed_gpus(rigcheck: Rigcheck) -> None:
    run8 = _run("8xk80-all-devices-summed-mbs.txt")
    assert [d.index for d in run8.devices] == list(range(8))
    assert {t.devices for t in run8.tables} == {8}
    code, doc = _judged(rigcheck, "hostlink", "8xk80-all-devices-summed-mbs.txt")
    h2d = [r for r in doc["results"] if r["direction"] == "h2d"]
    assert [r["gpu"] for r in h2d] == list(range(8))
    assert h2d[0]["gbps"] == pytest.approx(78952.3 * 1.024e6 / 1e9 / 8)
    assert any("SUM" in n for n in doc["notes"])
    assert {j["verdict"] for j in doc["judgement"]} == {"unjudged"}  # the K80 is not in the catalog: said
    assert code == 0


def test_pageable_rows_are_read_not_judged(rigcheck: Rigcheck) -> None:
    code, doc = _judged(rigcheck, "hostlink", "k80-pageable-mbs.txt")
    assert {r["memory"] for r in doc["results"]} == {"pageable"}
    assert doc.get("judgement", []) == []
    assert code == 0


@pytest.mark.parametrize("name", ["a10-quick-cut.txt", "t4-shmoo.txt", "p100-mbs-numa-local.txt"])
def test_device_copies_of_healthy_gpus_are_read_not_failed(name: str, rigcheck: Rigcheck) -> None:
    """Healthy GPUs' bandwidthTest D2D figures sit at 62-78% of their memory spec, under verify's membw floor
    (80%): held to it they failed (exit 1); they are unjudged, with the reason, the figure kept."""
    code, doc = _judged(rigcheck, "membw", name)
    assert code == 0
    (judgement,) = doc["judgement"]
    assert judgement["verdict"] == "unjudged"
    assert "62-78%" in judgement["reason"]
    assert judgement["value"] == doc["results"][0]["read_write_gbps"]
    assert_valid(doc)

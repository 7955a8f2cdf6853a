"""Fail closed: a GPU nvidia-smi lists but cannot read is a placeholder (read_error) in every text source, and the
doctor fails it; a GPU with one bad reading is not."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from rigcheck.checks.doctor.health import check_health
from rigcheck.model import Missing, Severity, Snapshot
from rigcheck.readers.smi.query_text import parse_query_text
from rigcheck.readers.smi.query_xml import parse_query_xml
from rigcheck.readers.smi.table import parse_table

CORPUS = Path(__file__).parent.parent / "fixtures" / "corpus"
ERR = CORPUS / "smi-err"
MANIFEST = [e for e in json.loads((CORPUS / "manifest.json").read_text()) if e["kind"] == "smi-err"]


def _unreadable(snapshot: Snapshot) -> dict[int, Missing]:
    return {g.index: g.read_error for g in snapshot.gpus if g.read_error is not None}


def _fails(snapshot: Snapshot) -> list[str]:
    return [
        f.subject for f in check_health(snapshot) if f.id == "health.gpu-unreadable" and f.severity is Severity.FAIL
    ]


@pytest.mark.parametrize("entry", MANIFEST, ids=[e["file"] for e in MANIFEST])
def test_err_table_gives_a_placeholder_for_the_lost_gpu(entry: dict[str, Any]) -> None:
    path = CORPUS / entry["file"]
    snapshot = parse_table(path.read_text(encoding="utf-8"), str(path))
    facts = entry["facts"]
    assert snapshot.software.driver_version == facts["driver_version"]
    assert len(snapshot.gpus) == len(facts["gpus"])
    assert _unreadable(snapshot) == dict.fromkeys(facts["unreadable"], Missing.ERROR)
    assert _fails(snapshot) == [f"GPU{i}" for i in facts["unreadable"]]
    for gpu, expected in zip(snapshot.gpus, facts["gpus"], strict=True):
        assert gpu.index == expected["index"]
        assert gpu.pci_bus_id == expected["bus_id"]  # the placeholder keeps who it is
        if gpu.read_error is not None:
            assert gpu.name is None
            assert gpu.missing["name"] == Missing.ERROR  # printed ERR!
            assert gpu.read_error_detail is not None
            assert "temperature" in gpu.read_error_detail
            # The memory cell still parsed; a placeholder does not pass it on as a reading.
            assert gpu.memory_used_mib is None
            assert gpu.missing["temp_c"] == Missing.ERROR
            continue
        assert gpu.name == expected["name"]
        assert gpu.temp_c == float(expected["temp"].rstrip("C"))
        assert gpu.power_draw_w == float(expected["power_usage"].rstrip("W"))
        assert gpu.memory_used_mib == float(expected["mem_used"].removesuffix("MiB"))
    assert not any(d.message.startswith("input ends early") for d in snapshot.diagnostics)


@pytest.mark.parametrize(
    ("name", "bus", "reason"),
    [
        ("003-handle-error-gpu-is-lost.txt", "0000:02:00.0", Missing.GPU_LOST),
        ("004-handle-error-unknown-error.txt", "0000:0B:00.0", Missing.ERROR),
    ],
)
def test_handle_error_line_alone_is_an_unreadable_gpu(name: str, bus: str, reason: Missing) -> None:
    # nvidia-smi printed only this line: it is a GPU that failed, never "no GPU".
    text = (ERR / name).read_text()
    for parse in (parse_table, parse_query_text, parse_query_xml):
        snapshot = parse(text, name)
        assert snapshot.gpu_absent_reason is None
        assert [(g.index, g.pci_bus_id, g.read_error) for g in snapshot.gpus] == [(0, bus, reason)]
        assert _fails(snapshot) == ["GPU0"]


def test_handle_error_above_a_table_adds_the_gpu_it_skipped() -> None:
    table = (CORPUS / "smi" / "002-2x2080ti-550.txt").read_text()
    # nvidia-smi skips the index of a GPU it cannot open: GPU 1 of three, at a bus id the table lacks.
    table = table.replace("|   1  NVIDIA GeForce RTX 2080 Ti", "|   2  NVIDIA GeForce RTX 2080 Ti")
    text = (ERR / "003-handle-error-gpu-is-lost.txt").read_text() + table
    snapshot = parse_table(text, "t.txt")
    assert [g.index for g in snapshot.gpus] == [0, 1, 2]
    assert _unreadable(snapshot) == {1: Missing.GPU_LOST}
    assert snapshot.gpus[1].pci_bus_id == "0000:02:00.0"
    assert snapshot.gpus[2].name == "NVIDIA GeForce RTX 2080 Ti"


def test_handle_error_for_a_gpu_the_table_lists_adds_nothing() -> None:
    text = (ERR / "001-8xa40-525-gpu4-err-after-xid119.txt").read_text()
    text = "Unable to determine the device handle for GPU 0000:83:00.0: Unknown Error\n" + text
    snapshot = parse_table(text, "t.txt")
    assert len(snapshot.gpus) == 8
    assert _unreadable(snapshot) == {4: Missing.ERROR}


def test_handle_error_above_xml() -> None:
    xml = (CORPUS / "h100-vm" / "q.xml").read_text()
    text = "Unable to determine the device handle for GPU 00000000:00:07.0: GPU is lost.\n" + xml
    snapshot = parse_query_xml(text, "x.xml")
    assert [g.read_error for g in snapshot.gpus] == [None, Missing.GPU_LOST]
    assert snapshot.gpus[0].name == "NVIDIA H100 80GB HBM3"


# nvidia-smi -q and -q -x print NVML's error string where a call failed ("Unknown Error", "GPU is lost").
_Q_READINGS = r"(GPU Current Temp|Power Draw|Current Power Limit|Graphics|SM|Fan Speed|Gpu|Performance State)"


def _q_with(error: str) -> str:
    text = (CORPUS / "smi-q" / "001-1xh100-545-full-event-reasons-tlimit.txt").read_text()
    text = re.sub(rf"^(\s+{_Q_READINGS}\s+: ).*$", lambda m: m.group(1) + error, text, flags=re.M)
    return re.sub(r"^(\s+Memory\s+: )\d+ MHz$", lambda m: m.group(1) + error, text, flags=re.M)


@pytest.mark.parametrize(("error", "reason"), [("Unknown Error", Missing.ERROR), ("GPU is lost", Missing.GPU_LOST)])
def test_q_text_with_every_reading_an_error(error: str, reason: Missing) -> None:
    snapshot = parse_query_text(_q_with(error), "q.txt")
    gpu = snapshot.gpus[0]
    assert gpu.read_error == reason
    assert gpu.name == "NVIDIA H100 80GB HBM3"
    assert gpu.pci_bus_id is not None
    assert _fails(snapshot) == ["GPU0"]


def test_xml_with_every_reading_an_error() -> None:
    text = (CORPUS / "smi-xml" / "005-2xa5000-590-v13.xml").read_text()
    second = text.split("<gpu id=", 2)[2]
    tags = (
        "gpu_temp|instant_power_draw|average_power_draw|current_power_limit|graphics_clock|sm_clock|mem_clock|gpu_util"
    )
    broken = re.sub(rf"<({tags}|performance_state|fan_speed)>[^<]*<", r"<\1>Unknown Error<", second)
    snapshot = parse_query_xml(text.replace(second, broken), "x.xml")
    assert _unreadable(snapshot) == {1: Missing.ERROR}
    assert snapshot.gpus[0].read_error is None
    assert snapshot.gpus[0].temp_c is not None


def test_one_bad_reading_is_not_an_unreadable_gpu() -> None:
    # A single ERR! (a transient power read, Azure/azhpc-diagnostics#77) leaves the GPU readable.
    text = (CORPUS / "smi" / "002-2x2080ti-550.txt").read_text()
    lines = text.splitlines(keepends=True)
    second_rows = [i for i, line in enumerate(lines) if re.search(r"\d+W / +\d+W", line)]
    lines[second_rows[1]] = re.sub(r"\d+W /", "ERR! /", lines[second_rows[1]])
    snapshot = parse_table("".join(lines), "t.txt")
    gpu = snapshot.gpus[1]
    assert gpu.read_error is None
    assert gpu.power_draw_w is None
    assert gpu.missing["power_draw_w"] == Missing.ERROR
    assert gpu.temp_c is not None
    assert not _fails(snapshot)


def test_unknown_name_alone_is_not_an_unreadable_gpu() -> None:
    # A driver too old to name the card prints "Product Name : Unknown Error" (NVIDIA/nvidia-docker#464).
    text = (CORPUS / "smi-q" / "001-1xh100-545-full-event-reasons-tlimit.txt").read_text()
    text = re.sub(r"(Product Name\s+: ).*", r"\1Unknown Error", text)
    gpu = parse_query_text(text, "q.txt").gpus[0]
    assert gpu.read_error is None
    assert gpu.missing["name"] == Missing.ERROR
    assert gpu.temp_c is not None

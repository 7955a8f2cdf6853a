"""Bad input to the nvidia-smi parsers: a one-line ParseError naming the file (and line where it applies)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from rigcheck.errors import InputError, ParseError
from rigcheck.inputs import read_input_text
from rigcheck.model import Missing, Snapshot
from rigcheck.model.snapshot import INPUT_ENDS_EARLY
from rigcheck.readers.smi.nvlink_status import parse_nvlink_status
from rigcheck.readers.smi.query_text import parse_query_text
from rigcheck.readers.smi.query_xml import parse_query_xml
from rigcheck.readers.smi.table import parse_table

BAD = Path(__file__).parent.parent / "fixtures" / "smi-bad"
Parser = Callable[[str, str | None], Snapshot]
PARSERS: list[Parser] = [parse_query_text, parse_query_xml, parse_table, parse_nvlink_status]
IDS = ["q", "xml", "table", "nvlink"]


def _bad(name: str) -> tuple[str, str]:
    path = BAD / name
    return path.read_text(encoding="utf-8"), str(path)


def _raises(parse: Parser, text: str, path: str | None) -> ParseError:
    with pytest.raises(ParseError) as info:
        parse(text, path)
    error = info.value
    assert isinstance(error, InputError)
    assert "\n" not in str(error)
    assert error.path == path
    return error


@pytest.mark.parametrize("parse", PARSERS, ids=IDS)
@pytest.mark.parametrize("text", ["", "   \n\n\t\n"], ids=["empty", "blank"])
def test_empty_file(parse: Parser, text: str) -> None:
    error = _raises(parse, text, "rig/out.txt")
    assert error.detail == "empty file"
    assert str(error) == "rig/out.txt: empty file"


@pytest.mark.parametrize("parse", PARSERS, ids=IDS)
def test_nul_bytes(parse: Parser) -> None:
    error = _raises(parse, *_bad("q-nul-bytes.txt"))
    assert "binary" in error.detail
    assert error.line == 2


@pytest.mark.parametrize("parse", PARSERS, ids=IDS)
def test_binary_garbage_decoded_leniently(parse: Parser) -> None:
    data = (BAD / "binary-garbage.bin").read_bytes()
    error = _raises(parse, data.decode("utf-8", errors="replace"), "garbage.bin")
    assert "binary" in error.detail
    assert error.line == 1


def test_undecodable_bytes(tmp_path: Path) -> None:
    data = (BAD / "binary-garbage.bin").read_bytes()
    path = tmp_path / "garbage.bin"
    path.write_bytes(b"line one\nline two\n" + data.replace(b"\x00", b""))
    with pytest.raises(InputError, match="not UTF-8") as info:
        read_input_text(str(path), "a saved output")
    assert info.value.line == 3
    path.write_bytes("\ufeffGPU 0: x\n".encode())
    assert read_input_text(str(path), "a saved output") == "GPU 0: x\n"


@pytest.mark.parametrize("parse", PARSERS, ids=IDS)
def test_unrelated_text(parse: Parser) -> None:
    error = _raises(parse, *_bad("not-smi-topo.txt"))
    assert error.detail


def test_table_is_not_query_text() -> None:
    path = Path(__file__).parent.parent / "fixtures" / "corpus" / "h100-vm" / "nvidia-smi.txt"
    _raises(parse_query_text, path.read_text(encoding="utf-8"), str(path))


# --- -q text ------------------------------------------------------------------------------------


def test_q_cut_after_gpu_header_is_an_error() -> None:
    error = _raises(parse_query_text, *_bad("q-cut-after-gpu-header.txt"))
    assert "truncated" in error.detail
    assert error.line == 9


def test_q_cut_mid_gpu_keeps_what_is_there() -> None:
    snapshot = parse_query_text(*_bad("q-cut-mid-gpu.txt"))
    gpu = snapshot.gpus[0]
    assert gpu.name == "NVIDIA H100 80GB HBM3"
    assert gpu.persistence_mode is True
    assert gpu.pcie_gen_max == 5
    assert gpu.pcie_gen_current == 5
    # Cut before "Link Width" values, temperatures and power: the file may have held them.
    assert gpu.pcie_width_current is None
    for field in ("pcie_width_current", "temp_c", "power_draw_w", "power_limit_w", "clock_event_reasons_active"):
        assert gpu.missing[field] == Missing.TRUNCATED
    # Fields no -q prints stay not_in_source.
    assert gpu.missing["numa_node"] == Missing.NOT_IN_SOURCE
    assert any(d.message.startswith(INPUT_ENDS_EARLY) for d in snapshot.diagnostics)


def test_q_cut_at_second_gpu_gives_a_placeholder() -> None:
    snapshot = parse_query_text(*_bad("q-cut-at-second-gpu.txt"))
    assert [g.index for g in snapshot.gpus] == [0, 1]
    first, second = snapshot.gpus
    assert first.name == "NVIDIA H100 80GB HBM3"
    assert first.read_error is None
    assert second.pci_bus_id == "00000000:00:07.0"
    assert second.read_error == Missing.TRUNCATED
    assert second.read_error_detail is not None
    assert "truncated" in second.read_error_detail
    messages = [d.message for d in snapshot.diagnostics]
    assert not any("Attached GPUs" in m for m in messages)  # both announced headers are there
    assert any("line 61" in m for m in messages), messages


def test_q_attached_count_mismatch_is_noted() -> None:
    text, path = _bad("q-cut-mid-gpu.txt")
    snapshot = parse_query_text(
        text.replace("Attached GPUs                                          : 1", "Attached GPUs : 4"), path
    )
    assert any("Attached GPUs is 4" in d.message for d in snapshot.diagnostics)


def test_q_bad_value_is_an_error_reason_not_an_exception() -> None:
    text = (
        "GPU 00000000:01:00.0\n"
        "    GPU Power Readings\n"
        "        Power Draw : lots W\n"
        "        Current Power Limit : 300.00 W\n"
    )
    snapshot = parse_query_text(text, "q.txt")
    gpu = snapshot.gpus[0]
    assert gpu.power_draw_w is None
    assert gpu.missing["power_draw_w"] == Missing.ERROR
    assert gpu.power_limit_w == 300
    assert any("line 3" in d.message and "lots" in d.message for d in snapshot.diagnostics)


# --- XML ------------------------------------------------------------------------------------------


def test_xml_cut_is_read_as_far_as_it_goes() -> None:
    # The file ends inside <utilization>: what came before is read, the rest is truncated, never guessed.
    snapshot = parse_query_xml(*_bad("xml-cut.xml"))
    gpu = snapshot.gpus[0]
    assert (gpu.name, gpu.pci_bus_id, gpu.memory_total_mib, gpu.pcie_gen_current) == (
        "NVIDIA H100 80GB HBM3",
        "00000000:00:06.0",
        81559,
        5,
    )
    assert snapshot.software.driver_version == "580.159.04"
    for field in ("temp_c", "power_draw_w", "power_limit_w", "ecc_uncorrected_volatile", "clock_sm_mhz"):
        assert getattr(gpu, field) is None
        assert gpu.missing[field] == Missing.TRUNCATED
    assert gpu.missing["nvlinks"] == Missing.NOT_IN_SOURCE  # -q -x never holds it
    notes = [d.message for d in snapshot.diagnostics if d.message.startswith(INPUT_ENDS_EARLY)]
    assert notes
    assert "00000000:00:06.0" in notes[0]


def test_xml_cut_before_the_first_gpu_is_an_error() -> None:
    text = _bad("xml-cut.xml")[0]
    error = _raises(parse_query_xml, text[: text.index("<gpu ")], "x.xml")
    assert "truncated" in error.detail
    error = _raises(parse_query_xml, text[: text.index("<nvidia_smi_log>")], "x.xml")
    assert "truncated" in error.detail


def test_xml_malformed_at_the_end_is_not_a_cut() -> None:
    error = _raises(parse_query_xml, "<nvidia_smi_log>\n<gpu>\n</gpux>\n", "x.xml")
    assert "not well-formed" in error.detail
    assert error.line == 3


def test_xml_entity_expansion_refused() -> None:
    error = _raises(parse_query_xml, *_bad("xml-entity-expansion.xml"))
    assert "ENTITY" in error.detail
    assert error.line == 3


def test_xml_internal_subset_refused() -> None:
    text = '<?xml version="1.0"?>\n<!DOCTYPE nvidia_smi_log [ ]>\n<nvidia_smi_log/>\n'
    error = _raises(parse_query_xml, text, "x.xml")
    assert error.line == 2


def test_xml_standard_doctype_accepted() -> None:
    text = (
        '<?xml version="1.0" ?>\n<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">\n'
        "<nvidia_smi_log><driver_version>535.1</driver_version><attached_gpus>0</attached_gpus></nvidia_smi_log>"
    )
    snapshot = parse_query_xml(text, "x.xml")
    assert snapshot.software.driver_version == "535.1"
    assert snapshot.gpus == []
    assert snapshot.gpu_absent_reason is not None


def test_xml_wrong_root() -> None:
    error = _raises(parse_query_xml, *_bad("xml-wrong-root.xml"))
    assert "nvidia_smi_log" in error.detail
    assert "gpu_log" in error.detail


def test_xml_garbage_line_number() -> None:
    error = _raises(parse_query_xml, "<nvidia_smi_log>\n<a>\n</b>\n", "x.xml")
    assert error.line == 3


# --- table ----------------------------------------------------------------------------------------


def test_table_cut_before_rows() -> None:
    error = _raises(parse_table, *_bad("table-cut-before-rows.txt"))
    assert "truncated" in error.detail
    assert error.line is not None


def test_table_cut_mid_row_keeps_first_line() -> None:
    snapshot = parse_table(*_bad("table-cut-mid-row.txt"))
    gpu = snapshot.gpus[0]
    assert gpu.name == "NVIDIA H100 80GB HBM3"
    assert gpu.pci_bus_id == "00000000:00:06.0"
    assert gpu.temp_c is None
    # The file ends after the GPU's first row: its second row's fields were cut off, and GPUs may follow.
    assert gpu.missing["temp_c"] == Missing.TRUNCATED
    assert gpu.missing["power_limit_w"] == Missing.TRUNCATED
    assert gpu.missing["uuid"] == Missing.NOT_IN_SOURCE  # the table never holds it
    assert any(d.message.startswith(INPUT_ENDS_EARLY) for d in snapshot.diagnostics)


def test_table_row_that_is_not_a_gpu_row() -> None:
    text, path = _bad("table-cut-mid-row.txt")
    broken = text.replace("|   0  NVIDIA H100 80GB HBM3          On  |", "| hello world                           |")
    error = _raises(parse_table, broken, path)
    assert error.line == 9


# --- nvlink ---------------------------------------------------------------------------------------


def test_nvlink_link_before_gpu() -> None:
    error = _raises(parse_nvlink_status, *_bad("nvlink-link-before-gpu.txt"))
    assert error.line == 1


def test_nvlink_no_devices() -> None:
    snapshot = parse_nvlink_status("No devices were found\n", "n.txt")
    assert snapshot.gpus == []
    assert snapshot.gpu_absent_reason == "No devices were found"

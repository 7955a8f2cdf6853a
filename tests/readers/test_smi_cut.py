"""Never a smaller number from a cut file: every real -q, -q -x and table file, cut at every line and inside
every number, gives each field its uncut value or null (truncated), and a cut that lost GPUs is said."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from rigcheck.errors import ParseError
from rigcheck.model import Gpu, Missing, Snapshot
from rigcheck.model.snapshot import INPUT_ENDS_EARLY
from rigcheck.readers.smi.query_text import parse_query_text
from rigcheck.readers.smi.query_xml import parse_query_xml
from rigcheck.readers.smi.table import parse_table

FIXTURES = Path(__file__).parent.parent / "fixtures"
CORPUS = FIXTURES / "corpus"
Parser = Callable[[str, str | None], Snapshot]


def _reader(path: Path) -> Parser:
    """smi-extra holds both -q and table files: the table is the one with nvidia-smi's box."""
    return parse_table if "| NVIDIA-SMI" in path.read_text(encoding="utf-8") else parse_query_text


FILES: list[tuple[Path, Parser]] = [
    *((p, parse_query_text) for p in sorted((CORPUS / "smi-q").glob("*.txt"))),
    (CORPUS / "h100-vm" / "q.txt", parse_query_text),
    (CORPUS / "h100-vm" / "q-d.txt", parse_query_text),
    *((p, _reader(p)) for p in sorted((FIXTURES / "smi-extra").glob("*.txt"))),
    *((p, parse_query_xml) for p in sorted((CORPUS / "smi-xml").glob("*.xml"))),
    (CORPUS / "h100-vm" / "q.xml", parse_query_xml),
    *((p, parse_table) for p in sorted((CORPUS / "smi").glob("*.txt"))),
    (CORPUS / "h100-vm" / "nvidia-smi.txt", parse_table),
    *((p, parse_table) for p in sorted((CORPUS / "smi-err").glob("00[12]-*.txt"))),
]
BOOKKEEPING = {"missing", "index", "read_error", "read_error_detail"}
IDENTITY = {"name", "uuid", "pci_bus_id"}


def _cuts(text: str) -> Iterator[int]:
    """Every line end, and inside and just after every printed value's number (where a cut loses digits or
    the unit); XML tags and attributes, dates and bus ids hold numbers no field reads as one."""
    # The XML's list of supported clocks (hundreds of lines, none read) is cut once, in its middle.
    skip = [(m.start(), m.end()) for m in re.finditer(r"<supported_clocks>.*?</supported_clocks>", text, re.S)]
    yield from ((a + b) // 2 for a, b in skip)
    yield from (m.end() for m in re.finditer(r"\n", text) if not any(a <= m.start() < b for a, b in skip))
    for m in re.finditer(r"(?:[:>|/]\s*|\s)(\d+(?:\.\d+)?)(?=\s*(?:[A-Za-z%/]|<|\s|$))", text):
        if not any(a <= m.start() < b for a, b in skip):
            yield from {m.start(1) + 1, m.end(1) - 1, m.end(1)}


PARTIAL_LISTS = frozenset({"clock_event_reasons_supported", "clock_event_reasons_active", "clock_event_durations_us"})


def _notes(snapshot: Snapshot) -> list[str]:
    return [d.message for d in snapshot.diagnostics if d.message.startswith(INPUT_ENDS_EARLY)]


def _check(cut: Snapshot, whole: Snapshot, where: str) -> None:
    by_index = {g.index: g for g in whole.gpus}
    for attr in ("driver_version", "cuda_driver_version"):
        value = getattr(cut.software, attr)
        assert value is None or value == getattr(whole.software, attr), (where, attr, value)
    truncated = False
    for gpu in cut.gpus:
        base = by_index.get(gpu.index)
        assert base is not None, (where, "a GPU the whole file does not have", gpu.index)
        truncated |= gpu.read_error is Missing.TRUNCATED
        for name in Gpu.model_fields:
            if name in BOOKKEEPING or (base.read_error is not None and name not in IDENTITY):
                continue  # a placeholder keeps only who the GPU is
            value = getattr(gpu, name)
            if name in PARTIAL_LISTS and value is not None:
                # The reasons (and their counters) a cut block printed whole are readings: a part of the whole
                # file's, never a different value.
                whole_value = getattr(base, name)
                assert whole_value is not None, (where, gpu.index, name, value)
                assert set(value) <= set(whole_value), (where, gpu.index, name, value)
                if isinstance(value, dict):
                    assert all(value[k] == whole_value[k] for k in value), (where, gpu.index, name, value)
                continue
            assert value is None or value == getattr(base, name), (where, gpu.index, name, value, getattr(base, name))
            truncated |= gpu.missing.get(name) is Missing.TRUNCATED
    lost = len(cut.gpus) < len(whole.gpus)
    if lost or truncated:
        assert _notes(cut), (where, "lost GPUs or truncated values without a note")


@pytest.mark.parametrize(("path", "parse"), FILES, ids=[str(p.relative_to(FIXTURES)) for p, _ in FILES])
def test_every_cut_reads_the_same_values_or_none(path: Path, parse: Parser) -> None:
    text = path.read_text(encoding="utf-8")
    whole = parse(text, str(path))
    checked = 0
    for end in sorted(set(_cuts(text))):
        if end >= len(text.rstrip()):
            continue
        try:
            cut = parse(text[:end], str(path))
        except ParseError:
            continue  # refused outright: no value at all
        _check(cut, whole, f"cut at {end}: {text[max(0, end - 40) : end]!r}")
        checked += 1
    assert checked > 0


@pytest.mark.parametrize(
    ("path", "parse"),
    [
        (CORPUS / "h100-vm" / "q.txt", parse_query_text),
        (CORPUS / "h100-vm" / "q-d.txt", parse_query_text),
        (CORPUS / "h100-vm" / "q.xml", parse_query_xml),
        (CORPUS / "h100-vm" / "nvidia-smi.txt", parse_table),
        (CORPUS / "smi-q" / "003-1gpu-340-temperature-only.txt", parse_query_text),
        (FIXTURES / "smi-extra" / "001-1xtitanblack-331-old-temperature.txt", parse_query_text),
    ],
    ids=lambda v: getattr(v, "name", ""),
)
def test_whole_files_are_not_said_to_end_early(path: Path, parse: Parser) -> None:
    snapshot = parse(path.read_text(encoding="utf-8"), str(path))
    assert not _notes(snapshot)
    assert not any(Missing.TRUNCATED in g.missing.values() for g in snapshot.gpus)


def test_the_issue_cut_power_limit_is_not_70_watts() -> None:
    # The issue's case: a -q cut at "Current Power Limit : 70" (700 W) read as a 70 W limit.
    text = (CORPUS / "h100-vm" / "q.txt").read_text()
    end = text.index("700.00 W", text.index("Current Power Limit")) + 2
    gpu = parse_query_text(text[:end], "q.txt").gpus[0]
    assert gpu.power_limit_w is None
    assert gpu.missing["power_limit_w"] == Missing.TRUNCATED
    assert gpu.power_draw_w is not None  # read whole before the cut


def test_a_table_that_lost_gpus_says_so() -> None:
    text = (CORPUS / "smi" / "001-4x-rtx6000ada-575-truncated-names.txt").read_text()
    end = text.index("|   2  NVIDIA RTX 6000")
    snapshot = parse_table(text[:end], "t.txt")
    assert [g.index for g in snapshot.gpus] == [0, 1]
    assert any("after GPU 1" in n for n in _notes(snapshot))
    # Cut inside GPU 2's first row: the GPU is kept by its index, with nothing read from the cut cell.
    end = text.index("00000000:", end) + 6
    snapshot = parse_table(text[:end], "t.txt")
    third = snapshot.gpus[2]
    assert third.index == 2
    assert third.pci_bus_id is None
    assert third.missing["pci_bus_id"] == Missing.TRUNCATED
    assert third.missing["temp_c"] == Missing.TRUNCATED


def test_a_whole_table_without_the_process_box_is_not_cut() -> None:
    # Pasted up to the GPU table and the blank line after it: no GPU can be missing.
    snapshot = parse_table((CORPUS / "smi-err" / "002-8xa30-525-gpu3-err-after-xid119-no-process-box.txt").read_text())
    assert len(snapshot.gpus) == 8
    assert not _notes(snapshot)


def test_number_without_unit_is_truncated_in_the_middle_of_a_file() -> None:
    text = "GPU 00000000:01:00.0\n    GPU Power Readings\n        Current Power Limit : 70\n    Processes : None\n"
    gpu = parse_query_text(text, "q.txt").gpus[0]
    assert gpu.power_limit_w is None
    assert gpu.missing["power_limit_w"] == Missing.TRUNCATED


def test_q_minus_d_performance_ending_in_its_reasons_is_whole() -> None:
    # `nvidia-smi -q -d PERFORMANCE` ends inside "Clocks Throttle Reasons", after its last reason.
    text = (
        "GPU 00000000:18:00.0\n    Performance State               : P0\n    Clocks Throttle Reasons\n"
        "        Idle                        : Not Active\n        SW Power Cap                : Active\n"
        "        Display Clock Setting       : Not Active\n"
    )
    gpu = parse_query_text(text, "perf.txt").gpus[0]
    assert gpu.clock_event_reasons_active == ["sw_power_cap"]
    # Ending before its last reason, after a whole line: the lines it holds are readings, not a cut block.
    gpu = parse_query_text(text[: text.index("        Display")], "perf.txt").gpus[0]
    assert gpu.clock_event_reasons_active == ["sw_power_cap"]
    assert gpu.clock_event_reasons_supported == ["idle", "sw_power_cap"]
    # Cut inside a line (no line end): that line alone is lost, the whole ones before it are read.
    gpu = parse_query_text(text[: text.index("Active", text.index("SW Power Cap"))], "perf.txt").gpus[0]
    assert gpu.clock_event_reasons_supported == ["idle"]
    # Cut inside its first line: nothing of the block was read whole, so it is truncated.
    gpu = parse_query_text(text[: text.index("Not Active")], "perf.txt").gpus[0]
    assert gpu.clock_event_reasons_active is None
    assert gpu.missing["clock_event_reasons_active"] == Missing.TRUNCATED


def test_ecc_sum_of_a_cut_section_is_not_partial() -> None:
    text = (CORPUS / "h100-vm" / "q.txt").read_text()
    end = text.index("DRAM Uncorrectable", text.index("ECC Errors"))
    gpu = parse_query_text(text[:end], "q.txt").gpus[0]
    assert gpu.ecc_uncorrected_volatile is None
    assert gpu.missing["ecc_uncorrected_volatile"] == Missing.TRUNCATED


def test_xml_instant_draw_past_the_cut_is_not_replaced_by_the_average() -> None:
    text = (CORPUS / "smi-xml" / "005-2xa5000-590-v13.xml").read_text()
    end = text.index("<instant_power_draw>")
    gpu = parse_query_xml(text[:end], "x.xml").gpus[0]
    assert gpu.power_draw_avg_w is not None
    assert gpu.power_draw_w is None
    assert gpu.missing["power_draw_w"] == Missing.TRUNCATED


def test_the_doctor_shows_that_the_input_ends_early() -> None:
    from rich.console import Console

    from rigcheck.checks.doctor import run_checks
    from rigcheck.model.doctor import doctor_document
    from rigcheck.report.doctor import doctor_html, doctor_markdown, doctor_terminal

    text = (CORPUS / "smi" / "001-4x-rtx6000ada-575-truncated-names.txt").read_text()
    snapshot = parse_table(text[: text.index("|   2  NVIDIA RTX 6000")], "t.txt")
    doc = doctor_document(snapshot, run_checks(snapshot), exit_code=0, strict=False)
    console = Console(width=200, record=True)
    console.print(doctor_terminal(doc))
    for rendered in (console.export_text(), doctor_markdown(doc), doctor_html(doc)):
        assert "input ends early: the GPU table stops" in rendered
    whole = parse_table(text, "t.txt")
    assert "input ends early" not in doctor_markdown(doctor_document(whole, [], exit_code=0, strict=False))


def test_q_ending_in_its_ecc_section_after_every_sum_is_whole() -> None:
    # Shaped like `nvidia-smi -q -d ECC`: the file ends inside "ECC Errors", after the keys every sum ends with.
    text = (CORPUS / "h100-vm" / "q-d.txt").read_text()
    gpu = parse_query_text(text[: text.index("    Retired Pages")], "q.txt").gpus[0]
    assert (gpu.ecc_uncorrected_volatile, gpu.ecc_uncorrected_aggregate, gpu.ecc_corrected_volatile) == (0, 0, 0)
    # Cut before the aggregate's DRAM Uncorrectable: only that sum may be short.
    aggregate = text.index("        Aggregate\n", text.index("ECC Errors"))
    gpu = parse_query_text(text[: text.index("DRAM Uncorrectable", aggregate)], "q.txt").gpus[0]
    assert (gpu.ecc_uncorrected_volatile, gpu.ecc_corrected_volatile) == (0, 0)
    assert gpu.ecc_uncorrected_aggregate is None
    assert gpu.missing["ecc_uncorrected_aggregate"] == Missing.TRUNCATED

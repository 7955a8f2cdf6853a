"""The small value parsers shared by the nvidia-smi parsers."""

from __future__ import annotations

import pytest

from rigcheck.errors import ParseError
from rigcheck.model import CLOCK_EVENT_REASONS, Gpu, Missing
from rigcheck.readers.smi.values import (
    COUNTER_BY_LABEL,
    REASON_BY_LABEL,
    check_text,
    finish_missing,
    na_reason,
    parse_bool,
    parse_celsius,
    parse_compute_mode,
    parse_gbps,
    parse_gen,
    parse_int,
    parse_mib,
    parse_microseconds,
    parse_percent,
    parse_watts,
    parse_width,
    strip_ansi,
)


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("N/A", Missing.REPORTED_NA),
        ("[N/A]", Missing.REPORTED_NA),
        ("Not Supported", Missing.REPORTED_NA),
        ("[Not Supported]", Missing.REPORTED_NA),
        ("Requested functionality has been deprecated", Missing.REPORTED_NA),
        ("[Insufficient Permissions]", Missing.NO_PERMISSION),
        ("ERR!", Missing.ERROR),
        ("[Unknown Error]", Missing.ERROR),
        ("[GPU requires reset]", Missing.GPU_LOST),
        ("0", None),
        ("55.63 W", None),
    ],
)
def test_na_reason(raw: str, reason: Missing | None) -> None:
    assert na_reason(raw) == reason


def test_numbers_with_units() -> None:
    assert parse_watts("55.63 W").value == pytest.approx(55.63)
    assert parse_watts("74W").value == 74
    assert parse_watts("N/A").reason == Missing.REPORTED_NA
    assert parse_celsius("-8 C").value == -8
    assert parse_celsius("31C").value == 31
    assert parse_mib("81559 MiB").value == 81559
    assert parse_mib("2MiB").value == 2
    assert parse_mib("1 GiB").value == 1024
    assert parse_percent("30 %").value == 30
    assert parse_percent("0%").value == 0
    assert parse_microseconds("33534556 us").value == 33534556
    assert parse_microseconds("2 ms").value == 2000
    assert parse_gbps("25.781 GB/s").value == pytest.approx(25.781)
    assert parse_int("0").value == 0
    assert parse_width("16x").value == 16
    assert parse_gen("5").value == 5


def test_unparsable_value_is_error_with_message() -> None:
    result = parse_watts("12 V")
    assert result.value is None
    assert result.reason == Missing.ERROR
    assert result.error is not None
    assert "12 V" in result.error
    assert parse_int("1.5").reason == Missing.ERROR


def test_bools_and_modes() -> None:
    assert parse_bool("Enabled").value is True
    assert parse_bool("Disabled").value is False
    assert parse_bool("On").value is True
    assert parse_bool("Not Active").value is False
    assert parse_bool("Yes").value is True
    assert parse_bool("maybe").reason == Missing.ERROR
    assert parse_compute_mode("E. Process").value == "Exclusive_Process"
    assert parse_compute_mode("Default").value == "Default"


def test_strip_ansi() -> None:
    assert strip_ansi("\x1b[4mGPU0\x1b[0m\tX") == "GPU0\tX"


def test_check_text() -> None:
    check_text("GPU 0: A (UUID: x)\n\x1b[0m\tLink 0: 1 GB/s\n", "ok.txt")
    with pytest.raises(ParseError, match="empty file"):
        check_text(" \n", "e.txt")
    with pytest.raises(ParseError, match="binary") as info:
        check_text("a\nb\nc\x00\n", "b.txt")
    assert info.value.line == 3


def test_reason_tables_use_model_names() -> None:
    assert set(REASON_BY_LABEL.values()) <= set(CLOCK_EVENT_REASONS)
    assert set(COUNTER_BY_LABEL.values()) <= set(CLOCK_EVENT_REASONS)
    assert set(REASON_BY_LABEL.values()) == set(CLOCK_EVENT_REASONS)


def test_finish_missing_keeps_existing_reasons() -> None:
    gpu = Gpu(index=0, name="x")
    gpu.mark_missing("temp_c", Missing.REPORTED_NA)
    finish_missing(gpu)
    assert gpu.missing["temp_c"] == Missing.REPORTED_NA
    assert gpu.missing["power_draw_w"] == Missing.NOT_IN_SOURCE
    assert "name" not in gpu.missing
    assert "index" not in gpu.missing
    assert "read_error" not in gpu.missing
    finish_missing(gpu, ["uuid"])
    assert gpu.missing["uuid"] == Missing.NOT_IN_SOURCE


def test_unit_required_reads_a_number_without_it_as_cut() -> None:
    # "Current Power Limit : 70" is the start of "700.00 W": with unit=True it is never 70 W.
    for parse, whole, cut in (
        (parse_watts, "700.00 W", "70"),
        (parse_celsius, "33 C", "33"),
        (parse_mib, "81559 MiB", "8155"),
        (parse_percent, "30 %", "30"),
        (parse_microseconds, "33534556 us", "335"),
    ):
        assert parse(whole, unit=True).value is not None
        result = parse(cut, unit=True)
        assert result.value is None
        assert result.reason == Missing.TRUNCATED
        assert result.error is not None
        assert parse(cut).value is not None  # CSV traces print no units: the default still reads them
    assert parse_width("16x", unit=True).value == 16
    assert parse_width("1", unit=True).reason == Missing.TRUNCATED
    assert parse_watts("N/A", unit=True).reason == Missing.REPORTED_NA


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("GPU is lost", Missing.GPU_LOST),
        ("GPU is lost.", Missing.GPU_LOST),
        ("[GPU is lost]", Missing.GPU_LOST),
        ("Timeout", Missing.ERROR),
        ("Insufficient External Power", Missing.ERROR),
        ("GPU access blocked by the operating system", Missing.NO_PERMISSION),
    ],
)
def test_nvml_error_strings(raw: str, reason: Missing) -> None:
    assert na_reason(raw) == reason


def test_absent_reason_reads_a_typographic_apostrophe() -> None:
    # "couldn’t" as a web page or a chat prints it (U+2019): the same message as the ASCII one
    from rigcheck.readers.smi.values import absent_reason

    line = "NVIDIA-SMI has failed because it couldn\u2019t communicate with the NVIDIA driver."
    assert absent_reason(f"$ nvidia-smi\n{line}\n") == line
    assert absent_reason("couldnt talk\n") is None

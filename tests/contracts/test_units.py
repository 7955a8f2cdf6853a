"""rigcheck.units: the one place numbers get their units; each helper writes what its callers wrote before."""

from __future__ import annotations

import pytest

from rigcheck.units import (
    GIB,
    KIB,
    MIB,
    exact_size,
    figure,
    fmt,
    fmt_or_na,
    gigabytes,
    percent,
    rounded_size,
    short_size,
)


@pytest.mark.parametrize(
    ("args", "text"),
    [
        ((250.0, "W"), "250 W"),
        ((1.50, "s", 1), "1.5 s"),
        ((2.0, "s", 1), "2 s"),
        ((12.345, "%", 1), "12.3%"),
        ((7.0,), "7"),
    ],
)
def test_fmt_drops_trailing_zeros_and_writes_percent_close(args: tuple[float, ...], text: str) -> None:
    assert fmt(*args) == text  # type: ignore[arg-type]


def test_fmt_or_na() -> None:
    assert (fmt_or_na(None, "W"), fmt_or_na(699.6, "W")) == ("n/a", "700 W")


@pytest.mark.parametrize(
    ("value", "text"), [(None, "-"), (1234.4, "1,234"), (-1234.4, "-1,234"), (55.12, "55.1"), (2.346, "2.35")]
)
def test_figure_digits_by_size(value: float | None, text: str) -> None:
    assert figure(value) == text


def test_percent() -> None:
    assert (percent(0.853), percent(None), percent(0.5, 0)) == ("85.3%", "-", "50%")


def test_sizes_in_each_wording() -> None:
    assert [exact_size(n) for n in (GIB, 256 * MIB, 4 * KIB, 1000, 3 * GIB // 2)] == [
        "1 GiB",
        "256 MiB",
        "4 KiB",
        "1000 B",
        "1536 MiB",
    ]
    assert exact_size(4 * KIB, ("GiB", "MiB")) == "4096 B"  # the bands name sizes in MiB and GiB only
    assert [short_size(n) for n in (512, 1536, 8 * MIB, 2 * GIB, 4096 * GIB)] == [
        "512 B",
        "1.5 KiB",
        "8 MiB",
        "2 GiB",
        "4096 GiB",
    ]
    assert [rounded_size(n) for n in (1024, 1536, 1 << 40)] == ["1 KiB", "1.5 KiB", "1 TiB"]
    assert rounded_size(1 << 40, "GiB") == "1024 GiB"
    assert gigabytes(1_234_560_000_000) == "1,234.6 GB"

"""Numbers with their units as rigcheck writes them, in one place for every layer: watts and degrees in a
finding, GB/s in a table, message and block sizes, shares of time.

A leaf (imports nothing of rigcheck): the facts tables, the judges, the benchmarks and the reports all word
figures through it. Each helper writes exactly the text its callers wrote before they shared it (the golden
outputs hold it), so a helper is chosen for its wording, not invented per call.
"""

from __future__ import annotations

from collections.abc import Sequence

KIB = 1 << 10
MIB = 1 << 20
GIB = 1 << 30
_BINARY = {"B": 1, "KiB": KIB, "MiB": MIB, "GiB": GIB, "TiB": 1 << 40}


def fmt(value: float, unit: str = "", digits: int = 0) -> str:
    """A number with its unit, ``"250 W"``; trailing zeros dropped when digits > 0; ``%`` written close."""
    text = f"{value:.{digits}f}"
    if digits > 0 and "." in text:
        text = text.rstrip("0").rstrip(".")
    if unit == "%":
        return f"{text}%"
    return f"{text} {unit}" if unit else text


def fmt_or_na(value: float | None, unit: str, digits: int = 0) -> str:
    """:func:`fmt`, or ``"n/a"`` for a figure not read."""
    return fmt(value, unit, digits) if value is not None else "n/a"


def figure(value: float | None) -> str:
    """A measured figure in a table cell, its digits by its size: ``"1,234"``, ``"55.1"``, ``"2.35"``; ``"-"``
    for none."""
    if value is None:
        return "-"
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


def percent(fraction: float | None, digits: int = 1) -> str:
    """A fraction as a percentage, ``0.853 -> "85.3%"``; ``"-"`` for none."""
    return "-" if fraction is None else f"{fraction * 100:.{digits}f}%"


def exact_size(size: int, units: Sequence[str] = ("GiB", "MiB", "KiB")) -> str:
    """A size in the largest of ``units`` that divides it, as nccl-tests users name sizes: ``"1 GiB"``,
    ``"256 MiB"``; else in bytes, ``"1000 B"``."""
    for unit in units:
        scale = _BINARY[unit]
        if size >= scale and size % scale == 0:
            return f"{size // scale} {unit}"
    return f"{size} B"


def short_size(size: int) -> str:
    """A size in the largest unit up to GiB under which it stays below 1024, shortest digits: ``"1.5 KiB"``,
    ``"4 GiB"`` (progress lines and phase names)."""
    value = float(size)
    for unit in ("B", "KiB", "MiB"):
        if value < KIB:
            return f"{value:g} {unit}"
        value /= KIB
    return f"{value:g} GiB"


def rounded_size(size: float, largest: str = "TiB") -> str:
    """A size in the largest unit up to ``largest`` under which it stays below 1024, whole or to one decimal:
    ``"1 KiB"``, ``"1.5 MiB"`` (table cells and axis ticks)."""
    value = float(size)
    for unit in _BINARY:
        if abs(value) < KIB or unit == largest:
            return f"{value:.0f} {unit}" if value == int(value) else f"{value:.1f} {unit}"
        value /= KIB
    return f"{size} B"  # pragma: no cover - every unit above ends the loop


def gigabytes(value: float) -> str:
    """Bytes in decimal gigabytes, ``"1,234.5 GB"`` (memory a plan needs)."""
    return f"{value / 1e9:,.1f} GB"


def plural(n: int, word: str, many: str | None = None) -> str:
    """A count with its noun: ``"1 check"``, ``"3 checks"``; ``many`` for a noun whose plural is not word + s
    (``plural(1, "entry", "entries")``)."""
    return f"{n} {word}" if n == 1 else f"{n} {many or word + 's'}"

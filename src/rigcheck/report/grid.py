"""A table of plain cells laid out directly, as the segments rich's ``Table(box=None, pad_edge=False,
header_style="bold")`` draws for it where it fits the width.

rich measures every cell of a table (twice where a report first asks whether it fits) and pads each through its own
renderables: for the doctor report of an 8-GPU machine, its GPU table and topology matrix were a third of the start
(callgrind). A :class:`PlainGrid` holds only cells rich draws as they are (:func:`plain`: printable ASCII, one
terminal cell a character, nothing rich would read as an emoji code or markup), so its width is the sum of its
columns' widest cells, and its segments are those of rich's table: the header bold, its padding too; two padding
spaces between columns, none at the edges; each cell padded to its column's width (left or centred, the extra space
on the right) in the cell's own style. Where a cell is not plain, or the grid is wider than the terminal, the report
draws rich's table (which then wraps or folds): tests/report/test_plain_grid.py holds both to the same segments.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderResult

Justify = Literal["left", "center"]
Cell = tuple[str, str]  # (text, rich style name; "" for none)

_PAD = 2  # a column's right padding plus the next one's left padding


def plain(text: str) -> bool:
    """Whether rich draws ``text`` as it is, one terminal cell a character: printable ASCII, and no ``:`` (which
    could open an emoji code, ``:fire:``) nor ``[`` (markup, on a console that reads it)."""
    return text.isascii() and text.isprintable() and ":" not in text and "[" not in text


class PlainGrid:
    """Rows of plain cells under a bold header, laid out as rich's borderless table lays them out."""

    def __init__(self, header: Sequence[str], rows: Sequence[Sequence[Cell]], justify: Sequence[Justify]) -> None:
        self.header = header
        self.rows = rows
        self.justify = justify
        self.widths = [max([len(header[i]), *(len(row[i][0]) for row in rows)]) for i in range(len(justify))]
        self.width = sum(self.widths) + _PAD * (len(self.widths) - 1)

    @classmethod
    def of(cls, header: Sequence[str], rows: Sequence[Sequence[Cell]], justify: Sequence[Justify]) -> PlainGrid | None:
        """The grid of these cells, or None where one is not :func:`plain` or a row is short (rich's table then)."""
        columns = len(justify)
        if len(header) != columns or any(len(row) != columns for row in rows):
            return None
        if not all(plain(text) for text in header) or not all(plain(text) for row in rows for text, _ in row):
            return None
        return cls(header, rows, justify)

    def fits(self, max_width: int) -> bool:
        return self.width <= max_width

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        from rich.segment import Segment
        from rich.style import Style

        bold, none = Style(bold=True), Style()
        styles: dict[str, Style | None] = {"": None}
        header: list[Cell] = [(text, "") for text in self.header]
        for cells, pad_style, is_header in ((header, bold, True), *((row, none, False) for row in self.rows)):
            for i, ((text, style_name), width, justify) in enumerate(
                zip(cells, self.widths, self.justify, strict=True)
            ):
                if i:
                    yield Segment(" ", pad_style)
                    yield Segment(" ", pad_style)
                if style_name not in styles:
                    styles[style_name] = console.get_style(style_name)
                style = bold if is_header else styles[style_name]
                yield Segment(_justified(text, width, justify), style)
            yield Segment.line()


def _justified(text: str, width: int, justify: Justify) -> str:
    if justify == "center":
        left = (width - len(text)) // 2
        return " " * left + text.ljust(width - left)
    return text.ljust(width)


def drawn_width(widths: Sequence[int]) -> int:
    """The width of a borderless table with columns this wide (two padding spaces between columns)."""
    return sum(widths) + _PAD * (len(widths) - 1)


def fitting(
    header: Sequence[str], left_out_first: Sequence[str], width: int, drawn: Callable[[list[int]], int]
) -> list[int]:
    """The columns (indices into ``header``) kept at ``width``: those of ``left_out_first`` go in that order until
    ``drawn`` (the table's width with the columns kept) fits."""
    kept = list(range(len(header)))
    for name in left_out_first:
        if drawn(kept) <= width:
            break
        kept.remove(header.index(name))
    return kept


class FoldingTable:
    """A borderless table that keeps the columns the width has room for: where every cell whole is wider than the
    line, the columns of ``left_out_first`` go in that order (a line under the table names them) before rich would
    fold a cell into a narrow column and cut a figure or a verdict in two. The rest, whole or as rich folds the last
    of them, is drawn by rich's table; the full table is the JSON's and the Markdown's."""

    def __init__(
        self,
        header: Sequence[str],
        rows: Sequence[Sequence[Cell]],
        *,
        left_out_first: Sequence[str] = (),
        right: Sequence[str] = (),
    ) -> None:
        self.header = list(header)
        self.rows = rows
        self.left_out_first = [h for h in left_out_first if h in self.header]
        self.right = set(right)

    def kept(self, width: int) -> list[int]:
        """The indices of the columns drawn at ``width``: every one where the widest cells fit."""
        from rich.cells import cell_len

        widths = [max([cell_len(h), *(cell_len(row[i][0]) for row in self.rows)]) for i, h in enumerate(self.header)]
        return fitting(self.header, self.left_out_first, width, lambda kept: drawn_width([widths[i] for i in kept]))

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        from rich.table import Table
        from rich.text import Text

        from rigcheck.report.common import Hanging

        kept = self.kept(options.max_width)
        table = Table(box=None, pad_edge=False, header_style="bold")
        for i in kept:
            table.add_column(self.header[i], justify="right" if self.header[i] in self.right else "left")
        for row in self.rows:
            table.add_row(*(Text(row[i][0], style=row[i][1]) for i in kept))
        yield table
        left_out = [h for i, h in enumerate(self.header) if i not in kept]
        if left_out:
            yield Hanging(Text(f"(left out at this width: {', '.join(left_out)})", style="dim"), 1)

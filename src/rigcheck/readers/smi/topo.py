"""Parse the output of ``nvidia-smi topo -m`` into a :class:`~rigcheck.model.TopoMatrix`.

The table is printed with tabs: every cell is followed by one tab, and since driver ~450 the
"NUMA Affinity" cell by two when a "GPU NUMA ID" column follows. Copied from a terminal, the tabs
become spaces up to the next multiple of 8; :func:`_space_fields` rebuilds the tab-separated cells
from those positions, so an empty cell (two tabs in a row) survives the copy. Text that was
re-aligned by hand (not on 8-column stops) is read by the header's column positions instead.

Real-world variants handled: ANSI escapes in the header, a header without its leading tab, NIC
rows and the "NIC Legend:" section, old drivers naming the NIC itself (``mlx4_0``) and using SOC,
legends that wrap or are absent, CRLF, a missing final newline, "N/A" kept as printed.

A cut paste (the text ends after some rows, nothing after them) is read as far as it goes: the matrix holds the
devices whose rows are whole, :class:`TopoCut` says which the header names beyond them, a row the text ends
inside is left out, and an affinity value the text ends on (no newline after it) is not taken (it may be short).
Which header names are devices comes from the header: every name before its first affinity column.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from rigcheck.errors import ParseError
from rigcheck.facts.legend import kind_of, lookup, nvlink_count, rank_of
from rigcheck.model.snapshot import INPUT_ENDS_EARLY, GpuPair, Nic, TopoGpu, TopoMatrix
from rigcheck.readers.smi.ansi import strip_ansi

__all__ = ["TopoCut", "pairs_from_topology", "parse_topo", "read_topo"]

CPU_AFFINITY = "CPU Affinity"
NUMA_AFFINITY = "NUMA Affinity"
GPU_NUMA_ID = "GPU NUMA ID"
AFFINITY_COLUMNS = (CPU_AFFINITY, NUMA_AFFINITY, GPU_NUMA_ID)

_TAB = 8
_BINARY_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufffd]")
_GPU_RE = re.compile(r"^GPU(\d+)$")
_NIC_RE = re.compile(r"^NIC\d+$")
_CODE_SHAPE_RE = re.compile(r"^[A-Z][A-Z0-9#]*$")
_HEADER_NAME_RE = re.compile(r"CPU Affinity|NUMA Affinity|GPU NUMA ID|\S+")
_NIC_LEGEND_RE = re.compile(r"^\s*(\S+)\s*:\s*(\S+)\s*$")
_OLD_LEGEND_RE = re.compile(r"^\s*SOC\s*=|PCIe switch")
_NODE_VALUE_RE = re.compile(r"^(?:\d+(?:[-,]\d+)*|N/A)$")
_SPACE_RUN_RE = re.compile(r"\S {2,}\S")  # two words in one tab cell, apart by a run of spaces


@dataclass(frozen=True)
class _Cell:
    text: str  # stripped
    col: int  # display column where the cell starts (tabs expanded to 8)


@dataclass(frozen=True)
class _Line:
    cells: list[_Cell]
    # True when ``cells`` are real tab-separated cells (empty ones included);
    # False when only the non-empty words are known (hand-aligned text).
    exact: bool


def _next_stop(col: int) -> int:
    return (col // _TAB + 1) * _TAB


def _tab_fields(line: str) -> list[_Cell]:
    cells: list[_Cell] = []
    col = 0
    for raw in line.split("\t"):
        lead = len(raw) - len(raw.lstrip(" "))
        cells.append(_Cell(raw.strip(), col + lead if raw.strip() else col))
        col = _next_stop(col + len(raw))
    return cells


def _space_fields(line: str) -> _Line:
    """Cells of a tab-less line: rebuilt from 8-column tab stops where the text sits on them."""
    words = [(m.group(0), m.start()) for m in re.finditer(r"\S+", line)]
    on_stops = all(c % _TAB == 0 or (w == "X" and c % _TAB == 1) for w, c in words)
    if not words or not on_stops:
        return _Line([_Cell(w, c) for w, c in words], exact=False)
    cells: list[_Cell] = []
    stop = 0  # where the next cell starts
    for word, col in words:
        start = col - col % _TAB
        if start < stop:
            return _Line([_Cell(w, c) for w, c in words], exact=False)
        cells.extend(_Cell("", s) for s in range(stop, start, _TAB))  # one empty cell per extra tab
        cells.append(_Cell(word, col))
        stop = _next_stop(col + len(word))
    # Trailing spaces that reach further tab stops stand for trailing (empty) cells.
    end = len(line)
    if end >= stop:
        cells.extend(_Cell("", s) for s in range(stop, end + 1, _TAB) if s <= end)
    return _Line(cells, exact=True)


def _mixed(line: str) -> bool:
    """Tabs and runs of spaces both separating cells (a terminal copy that kept some tabs): the line is then
    read as a person sees it, with its tabs expanded to the 8-column stops."""
    return "\t" in line and any(_SPACE_RUN_RE.search(cell) for cell in line.split("\t"))


def _split(line: str) -> _Line:
    if _mixed(line):
        return _space_fields(line.expandtabs(_TAB))
    if "\t" in line:
        return _Line(_tab_fields(line), exact=True)
    return _space_fields(line)


def _header_names(line: str) -> list[_Cell]:
    """Column names of the header with their display columns (names may hold single spaces)."""
    if _mixed(line):
        line = line.expandtabs(_TAB)
    if "\t" in line:
        # A tab cell may hold two names a single space apart ("NIC3 CPU Affinity", "mlx5_3 CPU Affinity": a tab
        # that became one space): each is a column.
        return [
            _Cell(m.group(0), c.col + m.start()) for c in _tab_fields(line) for m in _HEADER_NAME_RE.finditer(c.text)
        ]
    names: list[_Cell] = []
    for piece in re.finditer(r"\S+(?: \S+)*", line):
        for m in _HEADER_NAME_RE.finditer(piece.group(0)):
            names.append(_Cell(m.group(0), piece.start() + m.start()))
    return names


def _glued_header(names: list[_Cell], after: list[str]) -> list[_Cell] | None:
    """The header when a prompt was pasted on its line ("$ nvidia-smi topo -m   GPU0   GPU1 ..."): the names
    from GPU0 on, moved to where nvidia-smi prints them (GPU0 one tab in), if the next line is the GPU0 row."""
    first = next((k for k, n in enumerate(names) if n.text == "GPU0"), None)
    if not first or not _looks_like_header(names[first:]):
        return None
    following = next((line for line in after if line.strip()), "")
    if following.split()[:2] != ["GPU0", "X"]:  # GPU0's row, its first code on the diagonal
        return None
    shift = _TAB - names[first].col
    return [_Cell(n.text, n.col + shift) for n in names[first:]]


def _is_device_name(name: str) -> bool:
    return bool(_GPU_RE.match(name) or _NIC_RE.match(name))


def _looks_like_header(names: list[_Cell]) -> bool:
    return bool(names) and bool(_GPU_RE.match(names[0].text)) and all(n.text != "X" for n in names)


def _clean(text: str, path: str | None) -> list[str]:
    if not text.strip():
        raise ParseError("empty input: expected the output of `nvidia-smi topo -m`", path=path)
    lines = strip_ansi(text).replace("\r\n", "\n").replace("\r", "\n").split("\n")
    for number, line in enumerate(lines, start=1):
        bad = _BINARY_RE.search(line)
        if bad:
            raise ParseError(
                f"binary data (character {ord(bad.group(0)):#04x}), not `nvidia-smi topo -m` output",
                path=path,
                line=number,
            )
    return lines


def _assign_by_position(words: list[_Cell], columns: list[_Cell]) -> list[str]:
    """Put ``words`` (fewer than ``columns``) under the columns, in order, by display position.

    A value is printed at or left of its column's name (values are shorter than the names), so a
    word goes to the first free column starting at or after it, as long as the rest still fit.
    """
    out = [""] * len(columns)
    j = 0
    for i, word in enumerate(words):
        last = len(columns) - (len(words) - i)
        while j < last and columns[j].col < word.col - 2:
            j += 1
        out[j] = word.text
        j += 1
    return out


def _affinity_values(
    trailing: list[_Cell], exact: bool, columns: list[_Cell], *, label: str, path: str | None, number: int
) -> list[str]:
    names = [c.text for c in columns]
    cells = list(trailing)
    m = len(columns)
    if exact and NUMA_AFFINITY in names:
        i = names.index(NUMA_AFFINITY)
        # nvidia-smi prints two tabs after the NUMA Affinity value when another column follows.
        if i + 1 < m and len(cells) > m and cells[i + 1].text == "":
            del cells[i + 1]
    while len(cells) > m and cells[-1].text == "":
        cells.pop()
    if exact and len(cells) == m:
        return [c.text for c in cells]
    words = [c for c in cells if c.text]
    if len(words) > m:
        raise ParseError(
            f"row {label} has {len(words)} values after the link codes, the header names {m} "
            f"({', '.join(names) or 'none'})",
            path=path,
            line=number,
        )
    if len(words) == m:
        return [c.text for c in words]
    return _assign_by_position(words, columns)


@dataclass(frozen=True)
class TopoCut:
    """Where a cut ``topo -m`` paste stops."""

    line: int  # the text's last line
    after: str  # the last row read whole
    unread: tuple[str, ...]  # the devices the header names whose rows the text does not hold
    partial: tuple[int, str] | None = None  # (GPU, column) of the value the text ends on: not taken

    def message(self) -> str:
        return (
            f"{INPUT_ENDS_EARLY}: the topo -m matrix stops at line {self.line}, after row {self.after}; "
            f"the header names {', '.join(self.unread)} too, whose rows are not in the text"
        )


@dataclass
class _Rows:
    codes: dict[str, list[str]]
    values: dict[str, list[str | None]]  # a GPU row's affinity values, one per column after the devices
    end: int  # the index of the first line after the matrix
    cut_inside: str | None = None  # the row the text ends inside (left out)
    last: str | None = None  # the row on the text's last line, when the text ends on it (no newline)


def _find_header(lines: list[str], path: str | None) -> tuple[int, list[_Cell]]:
    """The header: the first line naming GPU0, GPU1, ... (prompt lines before it are skipped)."""
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        names = _header_names(line)
        if _looks_like_header(names):
            return i, names
        glued = _glued_header(names, lines[i + 1 :])
        if glued is not None:
            return i, glued
        first = names[0].text if names else ""
        if _is_device_name(first):
            raise ParseError(f"no header row before the {first} row", path=path, line=i + 1)
    first_line = next(i for i, line in enumerate(lines) if line.strip()) + 1
    raise ParseError(
        "no header row naming GPU0, GPU1, ...; this is not `nvidia-smi topo -m` output", path=path, line=first_line
    )


def _device_count(names: list[_Cell], lines: list[str]) -> int:
    """How many of the header's names are devices (GPUs, NICs). Every name before the first affinity column is
    one, so a NIC the header names by itself (mlx4_0) is a device even where the text ends before its row;
    without an affinity column, the names shaped like a device or labelling a row below the header."""
    texts = [n.text for n in names]
    affinity = next((k for k, text in enumerate(texts) if text in AFFINITY_COLUMNS), None)
    if affinity is not None:
        return affinity
    row_labels: set[str] = set()
    for line in lines:
        if not line.strip():
            break
        split = _split(line)
        if split.cells and split.cells[0].text:
            row_labels.add(split.cells[0].text)
    return next((k for k, text in enumerate(texts) if not (_is_device_name(text) or text in row_labels)), len(texts))


def _link_codes(label: str, rest: list[_Cell], labels: list[str], *, path: str | None, number: int) -> list[str]:
    """The row's link codes, one per device column; ParseError for a row that has fewer, or a wrong code."""
    codes: list[str] = []
    for cell in rest:
        if len(codes) == len(labels) or not _CODE_SHAPE_RE.match(cell.text):
            break
        codes.append(cell.text)
    if len(codes) < len(labels):
        found = rest[len(codes)].text if len(codes) < len(rest) else None
        column = labels[len(codes)]
        if found is None:
            raise ParseError(
                f"row {label} has {len(codes)} link codes, the header names {len(labels)} devices",
                path=path,
                line=number,
            )
        raise ParseError(
            f"row {label}, column {column}: {found!r} is not a link code (X, NV#, PIX, PXB, PHB, NODE, SYS, SOC)",
            path=path,
            line=number,
        )
    for column, code in zip(labels, codes, strict=True):
        diagonal = column == label
        if diagonal and code != "X":
            raise ParseError(
                f"row {label}, column {column}: expected X on the diagonal, found {code!r}", path=path, line=number
            )
        if not diagonal and (code == "X" or lookup(code) is None):
            raise ParseError(
                f"row {label}, column {column}: {code!r} is not a link code (NV#, PIX, PXB, PHB, NODE, SYS, SOC)",
                path=path,
                line=number,
            )
    trailing = rest[len(labels) :]
    if trailing and _CODE_SHAPE_RE.match(trailing[0].text) and lookup(trailing[0].text) is not None:
        raise ParseError(
            f"row {label} has more link codes than the {len(labels)} devices the header names", path=path, line=number
        )
    return codes


def _ends_on_a_word(lines: list[str]) -> bool:
    """The text ends on a word, no newline or space after it: that word may be cut short."""
    return bool(lines[-1]) and not lines[-1][-1].isspace()


def _read_rows(lines: list[str], header_at: int, labels: list[str], columns: list[_Cell], path: str | None) -> _Rows:
    rows = _Rows(codes={}, values={}, end=len(lines))
    for i in range(header_at + 1, len(lines)):
        line = lines[i]
        number = i + 1
        if not line.strip() or line.strip().lower().startswith(("legend", "nic legend")):
            rows.end = i
            break
        split = _split(line)
        cells = split.cells
        label = cells[0].text if cells else ""
        if label not in labels:
            if _is_device_name(label):
                raise ParseError(f"row {label} is not a column of the header", path=path, line=number)
            rows.end = i
            break
        if label in rows.codes:
            raise ParseError(f"row {label} appears twice", path=path, line=number)
        on_last_word = i == len(lines) - 1 and _ends_on_a_word(lines)
        try:
            rows.codes[label] = _link_codes(label, cells[1:], labels, path=path, number=number)
        except ParseError:
            if not (on_last_word and _short_row(cells[1:], labels)):
                raise
            rows.cut_inside = label
            continue
        if on_last_word:
            rows.last = label
        if _GPU_RE.match(label):
            trailing = cells[1 + len(labels) :]
            values: list[str | None] = []
            values.extend(_affinity_values(trailing, split.exact, columns, label=label, path=path, number=number))
            rows.values[label] = values
    return rows


def _short_row(rest: list[_Cell], labels: list[str]) -> bool:
    """No more than the row's link codes, the last one perhaps cut short: the text ends inside the row."""
    words = [c.text for c in rest if c.text]
    return len(words) <= len(labels) and all(_CODE_SHAPE_RE.match(word) for word in words[:-1])


def _cut(rows: _Rows, labels: list[str], lines: list[str], columns: list[_Cell], path: str | None) -> TopoCut | None:
    """The cut, when the text ends after the rows it holds and they are the first ones the header names; None
    when every row is there. A row missing anywhere else is a ParseError (the header names it, the text lost it)."""
    if len(rows.codes) == len(labels):
        return None
    partial = _last_word(rows, columns)
    read = len(rows.codes)
    if (
        read == 0
        or any(label not in rows.codes for label in labels[:read])
        or any(line.strip() for line in lines[rows.end :])
    ):
        missing = next(label for label in labels if label not in rows.codes)
        if missing == rows.cut_inside:
            raise ParseError(f"truncated: the text ends inside row {missing}", path=path, line=len(lines))
        where = min(rows.end, len(lines) - 1) + 1
        raise ParseError(f"the header names {missing} but there is no {missing} row", path=path, line=where)
    return TopoCut(line=len(lines), after=labels[read - 1], unread=tuple(labels[read:]), partial=partial)


def _last_word(rows: _Rows, columns: list[_Cell]) -> tuple[int, str] | None:
    """In a cut text, the word it ends on may be short: an affinity value is left out ((GPU, column) returned),
    a link code drops its row."""
    if rows.last is None:
        return None
    label = rows.last
    values = rows.values.get(label, [])
    filled = [k for k, value in enumerate(values) if value]
    gpu = _GPU_RE.match(label)
    if gpu is None or not filled:
        del rows.codes[label]
        rows.values.pop(label, None)
        rows.cut_inside = label
        return None
    values[filled[-1]] = None
    return int(gpu.group(1)), columns[filled[-1]].text


def _legends(lines: list[str]) -> tuple[Literal["new", "old", "none"], dict[str, str]]:
    """The legend's kind and the NIC legend's names, from the lines after the matrix."""
    legend: Literal["new", "old", "none"] = "none"
    nic_names: dict[str, str] = {}
    section = ""
    for line in lines:
        stripped = line.strip()
        if stripped.lower().startswith("nic legend"):
            section = "nic"
            continue
        if stripped.lower().startswith("legend"):
            section = "legend"
            legend = "new"
            continue
        if section == "legend" and _OLD_LEGEND_RE.search(line):
            legend = "old"
        elif section == "nic":
            m = _NIC_LEGEND_RE.match(line)
            if m:
                nic_names[m.group(1)] = m.group(2)
    return legend, nic_names


def _unnamed_affinity_columns(lines: list[str], labels: list[str], columns: list[_Cell]) -> list[_Cell]:
    """``columns``, with the affinity columns the header lost named: where the header names the first of
    nvidia-smi's affinity columns in their fixed order (CPU Affinity, NUMA Affinity, GPU NUMA ID) and every GPU
    row holds the same larger number of values after its link codes (a paste whose header lost "NUMA Affinity"),
    the values are those columns, in that order. Any other header is left as it is (a wrong count is refused)."""
    names = [c.text for c in columns]
    if names != list(AFFINITY_COLUMNS[: len(names)]):
        return columns
    rows: list[list[str]] = []
    for line in lines:
        if not line.strip():
            break
        cells = _split(line).cells
        if cells and _GPU_RE.match(cells[0].text):
            rows.append([c.text for c in cells[1 + len(labels) :] if c.text])
    counts = {len(values) for values in rows}
    if len(counts) != 1 or not len(names) < (count := counts.pop()) <= len(AFFINITY_COLUMNS):
        return columns
    # NUMA Affinity and GPU NUMA ID are node numbers (a list on a GB200) or N/A: anything else is not theirs.
    if not all(_NODE_VALUE_RE.match(value) for values in rows for value in values[len(names) :]):
        return columns
    out = list(columns)
    for name in AFFINITY_COLUMNS[len(names) : count]:
        after = out[-1].col + len(out[-1].text) + 1 if out else _TAB * (len(labels) + 1)
        out.append(_Cell(name, after))
    return out


def parse_topo(text: str, path: str | None = None) -> TopoMatrix:
    """Read ``nvidia-smi topo -m`` output; raise :class:`ParseError` (with path and line) if it is not."""
    return read_topo(text, path)[0]


def read_topo(text: str, path: str | None = None) -> tuple[TopoMatrix, TopoCut | None]:
    """:func:`parse_topo`, and where the text was cut (None when it holds every row the header names)."""
    lines = _clean(text, path)
    header_at, names = _find_header(lines, path)
    devices = names[: _device_count(names, lines[header_at + 1 :])]
    columns = names[len(devices) :]
    labels = [d.text for d in devices]
    if len(set(labels)) != len(labels):
        raise ParseError("the header names a device twice", path=path, line=header_at + 1)
    # A header printed without its leading tab sits one tab stop left of the rows.
    if devices and devices[0].col == 0:
        columns = [_Cell(c.text, c.col + _TAB) for c in columns]

    columns = _unnamed_affinity_columns(lines[header_at + 1 :], labels, columns)
    rows = _read_rows(lines, header_at, labels, columns, path)
    cut = _cut(rows, labels, lines, columns, path)
    read = labels[: len(rows.codes)]
    legend, nic_names = _legends(lines[rows.end :])
    names_in_header = [c.text for c in columns]

    def column_value(label: str, name: str) -> str | None:
        if name not in names_in_header:
            return None
        return rows.values[label][names_in_header.index(name)]

    gpus = [
        TopoGpu(
            index=int(m.group(1)),
            cpu_affinity=column_value(label, CPU_AFFINITY),
            numa_affinity=column_value(label, NUMA_AFFINITY),
            gpu_numa_id=column_value(label, GPU_NUMA_ID),
        )
        for label in read
        if (m := _GPU_RE.match(label))
    ]
    nics = [
        # Old drivers print the NIC's own name (mlx4_0) as its label; newer ones NIC0 plus a legend.
        Nic(label=label, name=nic_names.get(label, None if _NIC_RE.match(label) else label))
        for label in read
        if not _GPU_RE.match(label)
    ]
    matrix = [rows.codes[label][: len(read)] for label in read]
    return TopoMatrix(labels=read, matrix=matrix, gpus=gpus, nics=nics, legend=legend), cut


def pairs_from_topology(topo: TopoMatrix) -> list[GpuPair]:
    """One :class:`GpuPair` per unordered GPU pair (a < b); an asymmetric pair gets the worse code."""
    gpu_at: list[tuple[int, int]] = []  # (gpu index, position in labels)
    for pos, label in enumerate(topo.labels):
        m = _GPU_RE.match(label)
        if m:
            gpu_at.append((int(m.group(1)), pos))
    gpu_at.sort()
    pairs: list[GpuPair] = []
    for i, (a, pa) in enumerate(gpu_at):
        for b, pb in gpu_at[i + 1 :]:
            there, back = topo.matrix[pa][pb], topo.matrix[pb][pa]
            code = max(there, back, key=rank_of)
            pairs.append(GpuPair(a=a, b=b, link=code, kind=kind_of(code), nvlinks=nvlink_count(code)))
    return pairs

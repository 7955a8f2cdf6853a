"""nccl-tests output (all_reduce_perf, all_gather_perf, reduce_scatter_perf, broadcast_perf) read as text.

The reader follows the FORMAT, not one file: the column header decides the layout (since nccl-tests 2.0:
``size count type redop root time algbw busbw #wrong`` twice, out-of-place then in-place; before: no ``root``
column for the reductions, no ``redop`` column for broadcast, and an ``error`` column holding the largest
difference found, ``1e-06``, instead of a count); without a header (a fragment) the number of cells does.
Lines may carry a launcher's or log collector's prefix (readers/launcher_prefix.py), ANSI escapes, CRLF and
trailing blanks, and may lose their leading ``#`` (pasted into Markdown). ``-c 0`` prints ``N/A`` where the check goes.

One run per file: a second column header after rows (two runs in one log), or rows of several types or
operations (``-d all`` / ``-o all``), is refused with a line saying how to split it. A file cut in the middle
of a row keeps its complete rows and says so (``cut``). Pure parsing: no I/O, no rigcheck document.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Final, Literal

from rigcheck.errors import ParseError
from rigcheck.readers.launcher_prefix import strip_launcher_prefix
from rigcheck.readers.smi.ansi import strip_ansi

# nccl-tests' binaries and the collective each measures; the four rigcheck reads first.
READABLE: Final = {
    "all_reduce_perf": "allreduce",
    "all_gather_perf": "allgather",
    "reduce_scatter_perf": "reducescatter",
    "broadcast_perf": "broadcast",
}
REFUSED: Final = ("reduce_perf", "alltoall_perf", "sendrecv_perf", "hypercube_perf", "gather_perf", "scatter_perf")
READABLE_TEXT: Final = "all_reduce_perf, all_gather_perf, reduce_scatter_perf, broadcast_perf"
# Bytes per element of nccl-tests' type names (its -d option), to tell the collectives apart by their counts.
TYPE_BYTES: Final = {
    "int8": 1, "char": 1, "uint8": 1, "f8e4m3": 1, "f8e5m2": 1, "fp8_e4m3": 1, "fp8_e5m2": 1,
    "half": 2, "float16": 2, "bfloat16": 2, "bf16": 2,
    "int32": 4, "int": 4, "uint32": 4, "float": 4, "float32": 4,
    "int64": 8, "uint64": 8, "double": 8, "float64": 8,
}  # fmt: skip

Layout = Literal["new", "old"]

_HEADER = re.compile(r"\bnThread\s+(\d+)\s+nGpus\s+(\d+)")
_HEADER_KEYS = {
    "warmup": re.compile(r"\bwarmup iters:\s*(\d+)"),
    "iters": re.compile(r"(?<!agg )(?<!warmup )\biters:\s*(\d+)"),
    "validation": re.compile(r"\bvalidation:\s*(\d+)"),
}
_RANK = re.compile(
    r"\bRank\s+(\d+)\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+(?:(\S+)\s+)?device\s+(\d+)\s+\[([^\]]*)\]\s*(.*?)\s*$"
)
_COLUMNS = re.compile(r"\bsize\s+count\s+type\b.*\btime\s+algbw\s+busbw\b")
_OOB = re.compile(r"Out of bounds values\s*:\s*(\d+)\s*(OK|FAILED)?", re.IGNORECASE)
_AVG = re.compile(r"Avg bus bandwidth\s*:\s*([0-9.eE+-]+|nan|inf)", re.IGNORECASE)
_TOOL_VERSION = re.compile(r"\bnccl-tests\s+version\s+(\S+)", re.IGNORECASE)
_NCCL_VERSION = re.compile(r"\bNCCL version\s+(\d[\w.+-]*)")
# "# nccl-tests version 2.19.7 nccl-headers=21803 nccl-library=21803": NCCL_VERSION_CODE, the library's preferred.
_NCCL_CODE = re.compile(r"\bnccl-(library|headers)=(\d+)")
# The run stops at its first failed CUDA or NCCL call: "host: Test CUDA failure common.cu:502 'an illegal memory
# access was encountered'" (then " .. host pid N: Test failure common.cu:632" for each frame).
_FAILURE = re.compile(r"\bTest (?:CUDA |NCCL )?failure\b")
_BINARY = re.compile(r"\b([a-z_]+_perf)(?:_mpi)?\b")
_INT = re.compile(r"^-?\d+$")
_CUT_ROW = re.compile(r"^\s*\d+(?:\s+\d+)?\s*$")
# What says whether NVLink SHARP took part: NCCL's INFO lines (NCCL_DEBUG=INFO) and the environment as the
# command line or NCCL's "set by environment" line gives it.
_NVLS_SUPPORT = re.compile(r"\bNVLS multicast support is (not )?available")
_NVLS_USED = re.compile(r"\b(\d+) nvls channels\b|\bConnected NVLS\b")
_ENV = re.compile(r"\b(NCCL_NVLS_ENABLE|NCCL_ALGO)(?:=| set by environment to )([\w,^]+)")
# NCCL's INFO line of each rank's communicator, "host:pid:tid [dev] NCCL INFO comm 0x... rank 2 nranks 4 cudaDev 0
# ... Init COMPLETE" (also Destroy/Abort COMPLETE), since NCCL 2.19 also "... rank 0 nRanks 16 nNodes 2 localRanks 8
# localRank 0 MNNVL 0": the world size, the hosts and, where printed, the number of nodes.
_COMM = re.compile(
    r"(?:(?P<host>[^\s:\[\]]+):\d+:\d+\s+\[\d+\]\s+)?NCCL INFO\b.*?\bcomm 0x[0-9a-fA-F]+\s+rank\s+(?P<rank>\d+)\s+"
    r"nranks\s+(?P<nranks>\d+)(?P<rest>.*)$",
    re.IGNORECASE,
)
_COMM_FIELD = re.compile(r"\b(nNodes|cudaDev|localRank)\s+(\d+)", re.IGNORECASE)
# A line of dots where ranks were left out ("...", "…", "# ...", "[...]"), as long runs are pasted.
_ELIDED = re.compile(r"^\s*#?\s*\[?(?:\.{3,}|…)\]?\s*$")


@dataclass(frozen=True)
class Figures:
    """One half of a row: out-of-place or in-place, as printed."""

    time_us: float
    algbw_gbps: float
    busbw_gbps: float
    wrong: int | None  # the #wrong count; None with -c 0 (N/A) or in the old layout
    max_error: float | None  # the old layout's error column (the largest difference); None in the new one


@dataclass(frozen=True)
class Row:
    size_bytes: int
    count: int
    dtype: str
    redop: str | None  # None: the layout has no redop column (old broadcast); "": printed blank (old alltoall)
    root: int | None  # None: no root column (old reductions)
    out_of_place: Figures
    in_place: Figures | None  # None: a row cut after its out-of-place half
    line: int


@dataclass(frozen=True)
class Device:
    rank: int
    host: str | None  # None: printed blank
    device: int
    pci_bus_id: str
    name: str


@dataclass
class NcclTestsRun:
    """One nccl-tests run as printed; every field None or empty where the file does not hold it."""

    layout: Layout
    rows: list[Row]
    binary: str | None = None  # "all_reduce_perf" where the file names it (the command line, a log line)
    devices: list[Device] = field(default_factory=list)
    header_line: str | None = None  # "nThread 1 nGpus 2 minBytes 8 ..."
    n_threads: int | None = None
    n_gpus: int | None = None
    warmup: int | None = None
    iters: int | None = None
    validation: int | None = None
    tool_version: str | None = None
    nccl_version: str | None = None
    out_of_bounds: int | None = None
    avg_busbw_gbps: float | None = None
    check_disabled: bool = False  # -c 0: the #wrong cells print N/A
    failure: str | None = None  # the first "Test CUDA|NCCL failure" line: the run stopped there
    nvls_support: bool | None = None  # "NVLS multicast support is (not) available" (NCCL INFO); None: not printed
    nvls_channels: int | None = None  # "16 nvls channels" / "Connected NVLS": NCCL built NVLS channels
    env: dict[str, str] = field(default_factory=dict)  # NCCL_NVLS_ENABLE / NCCL_ALGO as the file shows them
    cut: bool = False  # the file ends inside a row or before the footer
    cut_row_line: int | None = None  # the line of the row the file ends inside (a measurement cut short)
    comm_ranks: int | None = None  # NCCL's "nranks N" (its INFO lines): the world size; the largest communicator's
    comm_nodes: int | None = None  # NCCL's "nNodes N" of that communicator (NCCL >= 2.19)
    comm_members: dict[int, tuple[str | None, int | None]] = field(default_factory=dict)  # rank: host, cudaDev
    elided: bool = False  # a line of dots among the rank lines: ranks left out
    notes: list[str] = field(default_factory=list)

    @property
    def hosts(self) -> list[str]:
        """The host names of the rank lines, in rank order, each once; then those only NCCL's INFO lines name."""
        seen: list[str] = []
        named = [(d.rank, d.host) for d in self.devices]
        named += sorted((rank, host) for rank, (host, _) in self.comm_members.items())
        for _, host in named:
            if host and host not in seen:
                seen.append(host)
        return seen

    def members(self) -> dict[int, tuple[str | None, int | None]]:
        """Every rank the file shows: (host, local device), from the rank lines, else NCCL's INFO lines."""
        found = dict(self.comm_members)
        found.update({d.rank: (d.host, d.device) for d in self.devices})
        return found


def clean_lines(text: str) -> list[str]:
    """The text's lines without ANSI escapes, CR, trailing blanks and launcher prefixes."""
    out = []
    for raw in strip_ansi(text).lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        out.append(strip_launcher_prefix(raw.rstrip()))
    return out


def looks_like_nccl_tests(text: str) -> bool:
    """Whether ``text`` is nccl-tests output: its column header, or its footer beside rows of its shape."""
    lines = clean_lines(text)
    if any(_COLUMNS.search(line) for line in lines):
        return True
    return any(_AVG.search(line) or _OOB.search(line) for line in lines) and any(_row_cells(line) for line in lines)


def _row_cells(line: str) -> list[str] | None:
    """The cells of a line that starts like a row (size, count, a type name), else None."""
    cells = line.split()
    if len(cells) < 3 or not (_INT.match(cells[0]) and _INT.match(cells[1])) or not cells[2][:1].isalpha():
        return None
    return cells


def _columns(line: str) -> tuple[Layout, list[str]] | None:
    """The per-row columns of a header line: ["type", "redop", "root"] (the cells between count and time),
    and the layout its check column gives."""
    m = _COLUMNS.search(line)
    if m is None:
        return None
    words = line[m.start() :].split()
    labels = words[2 : words.index("time")]
    layout: Layout = "new" if "#wrong" in words else "old"
    return layout, labels


def _number(cell: str, what: str, line: int, path: str | None) -> float:
    try:
        value = float(cell)
    except ValueError:
        raise ParseError(f"{what} {cell!r} is not a number", path=path, line=line) from None
    if not math.isfinite(value):
        raise ParseError(f"{what} {cell!r} is not a finite number", path=path, line=line)
    return value


def _check(cell: str, layout: Layout, line: int, path: str | None) -> tuple[int | None, float | None]:
    """(#wrong, max error) of a check cell; (None, None) for N/A (-c 0)."""
    if cell.upper() == "N/A":
        return None, None
    if layout == "new" and _INT.match(cell):
        return int(cell), None
    return None, _number(cell, "error", line, path)


def _figures(cells: list[str], layout: Layout, line: int, path: str | None) -> Figures:
    wrong, max_error = _check(cells[3], layout, line, path)
    return Figures(
        time_us=_number(cells[0], "time", line, path),
        algbw_gbps=_number(cells[1], "algbw", line, path),
        busbw_gbps=_number(cells[2], "busbw", line, path),
        wrong=wrong,
        max_error=max_error,
    )


def _guess_labels(cells: list[str]) -> list[str]:
    """The per-row columns of a row seen without its header: 13 cells is today's layout; 12 is the old one
    (a redop word, or a root number for broadcast); 11 has neither."""
    if len(cells) >= 13:
        return ["type", "redop", "root"]
    if len(cells) == 12:
        return ["type", "root"] if _INT.match(cells[3]) else ["type", "redop"]
    return ["type"]


@dataclass
class _Reader:
    path: str | None
    layout: Layout | None = None
    labels: list[str] = field(default_factory=list)
    rows: list[Row] = field(default_factory=list)
    header_at: int | None = None
    pending_cut: int | None = None  # a short row: fine only when nothing follows it

    def row(self, cells: list[str], line: int, run: NcclTestsRun) -> None:
        if self.pending_cut is not None:  # a log line broke a row in two: keep going, say which
            run.notes.append(
                f"line {self.pending_cut}: a row with missing cells (cut by another line?): they stay absent"
            )
            self.pending_cut = None
        labels = self.labels or _guess_labels(cells)
        blank_redop = False
        if "redop" in labels and len(cells) == len(labels) + 9 and not cells[2 + labels.index("redop")][:1].isalpha():
            # alltoall_perf before 2.0 prints its redop cell blank: the row has one cell fewer than its header
            labels, blank_redop = [x for x in labels if x != "redop"], True
        if self.layout is None:
            self.layout = "new" if len(cells) >= 13 or (len(cells) >= 9 and _INT.match(cells[-1])) else "old"
        lead = 2 + len(labels)
        full = lead + 8
        if len(cells) > full:
            raise ParseError(f"a row of {len(cells)} cells where the header has {full}", path=self.path, line=line)
        if len(cells) < lead + 4:
            self.pending_cut = line
            return
        named = dict(zip(labels, cells[2:lead], strict=True))
        root = named.get("root")
        out = _figures(cells[lead : lead + 4], self.layout, line, self.path)
        inp = _figures(cells[lead + 4 : full], self.layout, line, self.path) if len(cells) == full else None
        if inp is None:
            self.pending_cut = line
        if out.wrong is None and out.max_error is None:
            run.check_disabled = True
        self.rows.append(
            Row(
                size_bytes=int(cells[0]),
                count=int(cells[1]),
                dtype=named.get("type", cells[2]),
                redop="" if blank_redop else named.get("redop"),
                root=int(root) if root is not None and _INT.match(root) else None,
                out_of_place=out,
                in_place=inp,
                line=line,
            )
        )


def _binary(lines: list[str]) -> str | None:
    """The nccl-tests binary the text names (its command line, "Collective test starting: ..."), when it names
    exactly one."""
    found = {m.group(1) for line in lines for m in _BINARY.finditer(line)}
    known = found & {*READABLE, *REFUSED}
    return known.pop() if len(known) == 1 else None


def _header(run: NcclTestsRun, line: str) -> None:
    m = _HEADER.search(line)
    if m is None or run.header_line is not None:
        return
    run.header_line = line[m.start() :].strip()
    run.n_threads, run.n_gpus = int(m.group(1)), int(m.group(2))
    for key, pattern in _HEADER_KEYS.items():
        found = pattern.search(line)
        if found is not None:
            setattr(run, key, int(found.group(1)))


def parse_nccl_tests(text: str, path: str | None = None) -> NcclTestsRun:
    """Read one nccl-tests run; ParseError (one line, naming the file and line) when it is not one."""
    lines = clean_lines(text)
    if not any(line.strip() for line in lines):
        raise ParseError("empty file: expected nccl-tests output (all_reduce_perf ...)", path=path)
    run = NcclTestsRun(layout="new", rows=[], binary=_binary(lines))
    if run.binary in REFUSED:
        raise ParseError(
            f"{run.binary} output: rigcheck reads only {READABLE_TEXT} (the collectives rigcheck measures)", path=path
        )
    reader = _Reader(path)
    footer = False
    banner_version: str | None = None
    for number, line in enumerate(lines, start=1):
        body = line.lstrip("# ").rstrip()
        columns = _columns(line)
        if columns is not None:
            if reader.rows:
                raise ParseError(
                    "a second nccl-tests table after the first one's rows (two runs in one file): "
                    "split the file, one run each",
                    path=path,
                    line=number,
                )
            reader.layout, reader.labels = columns
            reader.header_at = number
            continue
        cells = _row_cells(line) if not line.lstrip().startswith("#") else None
        if cells is not None and not footer:
            reader.row(cells, number, run)
            continue
        if reader.rows and not footer and _CUT_ROW.match(line):  # "   262144   65536": a row cut after its count
            reader.pending_cut = reader.pending_cut or number
            continue
        if run.devices and not reader.rows and _ELIDED.match(line):
            run.elided = True
            continue
        rank = _RANK.search(line)
        if rank is not None:
            run.devices.append(
                Device(
                    rank=int(rank.group(1)),
                    host=rank.group(2),
                    device=int(rank.group(3)),
                    pci_bus_id=rank.group(4).strip(),
                    name=rank.group(5),
                )
            )
            continue
        _header(run, line)
        if (m := _OOB.search(body)) is not None:
            run.out_of_bounds, footer = int(m.group(1)), True
        elif (m := _AVG.search(body)) is not None:
            run.avg_busbw_gbps, footer = float(m.group(1)), True
        elif (m := _TOOL_VERSION.search(line)) is not None:
            run.tool_version = m.group(1)
        elif (m := _NCCL_VERSION.search(line)) is not None and run.nccl_version is None:
            run.nccl_version = m.group(1)
        if banner_version is None:
            banner_version = _version_code(line)
        if run.failure is None and _FAILURE.search(line):
            run.failure = line.strip()
        _nvls_evidence(run, line)
        _comm_evidence(run, line)
    run.nccl_version = run.nccl_version or banner_version  # NCCL's own "NCCL version" line first: it has +cudaX
    if not reader.rows and run.failure is not None and reader.header_at:
        run.layout = reader.layout or "new"  # a run that failed before its first size: no rows, its error kept
        return run
    if not reader.rows:
        what = "a table header but no rows" if reader.header_at else "no nccl-tests table (size count type ... busbw)"
        raise ParseError(f"not nccl-tests output: {what}", path=path)
    run.rows, run.layout = reader.rows, reader.layout or "new"
    _finish(run, reader)
    return run


def looks_like_nccl_log(text: str) -> bool:
    """Whether ``text`` holds NCCL_DEBUG=INFO lines (a log beside an nccl-tests output, not a machine file)."""
    return any(" NCCL INFO " in line for line in clean_lines(text)[:5000])


def add_log_evidence(run: NcclTestsRun, text: str) -> None:
    """What an NCCL_DEBUG=INFO log of the same run says of NVLS and NCCL's version, added to ``run``."""
    for line in clean_lines(text):
        _nvls_evidence(run, line)
        _comm_evidence(run, line)
        if run.nccl_version is None and (m := _NCCL_VERSION.search(line)) is not None:
            run.nccl_version = m.group(1)


def _comm_evidence(run: NcclTestsRun, line: str) -> None:
    """What NCCL's communicator line says: the world size (the largest communicator's), the rank's host and
    device, and the number of nodes where NCCL prints it."""
    m = _COMM.search(line)
    if m is None:
        return
    rank, nranks = int(m.group("rank")), int(m.group("nranks"))
    if run.comm_ranks is not None and nranks < run.comm_ranks:
        return  # a sub-communicator's line
    if run.comm_ranks is not None and nranks > run.comm_ranks:
        run.comm_members.clear()
        run.comm_nodes = None
    run.comm_ranks = nranks
    fields = {k.lower(): int(v) for k, v in _COMM_FIELD.findall(m.group("rest"))}
    device = fields.get("cudadev", fields.get("localrank"))
    host, held = run.comm_members.get(rank, (None, None))
    run.comm_members[rank] = (m.group("host") or host, device if device is not None else held)
    if "nnodes" in fields:
        run.comm_nodes = fields["nnodes"]


def _nvls_evidence(run: NcclTestsRun, line: str) -> None:
    """What a line says of NVLink SHARP: support (any device without it turns it off), channels, the env."""
    if (m := _NVLS_SUPPORT.search(line)) is not None:
        supported = m.group(1) is None
        run.nvls_support = supported if run.nvls_support is None else run.nvls_support and supported
    if (m := _NVLS_USED.search(line)) is not None:
        run.nvls_channels = max(run.nvls_channels or 0, int(m.group(1)) if m.group(1) else 1)
    for m in _ENV.finditer(line):
        run.env.setdefault(m.group(1), m.group(2))


def _version_code(line: str) -> str | None:
    """NCCL's version from the banner's NCCL_VERSION_CODE (the library's, else the headers'): 21803 -> 2.18.3;
    codes before 2.9 are major*1000 + minor*100 + patch (2708 -> 2.7.8), as nccl.h's NCCL_VERSION macro has it."""
    codes = {m.group(1): m.group(2) for m in _NCCL_CODE.finditer(line)}
    code = codes.get("library") or codes.get("headers")
    if code is None:
        return None
    n = int(code)
    major, rest = (n // 10000, n % 10000) if n >= 10000 else (n // 1000, n % 1000)
    return f"{major}.{rest // 100}.{rest % 100}"


def _finish(run: NcclTestsRun, reader: _Reader) -> None:
    """The checks and notes that need the whole file: one sweep, a cut end, what a fragment lacks."""
    sweeps = sorted({(r.dtype, r.redop or "-", r.root if r.root is not None else -1) for r in run.rows})
    if len(sweeps) > 1:
        shown = ", ".join(f"{t}/{op}" + (f"/root {root}" if root >= 0 else "") for t, op, root in sweeps[:4])
        raise ParseError(
            f"holds {len(sweeps)} sweeps ({shown}{', ...' if len(sweeps) > 4 else ''}: -d all or -o all): "
            "rigcheck reads one type and operation per file; rerun with one (-d float -o sum)",
            path=reader.path,
        )
    if reader.pending_cut is not None:
        run.cut = True
        run.cut_row_line = reader.pending_cut
        run.notes.append(f"the file ends inside a row (line {reader.pending_cut}): the complete rows are kept")
    elif run.out_of_bounds is None and run.avg_busbw_gbps is None:
        run.cut = True
        run.notes.append("the file ends before nccl-tests' footer (out of bounds, average bus bandwidth)")
    if reader.header_at is None:
        run.notes.append("no column header: the layout was read from the rows' cells")
    if run.check_disabled:
        run.notes.append("the data check was off (-c 0): its cells print N/A, so no row's data is verified")


@dataclass(frozen=True)
class Nodes:
    """How many nodes a run spans, as far as the file shows it."""

    count: int | None  # None: nothing in the file tells
    exact: bool  # False: inferred from elided rank lines (or a lower bound), said in ``how``
    how: str


def nodes_of(run: NcclTestsRun, ranks: int | None) -> Nodes:
    """The nodes of a run: NCCL's nNodes; else the hosts of rank lines that list every rank; else, where ranks are
    left out ("..." between rank lines, a fragment), inferred from the ranks shown (:func:`ranks_per_host`);
    else at least the hosts named."""
    if run.comm_nodes:
        return Nodes(run.comm_nodes, exact=True, how=f"NCCL's nNodes {run.comm_nodes}")
    members = run.members()
    hosts = run.hosts
    every = ranks is not None and set(members) == set(range(ranks))
    if every and hosts and all(host for host, _ in members.values()):
        return Nodes(len(hosts), exact=True, how=f"{len(hosts)} host{'s' if len(hosts) != 1 else ''} in the rank lines")
    per = ranks_per_host(members, ranks) if ranks else None
    if ranks and per:
        shown = "the rank lines are elided" if run.elided else "not every rank is listed"
        return Nodes(
            ranks // per,
            exact=False,
            how=f"{ranks // per} nodes inferred: {ranks} ranks, {per} per host ({shown}; each rank shown sits at its "
            f"device number in a block of {per})",
        )
    if hosts:
        return Nodes(len(hosts), exact=False, how=f"at least {len(hosts)} host(s): those the rank lines shown name")
    return Nodes(None, exact=False, how="no rank line names a host")


def ranks_per_host(members: dict[int, tuple[str | None, int | None]], ranks: int) -> int | None:
    """The fewest ranks per host that fits every rank shown: launchers give each host a block of ranks in device
    order (rank = host's first rank + local device), so a rank shows its device as rank mod ranks-per-host; ranks
    of one host name share a block, of two names do not. None where no size fits, or no rank shows a device past
    0 (per-rank CUDA_VISIBLE_DEVICES prints device 0 everywhere: the layout is not shown)."""
    devices = [d for _, d in members.values() if d is not None]
    if not devices or max(devices) == 0:
        return None
    for per in range(max(devices) + 1, ranks + 1):
        if ranks % per:
            continue
        if any(d is not None and rank % per != d for rank, (_, d) in members.items()):
            continue
        blocks: dict[str, int] = {}
        owners: dict[int, str] = {}
        fits = True
        for rank, (host, _) in sorted(members.items()):
            if host is None:
                continue
            block = rank // per
            if blocks.setdefault(host, block) != block or owners.setdefault(block, host) != host:
                fits = False
                break
        if fits:
            return per
    return None

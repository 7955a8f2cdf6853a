"""Every rendering of a ``rigcheck.bench/1`` document: the terminal tables, JSON, Markdown and the HTML page
(:mod:`rigcheck.report.bench.html`, imported only when a page is drawn).

One table layout per benchmark (:data:`COLUMNS`): the terminal and Markdown draw the same columns, so what a
person reads in the terminal is what they paste into an issue.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from rigcheck.model.bench import (
    BenchRow,
    CollectiveCompareDocument,
    CollectiveDocument,
    CompareDocument,
    HostlinkDocument,
    MatmulDocument,
    MembwDocument,
    NvmeDocument,
    P2PDocument,
    PairsComparison,
    SingleDocument,
    TrainCompareDocument,
)
from rigcheck.report.bench import reference
from rigcheck.report.bench.collective import collective_context, collective_summary
from rigcheck.report.bench.reference import imported
from rigcheck.report.render import Renderers, json_text
from rigcheck.units import percent, rounded_size

BenchDoc = SingleDocument | CompareDocument
GIB = 2**30


# --- cell formats ---------------------------------------------------------------------------------------------


def num(digits: int) -> Callable[[Any], str]:
    """A formatter for numbers with ``digits`` decimals; "-" for null."""

    def fmt(value: Any) -> str:
        if value is None:
            return "-"
        if isinstance(value, bool):
            return "yes" if value else "NO"
        return f"{value:.{digits}f}" if isinstance(value, float) else str(value)

    return fmt


def size_text(size_bytes: Any) -> str:
    """1024 -> "1 KiB"; the sizes nccl-tests prints as bytes, shown readably."""
    return rounded_size(size_bytes, "GiB") if isinstance(size_bytes, int) else "-"


def rate(value: Any) -> str:
    """A rate with enough digits whatever its size: 799.4, 2.35, 0.0123 (CPU figures are small)."""
    if not isinstance(value, float):
        return "-" if value is None else str(value)
    if abs(value) >= 100:
        return f"{value:.1f}"
    return f"{value:.3g}" if abs(value) >= 1 else f"{value:.3f}" if abs(value) >= 0.01 else f"{value:.2g}"


def _best(value: Any) -> str:
    return "*" if value else ""


def _flag(value: Any) -> str:
    return "-" if value is None else ("yes" if value else "no")


def _text(value: Any) -> str:
    return "-" if value is None else str(value)


def _count(size_bytes: Any) -> str:
    return str(size_bytes // 4) if isinstance(size_bytes, int) else "-"


def _gib(value: Any) -> str:
    return "-" if not isinstance(value, int) else f"{value / GIB:.2f}"


def _sig(value: Any) -> str:
    """Four significant figures: a 0.0013 s collective and a 101.9 s training run both read well."""
    return "-" if value is None else f"{value:.4g}"


# --- the result tables ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Column:
    key: str  # the row's field
    header: str  # with its unit: "busbw (GB/s)"
    fmt: Callable[[Any], str] = str


COLLECTIVE_COLUMNS = (
    Column("size_bytes", "size", size_text),
    Column("size_bytes", "count (float32)", _count),
    Column("time_us_median", "time (us)", num(1)),
    Column("algbw_gbps", "algbw (GB/s)", num(3)),
    Column("busbw_gbps", "busbw (GB/s)", num(3)),
    Column("correct", "correct", num(0)),
)
MATMUL_COLUMNS = (
    Column("rank", "rank", _text),
    Column("dtype", "dtype"),
    Column("m", "m"),
    Column("n", "n"),
    Column("k", "k"),
    Column("tflops_median", "TFLOPS (median)", rate),
    Column("tflops_min", "min", rate),
    Column("tflops_max", "max", rate),
    Column("peak_tflops", "peak (TFLOPS)", num(1)),
    Column("fraction_of_peak", "of peak", percent),
    Column("correct", "correct", num(0)),
    Column("best", "best", _best),
)
MEMBW_COLUMNS = (
    Column("rank", "rank", _text),
    Column("size_bytes", "size", size_text),
    Column("time_us_median", "time (us)", num(1)),
    Column("copy_gbps", "copy (GB/s)", rate),
    Column("read_write_gbps", "read+write (GB/s)", rate),
    Column("peak_memory_gbps", "peak (GB/s)", num(0)),
    Column("fraction_of_peak", "r+w of peak", percent),
    Column("correct", "correct", num(0)),
)
HOSTLINK_COLUMNS = (
    Column("gpu", "GPU"),
    Column("direction", "direction"),
    Column("memory", "memory"),
    Column("numa_bound", "NUMA-bound", _flag),
    Column("cpus", "CPUs", _text),
    Column("gbps", "GB/s (median)", rate),
    Column("min", "min", rate),
    Column("max", "max", rate),
    Column("pcie_link", "PCIe link", _text),
    Column("pcie_theoretical_gbps", "PCIe theor. (GB/s)", num(1)),
    Column("fraction_of_pcie", "of PCIe", percent),
    Column("correct", "correct", num(0)),
)
P2P_COLUMNS = (
    Column("src", "src"),
    Column("dst", "dst"),
    Column("mode", "mode"),
    Column("peer_access", "peer access", _flag),
    Column("link", "link", _text),
    Column("nvml_p2p_read", "NVML P2P read", _text),
    Column("unidirectional_gbps", "uni (GB/s)", rate),
    Column("bidirectional_gbps", "bidi (GB/s)", rate),
    Column("latency_us", "latency (us)", num(2)),
    Column("theoretical_gbps", "theor. (GB/s)", num(1)),
    Column("fraction_of_theoretical", "uni of theor.", percent),
    Column("correct", "correct", num(0)),
)
NVME_COLUMNS = (
    Column("name", "row", _text),
    Column("block_size_bytes", "block", size_text),
    Column("queue_depth", "QD"),
    Column("gbps", "GB/s (median)", rate),
    Column("min", "min", rate),
    Column("max", "max", rate),
    Column("pcie_theoretical_gbps", "PCIe theor. (GB/s)", num(2)),
    Column("fraction_of_pcie", "of PCIe", percent),
)
TRAIN_COLUMNS = (
    Column("train_runtime_s", "runtime (s)", num(2)),
    Column("samples_per_s", "samples/s", num(1)),
    Column("tokens_per_s", "tokens/s", num(0)),
    Column("step_time_median_ms", "step median (ms)", num(1)),
    Column("step_time_p10_ms", "p10 (ms)", num(1)),
    Column("step_time_p90_ms", "p90 (ms)", num(1)),
    Column("peak_memory_bytes", "peak mem (GiB)", _gib),
    Column("loss_final", "final loss", num(3)),
)

COLLECTIVE_TITLES = {
    "allreduce": "all-reduce (sum, float32)",
    "allgather": "all-gather (float32; size = the gathered buffer)",
    "reducescatter": "reduce-scatter (sum, float32; size = the buffer before scattering)",
    "broadcast": "broadcast (from rank 0, float32)",
}


def _collective_columns(doc: CollectiveDocument) -> tuple[Column, ...]:
    """A run's columns; an imported nccl-tests output (--from) adds its printed count and type, the in-place
    busbw and, where a link is named, its ceiling."""
    rows = doc.results
    if not any(r.count is not None for r in rows):
        return COLLECTIVE_COLUMNS
    dtypes = {r.dtype for r in rows if r.dtype}
    count = Column("count", f"count ({dtypes.pop()})" if len(dtypes) == 1 else "count", _text)
    cols = [COLLECTIVE_COLUMNS[0], count, *COLLECTIVE_COLUMNS[2:5]]
    if any(r.in_place_busbw_gbps is not None for r in rows):
        cols.append(Column("in_place_busbw_gbps", "in-place busbw (GB/s)", num(3)))
    if doc.ceiling is not None:
        cols += [Column("ceiling_gbps", "ceiling (GB/s)", num(2)), Column("fraction_of_ceiling", "of ceiling", percent)]
    return (*cols, COLLECTIVE_COLUMNS[-1])


def columns(doc: SingleDocument) -> tuple[Column, ...]:
    """The table layout of a document's rows."""
    if isinstance(doc, CollectiveDocument):
        return _collective_columns(doc)
    testcase = (Column("name", "testcase", _text),) if imported(doc) is not None else ()  # nvbandwidth's names
    if isinstance(doc, MatmulDocument):
        return (*testcase, *MATMUL_COLUMNS)  # read from mamf-finder: its sweep, MAMF and MSMF rows
    if isinstance(doc, MembwDocument):
        return (*testcase, *MEMBW_COLUMNS)
    if isinstance(doc, HostlinkDocument):
        return (*testcase, *HOSTLINK_COLUMNS)
    if isinstance(doc, P2PDocument):
        return (*testcase, *P2P_COLUMNS)
    if isinstance(doc, NvmeDocument):
        return NVME_COLUMNS
    return TRAIN_COLUMNS


def title(doc: SingleDocument) -> str:
    """The line above the table: what was measured, and how its figure is counted."""
    if isinstance(doc, CollectiveDocument) and doc.source is not None:
        kinds = sorted({f"{r.redop}, {r.dtype}" if r.redop else str(r.dtype) for r in doc.results})
        return f"{COLLECTIVE_TITLES[doc.op].split(' (')[0]} ({'; '.join(kinds)}): {doc.source.tool}' figures as printed"
    if isinstance(doc, CollectiveDocument):
        return f"{COLLECTIVE_TITLES[doc.op]}, nccl-tests' algbw and busbw"
    if isinstance(doc, MatmulDocument):
        return "matmul: TFLOPS per shape (2·m·n·k / time), best per dtype *"
    if isinstance(doc, MembwDocument):
        return "membw: device-local copy, dst.copy_(src)"
    if isinstance(doc, HostlinkDocument):
        return "hostlink: host<->GPU copies (GB/s, bytes copied once)"
    if isinstance(doc, P2PDocument):
        return "p2p: GPU-to-GPU copies, per ordered pair (GB/s, bytes once)"
    if isinstance(doc, NvmeDocument):
        return (
            f"nvme: sequential write and read of {size_text(doc.size_bytes)} under {doc.storage.path} (GB/s, 1e9 B/s)"
        )
    if not doc.results:
        return f"train: DDP on {doc.world_size} × {doc.backend}: no result"
    r = doc.results[0]
    return (
        f"train: {r.model}, DDP on {doc.world_size} × {doc.backend}, {r.dtype}, "
        f"batch {r.batch_size} × {r.seq_len} per rank, {r.steps} steps"
    )


def method_line(doc: BenchDoc) -> str:
    m = doc.method
    return (
        f"{doc.backend}, world size {doc.world_size}; {m.warmup} warm-up, {m.repeats} timed, "
        f"{m.statistic} ({m.timer}); method {m.method_version}"
    )


def storage_line(doc: NvmeDocument) -> str:
    """What holds the directory: "ext4 on nvme0n1p2 (disk nvme0n1, Samsung ..., PCIe Gen4 x4 of Gen4 x4:
    7.88 GB/s)"; an unknown part named as such."""
    s = doc.storage
    disk = ", ".join(
        x
        for x in (
            f"disk {s.disk}" if s.disk and s.disk != s.device else "",
            s.model or "",
            "rotational" if s.rotational else "",
            f"PCIe {s.pcie_link} (max {s.pcie_link_max or '?'}): {s.pcie_theoretical_gbps:.2f} GB/s"
            if s.pcie_link and s.pcie_theoretical_gbps is not None
            else "",
        )
        if x
    )
    where = f"{s.fs_type or 'unknown filesystem'} on {s.device or s.mount_source or 'an unknown device'}"
    return f"storage: {where}" + (f" ({disk})" if disk else "") + f", mounted at {s.mount_point or '?'}"


def cells(row: BenchRow, cols: Sequence[Column]) -> list[str]:
    return [col.fmt(getattr(row, col.key, None)) for col in cols]


def result_table(rows: Sequence[BenchRow], cols: Sequence[Column]) -> Table:
    table = Table(box=None, pad_edge=False, header_style="bold")
    for col in cols:
        table.add_column(col.header, justify="right", no_wrap=True)
    for r in rows:
        table.add_row(*cells(r, cols))
    return table


def comparison_table(doc: CompareDocument) -> tuple[list[str], list[list[str]]]:
    """The guide's table: P2P/NVLink Y/N | time | samples/s (train) or busbw (collectives) | transport."""
    headers = ["P2P/NVLink", "time (s)", "", "transport (from NCCL_DEBUG=INFO)"]
    if isinstance(doc, TrainCompareDocument):
        headers[2] = "samples/s"
        return headers, [[r.p2p, _sig(r.time_s), num(2)(r.samples_per_s), r.transport] for r in doc.comparison.rows]
    headers[2] = "busbw (GB/s)"
    return headers, [[r.p2p, _sig(r.time_s), num(2)(r.busbw_gbps), r.transport] for r in doc.comparison.rows]


def speedup_line(doc: CompareDocument) -> str:
    comp = doc.comparison
    if comp.speedup_percent is None or comp.time_ratio is None:
        return "speed-up: not computed (a run has no time)"
    if doc.backend == "gloo":
        # gloo has no P2P path: NCCL_P2P_DISABLE changes nothing, so the difference is run-to-run noise.
        return (
            f"no P2P comparison on gloo (CPU processes have no P2P or NVLink path): the two runs differ by "
            f"{abs(comp.speedup_percent):.1f}%, run-to-run noise (time ratio {comp.time_ratio:.3f})"
        )
    word = "faster" if comp.speedup_percent >= 0 else "slower"
    return f"P2P/NVLink: {abs(comp.speedup_percent):.1f}% {word} (time without P2P / with P2P = {comp.time_ratio:.3f})"


def _pair_rows(comp: PairsComparison) -> list[list[str]]:
    """`bench p2p --compare-p2p`: pair | P2P | time (ms) | GB/s | speed-up | path, two lines per pair."""
    out = []
    for pair in comp.pairs:
        speedup = pair.speedup_percent
        for i, r in enumerate(pair.rows):
            out.append(
                [
                    f"{pair.src} -> {pair.dst}" if i == 0 else "",
                    r.p2p,
                    "-" if r.time_s is None else f"{r.time_s * 1e3:.4g}",
                    num(1)(r.gbps),
                    (f"{speedup:+.1f}%" if speedup is not None else "-") if i == 0 else "",
                    r.transport,
                ]
            )
    return out


PAIR_HEADERS = ("pair", "P2P", "time (ms)", "GB/s", "speed-up", "path")
PAIR_TITLE = "p2p --compare-p2p: one copy per pair, P2P (peer) against P2P off (staged)"


# --- terminal ---------------------------------------------------------------------------------------------------


def _dim(line: str) -> Text:
    return Text(line, style="dim")


def _pair_comparison(comp: PairsComparison) -> list[RenderableType]:
    table = Table(box=None, pad_edge=False, header_style="bold")
    for header in PAIR_HEADERS:
        table.add_column(header, justify="right" if header in ("time (ms)", "GB/s", "speed-up") else "left")
    for line in _pair_rows(comp):
        table.add_row(*line)
    out: list[RenderableType] = [Text(PAIR_TITLE, style="bold"), table]
    out += [_dim(f"• speed-up = {comp.speedup_formula}"), _dim(f"• {comp.note}")]
    out += [Text(f"! {line}", style="bold yellow") for line in comp.warnings]
    return out


def _comparison(doc: CompareDocument) -> list[RenderableType]:
    """The guide's table: P2P/NVLink Y/N | time | samples/s (or busbw) | transport, then the speed-up."""
    headers, rows = comparison_table(doc)
    table = Table(box=None, pad_edge=False, header_style="bold")
    for i, header in enumerate(headers):
        table.add_column(header, justify="right" if i in (1, 2) else "left")
    for row in rows:
        table.add_row(*row)
    out: list[RenderableType] = [
        Text(f"{doc.label} --compare-p2p: {doc.backend}, world size {doc.world_size}", style="bold"),
        table,
        Text(speedup_line(doc)),
    ]
    out += [_dim(f"• {line}") for line in doc.notes]
    out += [Text(f"! {line}", style="bold yellow") for line in doc.warnings]
    return out


def terminal(doc: BenchDoc) -> RenderableType:
    """The report a person reads: the title, the method line, the table and the notes (or the comparison)."""
    if isinstance(doc, CollectiveCompareDocument | TrainCompareDocument):
        return Group(*_comparison(doc))
    parts: list[RenderableType] = []
    if isinstance(doc, P2PDocument) and doc.comparison is not None:
        parts += _pair_comparison(doc.comparison)
    parts += [Text(title(doc), style="bold"), _dim(method_line(doc))]
    if isinstance(doc, NvmeDocument):
        parts.append(Text(storage_line(doc)))
        if doc.direct_io_error:
            parts.append(Text(f"! {doc.direct_io_error}", style="bold yellow"))
    if isinstance(doc, CollectiveDocument):
        parts += [Text(line) for line in collective_context(doc)]
    if (ref := imported(doc)) is not None:  # read from nvbandwidth / p2pBandwidthLatencyTest
        parts += [Text(line) for line in reference.context_lines(ref)]
    parts.append(result_table(doc.results, columns(doc)))
    if ref is not None:
        parts += reference.terminal_parts(ref)
    if isinstance(doc, CollectiveDocument):
        parts += [Text(line, style="bold") for line in collective_summary(doc)]
    parts += [_dim(f"• {line}") for line in doc.notes]
    return Group(*parts)


# --- Markdown ---------------------------------------------------------------------------------------------------


def _md(text: str) -> str:
    from rigcheck.report.common import md_cell

    return md_cell(text)


def md_table(headers: Sequence[str], rows: Sequence[Sequence[str]], *, left: Sequence[int] = ()) -> list[str]:
    """A Markdown table (then a blank line); numbers right-aligned, as the terminal has them, but the columns
    in ``left``."""
    rule = ["---" if i in left else "---:" for i in range(len(headers))]
    out = ["| " + " | ".join(_md(h) for h in headers) + " |", "| " + " | ".join(rule) + " |"]
    out += ["| " + " | ".join(_md(c) for c in r) + " |" for r in rows]
    return [*out, ""]


def _md_results(doc: SingleDocument) -> list[str]:
    cols = columns(doc)
    if not doc.results:
        return ["No results.", ""]
    return md_table([c.header for c in cols], [cells(r, cols) for r in doc.results])


def _md_status(doc: BenchDoc) -> list[str]:
    if not (doc.partial or doc.error):
        return []
    return [f"> **{'partial results' if doc.partial else 'error'}**: {_md(doc.error or 'the run did not finish')}", ""]


def markdown(doc: BenchDoc) -> str:
    """The result as Markdown, for an issue: the method, the table (the terminal's columns), the notes."""
    out = [f"# rigcheck bench {doc.benchmark}", ""]
    out += _md_status(doc)
    if isinstance(doc, CollectiveCompareDocument | TrainCompareDocument):
        out += [f"{doc.label} --compare-p2p: {method_line(doc)}", ""]
        out += md_table(*comparison_table(doc), left=(0, 3))
        out += [speedup_line(doc), ""]
        out += [f"- **warning**: {_md(line)}" for line in doc.warnings]
        out += [f"- {_md(line)}" for line in doc.notes]
        for run in doc.runs:
            out += [*([""] if out[-1] else []), f"## P2P={run.p2p} ({_md(run.transport)})", ""]
            out += _md_status(run)
            out += _md_results(run)
        return "\n".join(out).rstrip() + "\n"
    out += [f"{title(doc)}", "", f"*{method_line(doc)}*", ""]
    if isinstance(doc, NvmeDocument):
        out += [_md(storage_line(doc)), ""]
        out += [f"> **direct I/O**: {_md(doc.direct_io_error)}", ""] if doc.direct_io_error else []
    if isinstance(doc, P2PDocument) and doc.comparison is not None:
        out += [f"## {PAIR_TITLE}", ""]
        out += md_table(PAIR_HEADERS, _pair_rows(doc.comparison), left=(0, 1, 5))
        out += [f"- speed-up = {_md(doc.comparison.speedup_formula)}", f"- {_md(doc.comparison.note)}"]
        out += [f"- **warning**: {_md(line)}" for line in doc.comparison.warnings]
        out += ["", "## Results", ""]
    if isinstance(doc, CollectiveDocument):
        out += [*[f"{_md(line)}  " for line in collective_context(doc)], ""] if collective_context(doc) else []
    if (ref := imported(doc)) is not None:
        out += [*[f"{_md(line)}  " for line in reference.context_lines(ref)], ""]
    out += _md_results(doc)
    out += reference.markdown_lines(ref) if ref is not None else []
    if isinstance(doc, CollectiveDocument):
        out += [f"**{_md(line)}**  " for line in collective_summary(doc)] + [""]
    out += [f"- {_md(line)}" for line in doc.notes]
    return "\n".join(out).rstrip() + "\n"


# --- HTML -------------------------------------------------------------------------------------------------------


def html(doc: BenchDoc) -> str:
    from rigcheck.report.bench.html import bench_html

    return bench_html(doc)


RENDERERS: Renderers[BenchDoc] = Renderers(terminal=terminal, json=json_text, markdown=markdown, html=html)

"""What every `rigcheck bench` command shares: options, the result table, JSON, the exit code."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from rigcheck.cli.common import note, out_console, print_json, write_report_file

CpuOption = Annotated[bool, typer.Option("--cpu", help="Run on CPU processes with gloo (no GPU needed; what CI runs).")]
WorldSizeOption = Annotated[
    int | None,
    typer.Option("--world-size", "-n", min=1, max=512, help="Processes to start (default: every GPU; 2 with --cpu)."),
]
TimeoutOption = Annotated[
    float, typer.Option("--timeout", min=1.0, help="Give up after this many seconds; partial results are kept.")
]
RepeatsOption = Annotated[int, typer.Option("--repeats", min=1, max=10000, help="Timed repetitions per size.")]
WarmupOption = Annotated[int, typer.Option("--warmup", min=0, max=10000, help="Untimed repetitions first.")]
JsonOut = Annotated[bool, typer.Option("--json", help="Print the result document (rigcheck.bench/1) as JSON.")]


@dataclass(frozen=True)
class Column:
    key: str  # the row's key
    header: str  # with its unit: "busbw (GB/s)"
    fmt: Callable[[Any], str] = str


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
    if not isinstance(size_bytes, int):
        return "-"
    value = float(size_bytes)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if value == int(value) else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size_bytes} B"


def result_table(rows: Sequence[dict[str, Any]], columns: Sequence[Column]) -> Table:
    table = Table(box=None, pad_edge=False, header_style="bold")
    for col in columns:
        table.add_column(col.header, justify="right", no_wrap=True)
    for r in rows:
        table.add_row(*(col.fmt(r.get(col.key)) for col in columns))
    return table


def doc_failed(doc: dict[str, Any]) -> bool:
    """A run failed when it is partial, errored, or any row says its data was wrong."""
    return bool(doc.get("partial") or doc.get("error") or any(r.get("correct") is False for r in doc["results"]))


def emit(
    doc: dict[str, Any], columns: Sequence[Column], *, as_json: bool, title: str, html_file: Path | None = None
) -> None:
    """Print the document (JSON, or a title, the method line and the table) and exit 0, or 1 on failure.

    With ``html_file``, the same document is also written as a self-contained HTML page.
    """
    if html_file is not None:
        from rigcheck.report.html import bench_html

        write_report_file(html_file, bench_html(doc))
    if as_json:
        print_json(doc)
    else:
        console = out_console()
        console.print(Text(title, style="bold"))
        m = doc["method"]
        console.print(
            Text(
                f"{doc['backend']}, world size {doc['world_size']}; {m['warmup']} warm-up, {m['repeats']} timed, "
                f"{m['statistic']} ({m['timer']}); method {m['method_version']}",
                style="dim",
            )
        )
        console.print(result_table(doc["results"], columns))
        for line in doc.get("notes", []):
            console.print(Text(f"• {line}", style="dim"))
    if doc.get("error"):
        note(f"error: {doc['error']}" + (" (partial results kept)" if doc["results"] else ""))
    raise typer.Exit(1 if doc_failed(doc) else 0)


def render_comparison(doc: dict[str, Any]) -> None:
    """The guide's table: P2P/NVLink Y/N | time | samples/s (or busbw) | transport, then the speed-up."""
    console = out_console()
    comp = doc["comparison"]
    rows = comp["rows"]
    rate_key, rate_header = ("samples_per_s", "samples/s")
    if rows and "busbw_gbps" in rows[0]:
        rate_key, rate_header = ("busbw_gbps", "busbw (GB/s)")
    console.print(Text(f"{doc['label']} --compare-p2p: {doc['backend']}, world size {doc['world_size']}", style="bold"))
    table = Table(box=None, pad_edge=False, header_style="bold")
    table.add_column("P2P/NVLink")
    table.add_column("time (s)", justify="right")
    table.add_column(rate_header, justify="right")
    table.add_column("transport (from NCCL_DEBUG=INFO)")
    for r in rows:
        table.add_row(r["p2p"], _sig(r.get("time_s")), num(2)(r.get(rate_key)), r["transport"])
    console.print(table)
    speedup = comp.get("speedup_percent")
    if speedup is not None:
        word = "faster" if speedup >= 0 else "slower"
        console.print(
            f"P2P/NVLink: {abs(speedup):.1f}% {word} (time without P2P / with P2P = {comp['time_ratio']:.3f})"
        )
    else:
        console.print("speed-up: not computed (a run has no time)")
    for line in doc.get("notes", []):
        console.print(Text(f"• {line}", style="dim"))
    for line in doc.get("warnings", []):
        console.print(Text(f"! {line}", style="bold yellow"))


def render_pair_comparison(comp: dict[str, Any]) -> None:
    """`bench p2p --compare-p2p`: the guide's table for each GPU pair, peer copy against staged."""
    console = out_console()
    console.print(Text("p2p --compare-p2p: one copy per pair, P2P (peer) against P2P off (staged)", style="bold"))
    table = Table(box=None, pad_edge=False, header_style="bold")
    for header, justify in (("pair", "left"), ("P2P", "left"), ("time (ms)", "right"), ("GB/s", "right")):
        table.add_column(header, justify=justify)  # type: ignore[arg-type]
    table.add_column("speed-up", justify="right")
    table.add_column("path")
    for pair in comp["pairs"]:
        speedup = pair["speedup_percent"]
        for i, r in enumerate(pair["rows"]):
            table.add_row(
                f"{pair['src']} -> {pair['dst']}" if i == 0 else "",
                r["p2p"],
                "-" if r["time_s"] is None else f"{r['time_s'] * 1e3:.4g}",
                num(1)(r["gbps"]),
                (f"{speedup:+.1f}%" if speedup is not None else "-") if i == 0 else "",
                r["transport"],
            )
    console.print(table)
    console.print(Text(f"• speed-up = {comp['speedup_formula']}", style="dim"))
    console.print(Text(f"• {comp['note']}", style="dim"))
    for line in comp["warnings"]:
        console.print(Text(f"! {line}", style="bold yellow"))


def emit_comparison(doc: dict[str, Any], *, as_json: bool, html_file: Path | None = None) -> None:
    """Print a --compare-p2p document (the guide's table) and exit 0, or 1 on a failed run or a warning."""
    if html_file is not None:
        from rigcheck.report.html import bench_html

        write_report_file(html_file, bench_html(doc))
    if as_json:
        print_json(doc)
    else:
        render_comparison(doc)
    if doc.get("error"):
        note(f"error: {doc['error']}")
    raise typer.Exit(1 if doc_failed(doc) or doc["warnings"] else 0)


def _sig(value: Any) -> str:
    """Four significant figures: a 0.0013 s collective and a 101.9 s training run both read well."""
    return "-" if value is None else f"{value:.4g}"

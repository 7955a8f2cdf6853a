"""The parts of a p2p, membw or hostlink report that an imported output (`bench ... --from`: nvbandwidth,
p2pBandwidthLatencyTest) adds: where its figures came from, each figure's verdict against its band, and the
tool's matrices as printed. report/bench/render.py and report/bench/html.py place them; a live run has none of them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rigcheck.model.bench import HostlinkDocument, MatmulDocument, MembwDocument, P2PDocument
from rigcheck.model.bench_judgement import FigureJudgement

if TYPE_CHECKING:
    from rich.console import RenderableType

Imported = HostlinkDocument | MembwDocument | P2PDocument | MatmulDocument
JUDGEMENT_HEADERS = ("check", "subject", "GB/s", "floor", "margin", "verdict", "why")


def judgement_headers(doc: Imported) -> tuple[str, ...]:
    """The verdict table's headers: its figures' unit (a mamf-finder output's are TFLOPS) third."""
    unit = "TFLOPS" if isinstance(doc, MatmulDocument) else "GB/s"
    return (*JUDGEMENT_HEADERS[:2], unit, *JUDGEMENT_HEADERS[3:])


def imported(doc: object) -> Imported | None:
    """The document when it was read from a reference tool's output, else None."""
    if isinstance(doc, HostlinkDocument | MembwDocument | P2PDocument | MatmulDocument) and doc.source is not None:
        return doc
    return None


def context_lines(doc: Imported) -> list[str]:
    """Above the table: the file and tool, the devices it names, what the verdicts say in sum."""
    s = doc.source
    if s is None:
        return []
    version = f" {s.version}" if s.version else ""
    names = sorted({d.name for d in s.devices if d.name})
    devices = f"{len(s.devices)} device(s): {', '.join(names)}" if s.devices else "no device list"
    out = [f"read from {s.tool}{version} output {s.file} ({devices}); nothing run"]
    if doc.snapshot is not None:
        out.append(f"machine described by: {doc.snapshot.source.path or doc.snapshot.source.kind}")
    judged = doc.judgement or []
    if judged:
        counts = {v: sum(j.verdict == v for j in judged) for v in ("pass", "fail", "unjudged")}
        out.append("verdicts against verify's bands: " + ", ".join(f"{n} {v}" for v, n in counts.items() if n))
    return out


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _margin(value: float | None) -> str:
    """+21.2 -> "+21%", -3.24 -> "-3.2%": how far over or under its floor a figure is; "-" when unjudged."""
    if value is None:
        return "-"
    return f"{value:+.0f}%" if abs(value) >= 10 else f"{value:+.1f}%"


def judgement_rows(judged: Sequence[FigureJudgement]) -> list[list[str]]:
    return [
        [j.check, j.subject, _num(j.value), _num(j.floor), _margin(j.margin_pct), j.verdict, j.reason] for j in judged
    ]


def judgement_sources(judged: Sequence[FigureJudgement]) -> list[str]:
    """Each band source once (they repeat for every figure of one check)."""
    seen: list[str] = []
    for j in judged:
        if j.source and j.source not in seen:
            seen.append(j.source)
    return seen


def matrix_lines(matrix: Sequence[Sequence[float | None]], labels: Sequence[int] | None = None) -> list[str]:
    """A matrix as aligned text, row labels first, as the tools print them (N/A where a cell is empty); row and
    column i headed ``labels[i]`` (a document's ``matrix_gpus``: nvidia-smi indices), else i."""
    width = max([len(r) for r in matrix], default=0)
    size = max(width, len(matrix))
    names = list(labels) if labels is not None and len(labels) >= size else list(range(size))
    cells = [["N/A" if v is None else f"{v:.2f}" for v in row] for row in matrix]
    w = max([6, *(len(c) for row in cells for c in row)])
    lines = ["   " + " ".join(f"{j:>{w}}" for j in names[:width])]
    lines += [f"{names[i]:>3}" + "".join(f" {c:>{w}}" for c in row) for i, row in enumerate(cells)]
    return lines


def matrices(doc: Imported) -> list[tuple[str, list[str]]]:
    """(name, lines) of each matrix a p2p document holds, headed by its ``matrix_gpus`` where it has them."""
    if not isinstance(doc, P2PDocument):
        return []
    return [(name, matrix_lines(m, doc.matrix_gpus)) for name, m in doc.matrices.items() if m]


# --- the three renderings' pieces ---------------------------------------------------------------------------


def terminal_parts(doc: Imported) -> list[RenderableType]:
    """Below the table: the verdicts, their sources, the matrices."""
    from rich.table import Table
    from rich.text import Text

    parts: list[RenderableType] = []
    judged = doc.judgement or []
    if judged:
        table = Table(box=None, pad_edge=False, header_style="bold", title_justify="left")
        for i, header in enumerate(judgement_headers(doc)):
            table.add_column(header, justify="left" if i in {0, 1, 5, 6} else "right", no_wrap=i != 6)
        styles = {"pass": "green", "fail": "bold red", "unjudged": "yellow"}
        for j, cells in zip(judged, judgement_rows(judged), strict=True):
            table.add_row(*cells[:5], Text(cells[5], style=styles[j.verdict]), cells[6])
        parts += [Text("judged against verify's bands", style="bold"), table]
        parts += [Text(f"band source: {s}", style="dim") for s in judgement_sources(judged)]
    for name, lines in matrices(doc):
        parts += [Text(f"matrix {name}", style="bold"), Text("\n".join(lines))]
    return parts


def markdown_lines(doc: Imported) -> list[str]:
    from rigcheck.report.common import md_text

    out: list[str] = []
    judged = doc.judgement or []
    if judged:
        out += ["## Judged against verify's bands", ""]
        out += ["| " + " | ".join(judgement_headers(doc)) + " |", "| --- | --- | ---: | ---: | ---: | --- | --- |"]
        out += ["| " + " | ".join(md_text(c) for c in row) + " |" for row in judgement_rows(judged)]
        out += ["", *[f"- band source: {md_text(s)}" for s in judgement_sources(judged)], ""]
    for name, lines in matrices(doc):
        out += [f"## Matrix {md_text(name)}", "", "```", *lines, "```", ""]
    return out


def html_parts(doc: Imported) -> list[str]:
    from rigcheck.report.html import esc

    out = [f'<p class="summary">{esc(line)}</p>' for line in context_lines(doc)]
    judged = doc.judgement or []
    if judged:
        head = "".join(f"<th>{esc(h)}</th>" for h in judgement_headers(doc))
        body = "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in row) + "</tr>" for row in judgement_rows(judged))
        out.append(f'<h2>Judged against verify\'s bands</h2><table class="results"><tr>{head}</tr>{body}</table>')
        out += [f'<p class="muted">band source: {esc(s)}</p>' for s in judgement_sources(judged)]
    for name, lines in matrices(doc):
        out.append(f"<h2>Matrix {esc(name)}</h2><pre>{esc(chr(10).join(lines))}</pre>")
    return out

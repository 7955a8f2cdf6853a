"""Every rendering of ``rigcheck.fleet/1`` (:class:`rigcheck.model.fleet.FleetDocument`): terminal, JSON, Markdown,
HTML. Each leads with the verdict and the fleet's findings worst first (the odd node or GPU named, its value beside
the fleet's), then the nodes, the collectives, the slow-node rounds, missing ranks and the phases."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from rigcheck.model.finding import Severity
from rigcheck.model.fleet import FleetDocument, FleetFinding
from rigcheck.report.common import SEVERITY_ORDER, SEVERITY_STYLE, Hanging, md_cell
from rigcheck.report.html import esc, footer, page
from rigcheck.report.render import Renderers, json_text
from rigcheck.units import exact_size, figure, plural

VERDICT_STYLE = {"pass": "green", "fail": "bold red", "incomplete": "magenta"}
FINDING_HEADERS = ("severity", "finding", "node", "GPU", "measured", "fleet", "what")
NODE_HEADERS = ("node", "ranks", "verdict", "GPUs", "verify", "own problems")
COLLECTIVE_HEADERS = ("op", "size", "time us", "algbw GB/s", "busbw GB/s", "NICs can carry GB/s")
PAIR_HEADERS = ("round", "pair", "busbw GB/s", "verdict")


def _value(value: str | float | None) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return figure(value)
    return str(value)


def _ranks(ranks: Sequence[int]) -> str:
    if ranks and list(ranks) == list(range(ranks[0], ranks[-1] + 1)) and len(ranks) > 2:
        return f"{ranks[0]}-{ranks[-1]}"
    return ",".join(str(r) for r in ranks) or "-"


def ordered(findings: Sequence[FleetFinding]) -> list[FleetFinding]:
    rank = {s: i for i, s in enumerate(SEVERITY_ORDER)}
    return sorted(findings, key=lambda f: (rank.get(f.severity, 99), f.id, f.node or "", f.gpu or -1))


def headline(doc: FleetDocument) -> str:
    nodes = f"{len(doc.nodes)} node{'s' if len(doc.nodes) != 1 else ''}"
    ranks = f", {plural(doc.world_size, 'rank')}" if doc.world_size else ""
    slow = f"; slow: {', '.join(doc.slow_nodes)}" if doc.slow_nodes else ""
    slow += f"; slow links: {', '.join(' – '.join(link) for link in doc.slow_links)}" if doc.slow_links else ""
    missing = f"; {plural(len(doc.missing_ranks), 'rank')} missing" if doc.missing_ranks else ""
    how = doc.launcher or "saved files"
    backend = f", {doc.backend}" if doc.backend else ""
    partial = " (partial)" if doc.partial else ""
    return f"{doc.verdict.upper()}{partial} — {nodes}{ranks}{slow}{missing} ({how}{backend}, {doc.elapsed_s:.1f} s)"


def finding_cells(f: FleetFinding) -> tuple[str, ...]:
    gpu = "-" if f.gpu is None else f"GPU{f.gpu}"
    return (f.severity.value, f.id, f.node or "-", gpu, _value(f.measured), _value(f.expected), f.message)


def node_rows(doc: FleetDocument) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = []
    for n in doc.nodes:
        problems = [f for f in n.findings if f.severity in (Severity.FAIL, Severity.WARN)]
        own = "; ".join(f"{f.severity.value} {f.id}" for f in problems[:3]) + (" …" if len(problems) > 3 else "")
        gpus = "-" if n.gpus is None else str(n.gpus)
        rows.append((n.name, _ranks(n.ranks), n.verdict, gpus, n.verify_verdict or "-", own or "-"))
    return rows


def collective_rows(doc: FleetDocument) -> list[tuple[str, ...]]:
    return [
        (
            c.op,
            exact_size(c.size_bytes),
            f"{c.time_us:.1f}",
            f"{c.algbw_gbps:.3g}",
            f"{c.busbw_gbps:.3g}",
            _value(c.expected_gbps),
        )
        for c in doc.collectives
    ]


def pair_rows(doc: FleetDocument) -> list[tuple[str, ...]]:
    return [(str(p.round), f"{p.a} + {p.b}", _value(p.busbw_gbps), p.verdict) for p in doc.pairs]


def tail_lines(doc: FleetDocument) -> list[str]:
    """Missing ranks, phases and notes: one line each."""
    out = [
        f"missing rank {m.rank}"
        + (f" on {m.host}" if m.host else "")
        + (f", last seen in {m.phase}" if m.phase else ", never checked in")
        + f": {m.reason}"
        for m in doc.missing_ranks
    ]
    for p in doc.phases:
        deadline = f" (deadline {p.deadline_s:.0f} s)" if p.deadline_s is not None else ""
        reason = f" — {p.reason}" if p.reason else ""
        out.append(f"{p.name}: {p.status.replace('_', ' ')} in {p.elapsed_s:.1f} s{deadline}{reason}")
    return out


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]], title: str) -> Table:
    table = Table(box=None, pad_edge=False, header_style="bold", title=title, title_justify="left")
    for col in headers:
        table.add_column(col, overflow="fold")
    for row in rows:
        table.add_row(*row)
    return table


# --- terminal ----------------------------------------------------------------------------------------------------


def _finding_line(f: FleetFinding) -> Hanging:
    """A fleet finding as doctor prints one: the severity, the message (it names the node, GPU and both figures;
    a table of those cells folded the message into a narrow column), the id; further lines under the message."""
    line = Text(f"{f.severity.value.upper():<7} ", style=SEVERITY_STYLE[f.severity])
    line.append(f.message)
    line.append(f"  [{f.id}]", style="dim")
    return Hanging(line, 8)


def terminal(doc: FleetDocument) -> RenderableType:
    parts: list[RenderableType] = [
        Text("rigcheck fleet", style="bold"),
        Hanging(Text(headline(doc), style=VERDICT_STYLE[doc.verdict]), 2),
    ]
    findings = ordered(doc.findings)
    if findings:
        parts += [Text(""), *(_finding_line(f) for f in findings)]
    else:
        parts.append(Text("every node alike: no fleet finding", style="green"))
    parts += [Text(""), _table(NODE_HEADERS, node_rows(doc), "nodes")]
    if doc.collectives:
        parts += [Text(""), _table(COLLECTIVE_HEADERS, collective_rows(doc), "collectives over the whole fleet")]
    if doc.pairs:
        parts += [Text(""), _table(PAIR_HEADERS, pair_rows(doc), "slow-node rounds")]
    parts += [Text("")] + [Hanging(Text(line, style="dim"), 2) for line in tail_lines(doc)]
    parts += [Hanging(Text(f"• {line}", style="dim"), 2) for line in doc.notes]
    return Group(*parts)


# --- Markdown ----------------------------------------------------------------------------------------------------


def _md_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    out = ["| " + " | ".join(headers) + " |", "|" + " --- |" * len(headers)]
    out += ["| " + " | ".join(md_cell(c) for c in row) + " |" for row in rows]
    return out


def markdown(doc: FleetDocument) -> str:
    out = ["# rigcheck fleet", "", f"**{md_cell(headline(doc))}**", ""]
    out += ["## Findings", ""]
    findings = ordered(doc.findings)
    out += _md_table(FINDING_HEADERS, [finding_cells(f) for f in findings]) if findings else ["No fleet finding."]
    out += ["", "## Nodes", "", *_md_table(NODE_HEADERS, node_rows(doc))]
    if doc.collectives:
        out += ["", "## Collectives", "", *_md_table(COLLECTIVE_HEADERS, collective_rows(doc))]
    if doc.pairs:
        out += ["", "## Slow-node rounds", "", *_md_table(PAIR_HEADERS, pair_rows(doc))]
    out += ["", "## Run", "", *(f"- {md_cell(line)}" for line in [*tail_lines(doc), *doc.notes])]
    return "\n".join(out) + "\n"


# --- HTML --------------------------------------------------------------------------------------------------------


def _html_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    head = "<tr>" + "".join(f"<th>{esc(h)}</th>" for h in headers) + "</tr>"
    body = "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table>{head}{body}</table>"


def html(doc: FleetDocument) -> str:
    good = {"pass": "good", "fail": "bad", "incomplete": "warn"}
    findings = ordered(doc.findings)
    body = [
        "<h1>rigcheck fleet</h1>",
        f'<p class="result {good[doc.verdict]}">{esc(headline(doc))}</p>',
        "<h2>Findings</h2>",
        _html_table(FINDING_HEADERS, [finding_cells(f) for f in findings]) if findings else "<p>No fleet finding.</p>",
        "<h2>Nodes</h2>",
        _html_table(NODE_HEADERS, node_rows(doc)),
    ]
    if doc.collectives:
        body += ["<h2>Collectives</h2>", _html_table(COLLECTIVE_HEADERS, collective_rows(doc))]
    if doc.pairs:
        body += ["<h2>Slow-node rounds</h2>", _html_table(PAIR_HEADERS, pair_rows(doc))]
    body += ["<h2>Run</h2>", "<ul>", *(f"<li>{esc(line)}</li>" for line in [*tail_lines(doc), *doc.notes]), "</ul>"]
    return page("rigcheck fleet", "\n".join([*body, footer()]))


RENDERERS: Renderers[FleetDocument] = Renderers(terminal=terminal, json=json_text, markdown=markdown, html=html)

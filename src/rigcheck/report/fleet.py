"""Every rendering of ``rigcheck.fleet/1`` (:class:`rigcheck.model.fleet.FleetDocument`): terminal, JSON, Markdown,
HTML. Each leads with the verdict and the fleet's findings worst first (the odd node or GPU named, its value beside
the fleet's), then the nodes, the collectives, the slow-node rounds, the per-iteration timing (the ranks the others
waited for first), the ranks' stacks at a missed deadline, missing ranks and the phases."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from rigcheck.model.finding import Severity
from rigcheck.model.fleet import FleetDocument, FleetFinding, MissingRank
from rigcheck.report.common import SEVERITY_ORDER, SEVERITY_STYLE, Hanging, md_cell
from rigcheck.report.html import esc, footer, page
from rigcheck.report.render import Renderers, json_text
from rigcheck.units import exact_size, figure, plural

VERDICT_STYLE = {"pass": "green", "fail": "bold red", "incomplete": "magenta"}
FINDING_HEADERS = ("severity", "finding", "node", "GPU", "measured", "fleet", "what")
NODE_HEADERS = ("node", "ranks", "verdict", "GPUs", "verify", "own problems")
COLLECTIVE_HEADERS = ("op", "size", "time us", "algbw GB/s", "busbw GB/s", "NICs can carry GB/s")
PAIR_HEADERS = ("round", "pair", "busbw GB/s", "verdict")
TIMING_HEADERS = ("rank", "node", "p50 us", "p99 us", "spikes", "late", "last", "late p50 ms", "clock offset ms")
SHOWN_TIMING = 16  # ranks in the timing table: the late ones first; a line counts the rest


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


def _ms(us: float | None) -> str:
    return "-" if us is None else f"{us / 1e3:.3g}"


def timing_rows(doc: FleetDocument) -> tuple[list[tuple[str, ...]], int]:
    """The ranks the others waited for first (most late iterations), then the slowest p99; at most SHOWN_TIMING,
    and how many were left out."""
    ranked = sorted(doc.timing, key=lambda t: (-t.late, -(t.p99_us or 0.0), t.rank))
    rows: list[tuple[str, ...]] = [
        (
            str(t.rank),
            t.node or "-",
            _value(t.p50_us),
            _value(t.p99_us),
            f"{t.spikes}/{t.iterations}",
            f"{t.late}/{t.analysed}",
            str(t.last),
            _ms(t.late_p50_us),
            _ms(t.clock_offset_us),
        )
        for t in ranked[:SHOWN_TIMING]
    ]
    return rows, len(ranked) - len(rows)


def timing_title(doc: FleetDocument) -> str:
    sizes = {t.size_bytes for t in doc.timing if t.size_bytes}
    at = f" (p50, p99 and spikes over 1.5x the mean at {exact_size(max(sizes))})" if sizes else ""
    return f"per-iteration timing{at}"


def wait_lines(doc: FleetDocument) -> list[str]:
    """What the wait-for analysis read, the ranks left out of the table, and the stacks at a missed deadline."""
    out = []
    if doc.waits is not None:
        w = doc.waits
        out.append(
            f"wait-for: {w.iterations} iterations of {w.series} timed collectives; a rank is late past "
            f"{w.margin_us / 1e3:.3g} ms (noise {w.noise_us / 1e3:.3g} ms); clocks: {w.clock}"
        )
    left = timing_rows(doc)[1]
    if left:
        out.append(f"timing: {left} more rank(s), none late, not shown (the JSON has every rank)")
    for g in doc.stacks:
        who = f"rank{'s' if len(g.ranks) > 1 else ''} {_ranks(g.ranks)}"
        role = "waiting" if g.waiting else "apart"
        during = f" during {g.phase}" if g.phase else ""
        doing = f", {g.doing}" if g.doing else ""
        via = " (faulthandler, signalled)" if g.via == "signal" else ""
        out.append(f"stack at the deadline, {role}: {who} in {g.site}{during}{doing}{via}")
    return out


def _stack_text(m: MissingRank) -> str:
    if m.stack:
        return f"; stuck in {m.stack} ({m.stack_source})"
    return f"; its stack {m.stack_source}" if m.stack_source else ""


def tail_lines(doc: FleetDocument) -> list[str]:
    """Missing ranks, phases and notes: one line each."""
    out = [
        f"missing rank {m.rank}"
        + (f" on {m.host}" if m.host else "")
        + (f", last seen in {m.phase}" if m.phase else ", never checked in")
        + f": {m.reason}"
        + _stack_text(m)
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
    if doc.timing:
        parts += [Text(""), _table(TIMING_HEADERS, timing_rows(doc)[0], timing_title(doc))]
    waits = wait_lines(doc)
    if waits:
        parts += [Text("")] + [Hanging(Text(line), 2) for line in waits]
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
    if doc.timing:
        out += [
            "",
            "## Per-iteration timing",
            "",
            timing_title(doc),
            "",
            *_md_table(TIMING_HEADERS, timing_rows(doc)[0]),
        ]
    waits = wait_lines(doc)
    if waits:
        out += ["", "## Waits", "", *(f"- {md_cell(line)}" for line in waits)]
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
    if doc.timing:
        body += [f"<h2>{esc(timing_title(doc))}</h2>", _html_table(TIMING_HEADERS, timing_rows(doc)[0])]
    waits = wait_lines(doc)
    if waits:
        body += ["<h2>Waits</h2>", "<ul>", *(f"<li>{esc(line)}</li>" for line in waits), "</ul>"]
    body += ["<h2>Run</h2>", "<ul>", *(f"<li>{esc(line)}</li>" for line in [*tail_lines(doc), *doc.notes]), "</ul>"]
    return page("rigcheck fleet", "\n".join([*body, footer()]))


RENDERERS: Renderers[FleetDocument] = Renderers(terminal=terminal, json=json_text, markdown=markdown, html=html)

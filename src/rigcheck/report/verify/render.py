"""Every rendering of ``rigcheck.verify/1`` (:class:`rigcheck.model.verify.VerifyDocument`): terminal, JSON,
Markdown, HTML. Each leads with the verdict, then what failed, then every figure beside what it was held against.
Renderers return text or a renderable; the CLI prints and sets the exit code."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.text import Text

from rigcheck.checks.verdicts import step_verdict
from rigcheck.model.verify import VerifyCheck, VerifyDocument, VerifyGpu
from rigcheck.report.common import Hanging, md_cell, md_code
from rigcheck.report.grid import FoldingTable
from rigcheck.report.html import esc, footer, page
from rigcheck.report.render import Renderers, json_text
from rigcheck.units import figure

HEADERS = ("GPU", "check", "verdict", "figure", "floor", "margin", "peer best", "baseline", "src")
VERDICT_STYLE = {"pass": "green", "fail": "bold red", "incomplete": "magenta", "unjudged": "yellow"}
# unjudged: measured, nothing failed, held against no band (a CPU run): never shown as a pass
VERDICT_WORD = {"pass": "PASS", "fail": "FAIL", "incomplete": "INCOMPLETE", "unjudged": "UNJUDGED"}
FINGERPRINT_WORD = {"pass": "bit-equal", "fail": "off reference", "unjudged": "apart", "incomplete": "not measured"}
HTML_CLASS = {"pass": "good", "fail": "bad", "incomplete": "warn", "unjudged": "warn"}


def _figure(check: VerifyCheck) -> str:
    said = next((j.text.split(":", 1)[0] for j in check.judgements if j.rule == "dcgm"), None)
    if said is not None and check.verdict != "incomplete":
        return said  # DCGM's own word, "DCGM Pass" / "DCGM Warn" / "DCGM Fail": it gives no figure
    printed = next((j for j in check.judgements if j.rule == "fingerprint"), None)
    if printed is not None:  # digests, no figure: whether they matched, and where they first differed
        return f"differs at {printed.first_difference}" if printed.first_difference else FINGERPRINT_WORD[check.verdict]
    if check.value is None:
        return "not measured"
    return f"{figure(check.value)} {check.unit or ''}".rstrip()


def margin(check: VerifyCheck) -> str:
    """The figure's margin from its floor ("+21%", "-8.8%"), else from its peers; "-" when neither was held."""
    for rule in ("band", "peers"):
        found = next((j.margin_pct for j in check.judgements if j.rule == rule and j.margin_pct is not None), None)
        if found is not None:
            return f"{found:+.0f}%" if abs(found) >= 10 else f"{found:+.1f}%"
    return "-"


def subject(gpu: VerifyGpu | None, *, cpu: bool = False) -> str:
    if gpu is None:
        return "node"
    return f"rank{gpu.index}" if cpu else f"GPU{gpu.index}"


def rows(doc: VerifyDocument) -> list[tuple[VerifyGpu | None, VerifyCheck]]:
    """Every check, failed ones first (then incomplete, unjudged), the node's before the GPUs' within a verdict."""
    every: list[tuple[VerifyGpu | None, VerifyCheck]] = [(None, c) for c in doc.node]
    every += [(g, c) for g in doc.gpus for c in g.checks]
    order = {"fail": 0, "incomplete": 1, "unjudged": 2, "pass": 3}
    return sorted(every, key=lambda item: order[item[1].verdict])


def source_refs(doc: VerifyDocument) -> dict[str, int]:
    """Each distinct source of a floor, numbered in the order the rows show them (long, and shared by many rows:
    the table carries the number, the list below the text)."""
    refs: dict[str, int] = {}
    for _, check in rows(doc):
        if check.expected_source:
            refs.setdefault(check.expected_source, len(refs) + 1)
    return refs


def cells(gpu: VerifyGpu | None, check: VerifyCheck, refs: dict[str, int], *, cpu: bool = False) -> tuple[str, ...]:
    ref = refs.get(check.expected_source or "")
    return (
        subject(gpu, cpu=cpu),
        check.id,
        check.verdict,
        _figure(check),
        figure(check.expected_min),
        margin(check),
        figure(check.peer_best),
        figure(check.baseline),
        f"[{ref}]" if ref else "",
    )


def headline(doc: VerifyDocument) -> str:
    """The verdict line: what was judged, how long it took against its budget."""
    judged = f"{len(doc.gpus)} GPU{'s' if len(doc.gpus) != 1 else ''}" if doc.source != "cpu" else "CPU ranks"
    failed = [g for g in doc.gpus if g.verdict == "fail"]
    tail = f": {', '.join(subject(g, cpu=doc.source == 'cpu') for g in failed)} failed" if failed else ""
    budget = f" of {doc.budget_s:.0f} s" if doc.budget_s is not None else ""
    how = {"live": f"level {doc.level}", "cpu": "CPU run (gloo), not judged against GPU bands", "files": "saved files"}
    return f"{VERDICT_WORD[doc.verdict]} — {judged}{tail} ({how[doc.source]}, {doc.elapsed_s:.1f} s{budget})"


def problem_lines(doc: VerifyDocument) -> list[str]:
    """One line per failed or incomplete check, with the judgement that decided it."""
    out: list[str] = []
    for gpu, check in rows(doc):
        if check.verdict in ("pass", "unjudged"):
            continue
        failing = [j.text for j in check.judgements if j.verdict == "fail"]
        who = subject(gpu, cpu=doc.source == "cpu")
        said = _unfinished_steps(doc) if gpu is None and check.id == "run" and doc.steps else None
        out.append(f"{who} {check.id} {check.verdict}: {'; '.join(failing) or said or check.detail}")
    return out


def _unfinished_steps(doc: VerifyDocument) -> str | None:
    """The run check's line: the steps that did not finish, by how they ended; each one's reason is its own line
    under the table (the check's detail, in the JSON, holds both)."""
    alike: dict[str, list[str]] = {}
    for s in doc.steps:
        if step_verdict(s.status) != "pass":  # as the judge picks the steps the run check is about
            alike.setdefault(s.status.replace("_", " "), []).append(s.name)
    if not alike:
        return None
    ended = "; ".join(f"{', '.join(names)} {status}" for status, names in alike.items())
    return f"stages not run, or not to their end: {ended} (the steps below say why)"


def unjudged_lines(doc: VerifyDocument) -> list[str]:
    """One line per reason a figure was held against nothing (no band, no peer, no baseline), naming its checks:
    why the verdict says unjudged and not pass."""
    why: dict[str, list[str]] = {}
    for gpu, check in rows(doc):
        if check.verdict == "unjudged":
            band = next((j.text for j in check.judgements if j.rule == "band"), None)
            why.setdefault(band or "no band, peer or baseline", []).append(
                f"{subject(gpu, cpu=doc.source == 'cpu')} {check.id}"
            )
    return [f"unjudged ({reason}): {', '.join(checks)}" for reason, checks in why.items()]


def step_lines(doc: VerifyDocument) -> list[str]:
    out = []
    for s in doc.steps:
        reason = f" — {s.reason}" if s.reason else ""
        if s.status in ("not_applicable", "left_out"):  # its reason says so: "not applicable: one GPU"
            out.append(f"{s.name}: {s.reason or s.status.replace('_', ' ')}")
            continue
        if s.status == "skipped" or (doc.source == "files" and s.elapsed_s == 0):
            out.append(f"{s.name}: {'read' if s.status == 'done' else s.status.replace('_', ' ')}{reason}")
            continue
        budget = f" of {s.budget_s:.0f} s" if s.budget_s else ""
        out.append(f"{s.name}: {s.status.replace('_', ' ')} in {s.elapsed_s:.1f} s{budget}{reason}")
    return out


# --- terminal ----------------------------------------------------------------------------------------------------


# At a narrow width the columns a verdict can be read without go first, before any cell is cut in two.
_LEFT_OUT_FIRST = ("baseline", "peer best", "src", "margin", "floor")


def terminal(doc: VerifyDocument) -> RenderableType:
    parts: list[RenderableType] = [
        Text("rigcheck verify", style="bold"),
        Hanging(Text(headline(doc), style=VERDICT_STYLE[doc.verdict]), 2),
    ]
    parts += [Hanging(Text(f"✗ {line}", style="red"), 2) for line in problem_lines(doc)]
    parts += [Hanging(Text(f"~ {line}", style=VERDICT_STYLE["unjudged"]), 2) for line in unjudged_lines(doc)]
    refs = source_refs(doc)
    table_rows = []
    for gpu, check in rows(doc):
        row = cells(gpu, check, refs, cpu=doc.source == "cpu")
        table_rows.append([(c, VERDICT_STYLE[check.verdict] if i == 2 else "") for i, c in enumerate(row)])
    parts += [Text(""), FoldingTable(HEADERS, table_rows, left_out_first=_LEFT_OUT_FIRST), Text("")]
    parts += [Hanging(Text(f"[{ref}] {source}", style="dim"), len(f"[{ref}] ")) for source, ref in refs.items()]
    parts += [Hanging(Text(line, style="dim"), 2) for line in step_lines(doc)]
    parts += [Hanging(Text(f"• {line}", style="dim"), 2) for line in doc.notes]
    if doc.drain_reason:
        parts.append(Hanging(f"drain reason: {doc.drain_reason}", 2))
    return Group(*parts)


# --- Markdown ----------------------------------------------------------------------------------------------------


def markdown(doc: VerifyDocument) -> str:
    out = ["# rigcheck verify", "", f"**{md_cell(headline(doc))}**", ""]
    out += [f"- {md_cell(line)}" for line in [*problem_lines(doc), *unjudged_lines(doc)]]
    out += ["", "| " + " | ".join(HEADERS) + " |", "| " + " | ".join("---" for _ in HEADERS) + " |"]
    cpu, refs = doc.source == "cpu", source_refs(doc)
    out += ["| " + " | ".join(md_cell(c) for c in cells(g, c, refs, cpu=cpu)) + " |" for g, c in rows(doc)]
    out += ["", *(f"{ref}. {md_cell(source)}" for source, ref in refs.items())]
    out += ["", "## Steps", "", *(f"- {md_cell(line)}" for line in step_lines(doc))]
    if doc.notes:
        out += ["", "## Notes", "", *(f"- {md_cell(line)}" for line in doc.notes)]
    if doc.drain_reason:
        out += ["", f"Drain reason: {md_code(doc.drain_reason)}"]
    return "\n".join(out) + "\n"


# --- HTML --------------------------------------------------------------------------------------------------------


def html(doc: VerifyDocument) -> str:
    good = HTML_CLASS
    body = [
        "<h1>rigcheck verify</h1>",
        f'<p class="result {good[doc.verdict]}">{esc(headline(doc))}</p>',
        "<ul>",
        *(f"<li>{esc(line)}</li>" for line in [*problem_lines(doc), *unjudged_lines(doc)]),
        "</ul>",
        "<table><tr>" + "".join(f"<th>{esc(h)}</th>" for h in HEADERS) + "</tr>",
    ]
    refs = source_refs(doc)
    for gpu, check in rows(doc):
        tds = "".join(f"<td>{esc(c)}</td>" for c in cells(gpu, check, refs, cpu=doc.source == "cpu"))
        body.append(f'<tr class="{good[check.verdict]}">{tds}</tr>')
    body += ["</table>", '<ol class="muted">', *(f"<li>{esc(source)}</li>" for source in refs), "</ol>"]
    body += ["<h2>Steps</h2>", "<ul>", *(f"<li>{esc(line)}</li>" for line in step_lines(doc)), "</ul>"]
    if doc.notes:
        body += ["<h2>Notes</h2>", "<ul>", *(f"<li>{esc(line)}</li>" for line in doc.notes), "</ul>"]
    if doc.drain_reason:
        body.append(f'<p class="muted">Drain reason: <code>{esc(doc.drain_reason)}</code></p>')
    return page("rigcheck verify", "\n".join([*body, footer()]))


RENDERERS: Renderers[VerifyDocument] = Renderers(terminal=terminal, json=json_text, markdown=markdown, html=html)

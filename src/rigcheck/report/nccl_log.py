"""Every rendering of ``rigcheck.nccl-log/1`` (:class:`rigcheck.model.nccl_log.NcclLogDocument`): terminal, JSON,
Markdown, HTML. Renderers return text or a renderable; the CLI prints."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from rigcheck.model.nccl_log import NcclLogDocument
from rigcheck.report.common import md_cell, md_code
from rigcheck.report.html import esc, footer, page
from rigcheck.report.render import Renderers, json_text

# Pair connections listed in the terminal before "... and N more".
MAX_PAIRS_SHOWN = 16
CONNECTIONS_HEADING = "rank[device or bus id] -> rank[...]"


def _p2p_words(doc: NcclLogDocument) -> str:
    value = doc.p2p_disabled
    said = "unknown" if value is None else "yes" if value else "no"
    return f"P2P disabled: {said} ({doc.p2p_evidence})"


def _summary(doc: NcclLogDocument) -> str:
    version = doc.nccl_version or "not printed"
    cuda = f" (CUDA {doc.cuda})" if doc.cuda else ""
    ranks = doc.nranks if doc.nranks is not None else "not printed"
    return f"NCCL {version}{cuda}; ranks: {ranks}; hosts: {len(doc.hosts) or 'not printed'}"


def _used(by_transport: dict[str, list[str]]) -> str:
    return "; ".join(f"{t} ch {','.join(ch)}" for t, ch in by_transport.items())


# --- terminal ----------------------------------------------------------------------------------------------------


def terminal(doc: NcclLogDocument) -> RenderableType:
    parts: list[RenderableType] = [
        Text(f"rigcheck nccl-log: {doc.path or '-'}", style="bold"),
        Text(_summary(doc)),
        Text(f"Transport: {doc.description}", style="bold"),
        Text(_p2p_words(doc), style="yellow" if doc.p2p_disabled is None else ""),
    ]
    if doc.transport_channel_lines:
        table = Table(box=None, pad_edge=False, header_style="bold")
        table.add_column("transport")
        table.add_column("channel lines", justify="right")
        for transport, count in doc.transport_channel_lines.items():
            table.add_row(transport, str(count))
        parts.append(table)
        pairs = list(doc.channel_connections.items())
        parts.append(Text(f"Connections: {doc.peer_connections} ({CONNECTIONS_HEADING})"))
        parts.extend(Text(f"  {key}: {_used(by_transport)}") for key, by_transport in pairs[:MAX_PAIRS_SHOWN])
        if len(pairs) > MAX_PAIRS_SHOWN:
            parts.append(Text(f"  ... and {len(pairs) - MAX_PAIRS_SHOWN} more (--json lists them all)", style="dim"))
    else:
        parts.append(Text("No channel connection lines in the log.", style="dim"))
    parts += [Text(line, style=style) for line, style in _trouble_lines(doc)]
    return Group(*parts)


def _trouble_lines(doc: NcclLogDocument) -> list[tuple[str, str]]:
    """(line, style) for what went wrong: the failures first, then NCCL's warnings."""
    out: list[tuple[str, str]] = []
    if doc.failures:
        out.append((f"The run failed ({doc.failure_lines} line(s)):", "bold red"))
        out += [(f"  {line}", "red") for line in doc.failures]
    if doc.warnings:
        out.append((f"NCCL warned ({doc.warning_lines} line(s)):", "bold yellow"))
        out += [(f"  {line}", "yellow") for line in doc.warnings]
    return out


# --- Markdown ----------------------------------------------------------------------------------------------------


def _md(value: object) -> str:
    return md_cell(str(value))


def markdown(doc: NcclLogDocument) -> str:
    out = ["# rigcheck nccl-log", "", f"- file: {md_code(doc.path or '-')}", f"- {_md(_summary(doc))}"]
    out += [f"- transport: **{_md(doc.description)}**", f"- {_md(_p2p_words(doc))}"]
    if doc.nnodes is not None:
        out.append(f"- nodes: {doc.nnodes}")
    out.append("")
    if doc.transport_channel_lines:
        out += ["## Transports", "", "| transport | channel lines |", "| --- | ---: |"]
        out += [f"| {_md(t)} | {n} |" for t, n in doc.transport_channel_lines.items()]
        out += [
            "",
            f"## Connections ({doc.peer_connections})",
            "",
            f"| {CONNECTIONS_HEADING} | transport and channels |",
        ]
        out.append("| --- | --- |")
        out += [f"| {_md(key)} | {_md(_used(by))} |" for key, by in doc.channel_connections.items()]
    else:
        out.append("No channel connection lines in the log.")
    if doc.failures:
        out += ["", f"## The run failed ({doc.failure_lines} line(s))", ""]
        out += [f"- {md_code(line)}" for line in doc.failures]
    if doc.warnings:
        out += ["", f"## NCCL warnings ({doc.warning_lines} line(s))", ""]
        out += [f"- {md_code(line)}" for line in doc.warnings]
    if doc.env:
        out += ["", "## NCCL settings from the environment", "", "| variable | value |", "| --- | --- |"]
        out += [f"| {md_code(k, in_table=True)} | {md_code(v, in_table=True)} |" for k, v in doc.env.items()]
    return "\n".join(out) + "\n"


# --- HTML --------------------------------------------------------------------------------------------------------


def html(doc: NcclLogDocument) -> str:
    facts = [
        ("file", doc.path or "-"),
        ("NCCL", _summary(doc)),
        ("transport", doc.description),
        ("P2P", _p2p_words(doc)),
        ("NCCL lines read", str(doc.nccl_line_count)),
    ]
    body = ["<h1>rigcheck nccl-log</h1>", '<dl class="facts">']
    body += [f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in facts]
    body.append("</dl>")
    if doc.transport_channel_lines:
        body += ["<h2>Transports</h2>", "<table><tr><th>transport</th><th>channel lines</th></tr>"]
        body += [
            f'<tr><td class="mono">{esc(t)}</td><td class="num">{n}</td></tr>'
            for t, n in doc.transport_channel_lines.items()
        ]
        body += ["</table>", f"<h2>Connections ({doc.peer_connections})</h2>"]
        body.append(f"<table><tr><th>{esc(CONNECTIONS_HEADING)}</th><th>transport and channels</th></tr>")
        body += [
            f'<tr><td class="mono">{esc(key)}</td><td class="mono">{esc(_used(by))}</td></tr>'
            for key, by in doc.channel_connections.items()
        ]
        body.append("</table>")
    else:
        body.append('<p class="na">No channel connection lines in the log.</p>')
    if doc.failures:
        body.append(f"<h2>The run failed ({doc.failure_lines} line(s))</h2><ul>")
        body += [f'<li class="mono">{esc(line)}</li>' for line in doc.failures]
        body.append("</ul>")
    if doc.warnings:
        body.append(f"<h2>NCCL warnings ({doc.warning_lines} line(s))</h2><ul>")
        body += [f'<li class="mono">{esc(line)}</li>' for line in doc.warnings]
        body.append("</ul>")
    if doc.env:
        body += ["<h2>NCCL settings from the environment</h2>", "<table><tr><th>variable</th><th>value</th></tr>"]
        body += [f'<tr><td class="mono">{esc(k)}</td><td class="mono">{esc(v)}</td></tr>' for k, v in doc.env.items()]
        body.append("</table>")
    return page("rigcheck nccl-log", "\n".join([*body, footer()]))


RENDERERS: Renderers[NcclLogDocument] = Renderers(terminal=terminal, json=json_text, markdown=markdown, html=html)

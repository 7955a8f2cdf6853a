"""Every rendering of the topo document: the matrix coloured by link kind, the affinities, the NICs, each kind
of link explained once, and the summary. The doctor report embeds the same matrix through
:func:`topology_renderable` and :func:`topology_section_html`."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from rigcheck.facts.legend import LinkKind, explain, kind_of
from rigcheck.model.topo import UNKNOWN_LINK, TopoDocument, TopoPair, sorted_pairs
from rigcheck.report.render import Renderers, json_text

UNKNOWN_SENTENCE = "the link is unknown."

KIND_STYLE: dict[LinkKind, str] = {
    "nvlink": "green",
    "pcie_switch": "cyan",
    "pcie_bridges": "cyan",
    "host_bridge": "yellow",
    "numa_local": "yellow",
    "cross_numa": "red",
}
KIND_WORDS: dict[LinkKind, str] = {
    "nvlink": "NVLink",
    "pcie_switch": "PCIe switch",
    "pcie_bridges": "PCIe bridges",
    "host_bridge": "CPU host bridge",
    "numa_local": "within a NUMA node",
    "cross_numa": "across NUMA nodes",
}
# The affinity columns `topo -m` may print: (terminal title, HTML/Markdown title, field).
_AFFINITY_COLUMNS = (
    ("CPU Affinity", "CPU affinity", "cpu_affinity"),
    ("NUMA Affinity", "NUMA affinity", "numa_affinity"),
    ("GPU NUMA ID", "GPU NUMA ID", "gpu_numa_id"),
)


def _affinity_columns(doc: TopoDocument) -> list[tuple[str, str, str]]:
    """The affinity columns the source printed (a column is absent when every GPU's value is null)."""
    return [col for col in _AFFINITY_COLUMNS if any(getattr(g, col[2]) is not None for g in doc.gpus)]


def _affinities(doc: TopoDocument, label: str, columns: list[tuple[str, str, str]]) -> list[str]:
    gpu = {f"GPU{g.index}": g for g in doc.gpus}.get(label)
    return [(getattr(gpu, attr) or "") if gpu is not None else "" for _, _, attr in columns]


def link_groups(doc: TopoDocument) -> list[tuple[str, list[TopoPair], str]]:
    """One entry per kind of link (not per pair: an 8-GPU box has 28 pairs), fastest first:
    (code, its pairs, what it means). A code with one pair gets that pair's own sentence."""
    groups: dict[str, list[TopoPair]] = {}
    for p in sorted_pairs(doc.pairs):
        groups.setdefault(p.link if p.link is not None else UNKNOWN_LINK, []).append(p)
    out = []
    for code, members in groups.items():
        if code == UNKNOWN_LINK:
            # "GPU0 and GPU2: the link between them is not in this input." -> the part after the names
            reasons = {m.explanation.split(": ", 1)[-1] for m in members}
            sentence = reasons.pop() if len(reasons) == 1 else UNKNOWN_SENTENCE
        else:
            sentence = members[0].explanation if len(members) == 1 else explain(code)
        out.append((code, members, sentence.removeprefix(f"{code}: ")))
    return out


def has_links(doc: TopoDocument) -> bool:
    """Whether the matrix holds a link: a grid of GPU pairs that is all "?" says nothing, so the reports leave it
    out (the summary says the topology is missing and how to add it); a one-GPU matrix has no pair to miss."""
    cells = [c for i, row in enumerate(doc.matrix) for j, c in enumerate(row) if i != j]
    return not cells or any(c != UNKNOWN_LINK for c in cells)


def _pairs_text(members: list[TopoPair]) -> str:
    names = ", ".join(f"{p.a}–{p.b}" for p in members)
    return f"GPU pair{'s' if len(members) != 1 else ''} {names}"


def _nics_text(doc: TopoDocument) -> str:
    return ", ".join(f"{n.label} = {n.name or 'name not printed'}" for n in doc.nics)


# ---------------------------------------------------------------------------------------------- terminal


def _code_text(code: str) -> Text:
    kind = kind_of(code)
    style = KIND_STYLE[kind] if kind is not None else ("dim" if code == "X" else "")
    return Text(code, style=style)


def topology_renderable(doc: TopoDocument) -> RenderableType:
    """The matrix coloured by link kind, affinities, the NIC legend, each kind of link explained, a summary."""
    columns = _affinity_columns(doc)
    # Compact and never truncated: an 8-GPU matrix with affinities must fit a log line, whole.
    table = Table(box=None, pad_edge=False, header_style="bold")
    table.add_column("", no_wrap=True)
    for label in doc.labels:
        table.add_column(label, justify="center", no_wrap=True)
    for title, _, _ in columns:
        table.add_column(title, no_wrap=True)
    for label, row in zip(doc.labels, doc.matrix, strict=False):
        table.add_row(Text(label, style="bold"), *[_code_text(c) for c in row], *_affinities(doc, label, columns))

    if not has_links(doc):
        return Group(Text("GPU topology", style="bold"), Text(doc.summary, style="bold"))
    parts: list[RenderableType] = [Text("GPU topology (nvidia-smi topo -m)", style="bold"), table]
    if doc.nics:
        parts.append(Text(f"NICs: {_nics_text(doc)}"))
    for code, members, sentence in link_groups(doc):
        line = _code_text(code)
        line.append(f"  {_pairs_text(members)}: {sentence}")
        parts.append(line)
    parts.append(Text(doc.summary, style="bold"))
    return Group(*parts)


# ---------------------------------------------------------------------------------------------- markdown


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def topology_markdown(doc: TopoDocument, *, level: int = 2) -> list[str]:
    """The matrix as a Markdown table, the NICs, each kind of link explained, the summary (lines)."""
    columns = _affinity_columns(doc)
    head = ["", *doc.labels, *(t for _, t, _ in columns)]
    out = [f"{'#' * level} GPU topology", ""]
    if not has_links(doc):
        return [*out, f"**{doc.summary}**", ""]
    out += ["| " + " | ".join(_md_cell(h) for h in head) + " |", "|" + " --- |" * len(head)]
    for label, row in zip(doc.labels, doc.matrix, strict=False):
        cells = [f"**{label}**", *row, *_affinities(doc, label, columns)]
        out.append("| " + " | ".join(_md_cell(c) for c in cells) + " |")
    out.append("")
    if doc.nics:
        out += [f"NICs: {_md_cell(_nics_text(doc))}", ""]
    groups = link_groups(doc)
    out += [f"- `{code}` {_pairs_text(members)}: {sentence}" for code, members, sentence in groups]
    out += ["", f"**{doc.summary}**", ""]
    return out


def topo_markdown(doc: TopoDocument) -> str:
    return "\n".join(["# rigcheck topo", "", *topology_markdown(doc)])


# ---------------------------------------------------------------------------------------------- HTML


def _link_cell(code: str, title: str) -> str:
    from rigcheck.report.html import KIND_COLOURS, esc

    kind = kind_of(code)
    if code == "X":
        return '<td class="link k-self" data-kind="self" title="the GPU itself">X</td>'
    if kind is None:
        return f'<td class="link k-unknown" data-kind="unknown" title="{esc(title)}">{esc(code)}</td>'
    bg, fg = KIND_COLOURS[kind]
    return (
        f'<td class="link k-{kind}" data-kind="{kind}" style="background:{bg};color:{fg}" '
        f'title="{esc(title)}">{esc(code)}</td>'
    )


def topology_section_html(doc: TopoDocument) -> str:
    """The matrix as a grid coloured by link kind, with affinities, a legend, each link explained, a summary."""
    from rigcheck.facts.legend import KIND_MEANING, LINK_CODES
    from rigcheck.report.html import KIND_COLOURS, esc

    columns = _affinity_columns(doc)
    out = ['<section id="topology"><h2>GPU topology</h2>']
    if not has_links(doc):
        out.append(f'<p class="summary-line">{esc(doc.summary)}</p></section>')
        return "".join(out)
    out.append('<table class="topo"><thead><tr><th></th>')
    out += [f'<th scope="col">{esc(label)}</th>' for label in doc.labels]
    out += [f"<th>{esc(t)}</th>" for _, t, _ in columns]
    out.append("</tr></thead><tbody>")
    for label, row in zip(doc.labels, doc.matrix, strict=False):
        out.append(f'<tr><th scope="row">{esc(label)}</th>')
        for other, code in zip(doc.labels, row, strict=False):
            title = f"{label} ↔ {other}: {explain(code)}" if code not in ("X", UNKNOWN_LINK) else code
            out.append(_link_cell(code, title))
        out += [f'<td class="mono">{esc(value)}</td>' for value in _affinities(doc, label, columns)]
        out.append("</tr>")
    out.append("</tbody></table>")
    present = {kind_of(c) for row in doc.matrix for c in row}
    out.append('<ul class="legend" aria-label="link kinds">')
    for kind, (bg, _fg) in KIND_COLOURS.items():
        codes = "/".join(c.code for c in LINK_CODES.values() if c.kind == kind)
        cls = "" if kind in present else ' class="absent"'
        out.append(
            f'<li{cls} data-kind="{kind}"><span class="swatch" style="background:{bg}"></span>'
            f"<strong>{esc(codes)}</strong> {esc(KIND_WORDS[kind])}: {esc(KIND_MEANING[kind])}</li>"
        )
    out.append("</ul>")
    if doc.nics:
        out.append(f"<p>NICs: {esc(_nics_text(doc))}</p>")
    groups = link_groups(doc)
    if groups:
        out.append('<ul class="pairs">')
        for code, members, sentence in groups:
            code_kind = kind_of(code)
            bg = KIND_COLOURS[code_kind][0] if code_kind is not None else "#fff"
            out.append(
                f'<li><span class="swatch" style="background:{bg}"></span><code>{esc(code)}</code> '
                f"{esc(_pairs_text(members))}: {esc(sentence)}</li>"
            )
        out.append("</ul>")
    out.append(f'<p class="summary-line">{esc(doc.summary)}</p></section>')
    return "".join(out)


def topo_html(doc: TopoDocument) -> str:
    """The topo document as one self-contained page."""
    from rigcheck.report.html import footer, page

    body = ["<header><h1>rigcheck topo</h1></header>", topology_section_html(doc), footer()]
    return page("rigcheck topo", "\n".join(body))


RENDERERS: Renderers[TopoDocument] = Renderers(
    terminal=topology_renderable, json=json_text, markdown=topo_markdown, html=topo_html
)

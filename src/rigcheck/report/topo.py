"""Every rendering of the topo document: the matrix coloured by link kind, the affinities, the NICs, each kind
of link explained once, and the summary. The doctor report embeds the same matrix through
:func:`topology_renderable` and :func:`topology_section_html`."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from operator import attrgetter

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from rigcheck.facts.legend import LinkKind, explain, kind_of, rank_of
from rigcheck.model.snapshot import GpuPair
from rigcheck.model.topo import (
    SUMMARY_ABOVE,
    UNKNOWN_LINK,
    P,
    PairLink,
    TopoDocument,
    TopoPair,
    TopoSummaryInput,
    sorted_pairs,
)
from rigcheck.report.common import Hanging, md_code, md_text
from rigcheck.report.grid import Justify, PlainGrid
from rigcheck.report.render import DEFAULT_OPTIONS, Renderers, RenderOptions, WithOptions, json_text
from rigcheck.units import plural

UNKNOWN_SENTENCE = "the link is unknown."
# The groups the summary draws GPUs in: their NUMA nodes, when there are at most this many (else one group).
_MAX_GROUPS = 8
# How many pairs the summary names before "and N more".
_NAMED = 8
_ALL = "all GPUs"  # the one group where the NUMA nodes are unknown or too many
_PAIR_ORDER = attrgetter("a", "b")

# The pairs per link code (None: unknown), each list in (a, b) order: a snapshot's PairTable.by_link, or
# by_link(a document's pairs). The summaries read it instead of sorting the pairs.
Links = Mapping[str | None, Sequence[PairLink]]


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


def by_link(pairs: Sequence[P]) -> dict[str | None, list[P]]:
    """The pairs per link code (None: unknown), each list in (a, b) order: a document's pairs indexed as a
    snapshot's pair table indexes its own (model/snapshot.py PairTable.by_link)."""
    groups: dict[str | None, list[P]] = {}
    for p in pairs:
        groups.setdefault(p.link, []).append(p)
    for members in groups.values():
        members.sort(key=_PAIR_ORDER)
    return groups


def link_groups(doc: TopoDocument) -> list[tuple[str, list[TopoPair], str]]:
    """One entry per kind of link (not per pair: an 8-GPU box has 28 pairs), fastest first:
    (code, its pairs, what it means). A code with one pair gets that pair's own sentence."""
    return _link_groups(by_link(doc.pairs), _own_explanation)


def _own_explanation(p: TopoPair) -> str:
    return p.explanation


def _rank(code: str | None) -> tuple[int, int]:
    return rank_of(code) if code is not None else (100, 0)


def _link_groups(
    links: Mapping[str | None, Sequence[P]], explanation: Callable[[P], str]
) -> list[tuple[str, list[P], str]]:
    """The link groups in sorted_pairs' order without sorting the pairs: the codes by rank (ties by their first
    pair), each code's pairs in (a, b) order; an unknown link (None) is shown as "?"."""
    ordered = sorted(
        ((code, members) for code, members in links.items() if members),
        key=lambda item: (_rank(item[0]), item[1][0].a, item[1][0].b),
    )
    groups: dict[str, list[P]] = {}
    for code, members in ordered:
        groups.setdefault(code if code is not None else UNKNOWN_LINK, []).extend(members)
    out = []
    for code, members in groups.items():
        if code == UNKNOWN_LINK:
            # "GPU0 and GPU2: the link between them is not in this input." -> the part after the names
            reasons = {explanation(m).split(": ", 1)[-1] for m in members}
            sentence = reasons.pop() if len(reasons) == 1 else UNKNOWN_SENTENCE
        else:
            sentence = explanation(members[0]) if len(members) == 1 else explain(code)
        out.append((code, members, sentence.removeprefix(f"{code}: ")))
    return out


def has_links(doc: TopoDocument) -> bool:
    """Whether the matrix holds a link: a grid of GPU pairs that is all "?" says nothing, so the reports leave it
    out (the summary says the topology is missing and how to add it); a one-GPU matrix has no pair to miss."""
    cells = [c for i, row in enumerate(doc.matrix) for j, c in enumerate(row) if i != j]
    return not cells or any(c != UNKNOWN_LINK for c in cells)


def _pairs_text(members: Sequence[PairLink]) -> str:
    # A box's pairs are all named (16 GPUs: 120 pairs); a larger machine's would be a page of numbers.
    if len(members) > SUMMARY_ABOVE * (SUMMARY_ABOVE - 1) // 2:
        head = ", ".join(f"{p.a}–{p.b}" for p in members[:_NAMED])
        return f"{len(members)} GPU pairs ({head} and {len(members) - _NAMED} more)"
    names = ", ".join(f"{p.a}–{p.b}" for p in members)
    return f"GPU pair{'s' if len(members) != 1 else ''} {names}"


def _nics_text(doc: TopoDocument) -> str:
    return ", ".join(f"{n.label} = {n.name or 'name not printed'}" for n in doc.nics)


# ---------------------------------------------------------------------------------------------- terminal


def _code_text(code: str) -> Text:
    kind = kind_of(code)
    style = KIND_STYLE[kind] if kind is not None else ("dim" if code == "X" else "")
    return Text(code, style=style)


def _short(label: str) -> str:
    """A label abbreviated for a narrow terminal: "GPU12" -> "G12", "NIC0" -> "N0" (other names kept)."""
    for long, short in (("GPU", "G"), ("NIC", "N")):
        if label.startswith(long) and label[len(long) :].isdigit():
            return short + label[len(long) :]
    return label


def _grid(doc: TopoDocument, cols: range, columns: list[tuple[str, str, str]], *, short: bool) -> Table:
    """The matrix's columns ``cols`` (and the affinity ``columns``) as one table; labels abbreviated if ``short``."""
    name = _short if short else str
    table = Table(box=None, pad_edge=False, header_style="bold")
    table.add_column("", no_wrap=True)
    for j in cols:
        # min_width: a link code is never cut, whatever the terminal's width (labels are abbreviated instead).
        table.add_column(name(doc.labels[j]), justify="center", no_wrap=True)
    for title, _, _ in columns:
        table.add_column(title, no_wrap=True)
    for label, row in zip(doc.labels, doc.matrix, strict=False):
        codes = [_code_text(row[j]) if j < len(row) else Text("") for j in cols]
        table.add_row(Text(name(label), style="bold"), *codes, *_affinities(doc, label, columns))
    return table


def _direct_grid(doc: TopoDocument, columns: list[tuple[str, str, str]]) -> PlainGrid | None:
    """:func:`_grid` of every column, unabbreviated, as report/grid.py lays it out (None: a cell rich must draw)."""
    every = range(len(doc.labels))
    rows = [
        [
            (label, "bold"),
            *(
                (code.plain, str(code.style))
                for code in (_code_text(row[j]) if j < len(row) else Text("") for j in every)
            ),
            *((a, "") for a in _affinities(doc, label, columns)),
        ]
        for label, row in zip(doc.labels, doc.matrix, strict=False)
    ]
    header = ["", *doc.labels, *(title for title, _, _ in columns)]
    centred: list[Justify] = ["center"] * len(doc.labels)
    left: list[Justify] = ["left"] * len(columns)
    justify: list[Justify] = ["left", *centred, *left]
    return PlainGrid.of(header, rows, justify)


class _Matrix:
    """The matrix, whole at any terminal width: as `topo -m` prints it where that fits; else labels abbreviated
    (GPU3 -> G3) and the affinities in a table of their own; else the columns in blocks, one under another.
    A cell is never cut, so NV1 and NV2 stay apart at 80 columns."""

    def __init__(self, doc: TopoDocument) -> None:
        self.doc = doc

    def _fits(self, table: Table, console: Console, options: ConsoleOptions) -> bool:
        # Measured unbounded: a measurement within the terminal's width is clamped to it.
        natural = Measurement.get(console, options.update_width(1 << 20), table).maximum
        return natural <= options.max_width

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        doc = self.doc
        columns = _affinity_columns(doc)
        direct = _direct_grid(doc, columns)  # the full grid's segments without rich measuring it twice
        if direct is not None and direct.fits(options.max_width):
            yield direct
            return
        every = range(len(doc.labels))
        full = _grid(doc, every, columns, short=False)
        if self._fits(full, console, options):
            yield full
            return
        short = _grid(doc, every, [], short=True)
        if self._fits(short, console, options):
            yield short
        else:
            # Blocks of columns: each cell takes its widest code or label plus two spaces between columns.
            width = max([len(_short(x)) for x in doc.labels] + [len(c) for row in doc.matrix for c in row] + [1])
            head = max(len(_short(x)) for x in doc.labels) + 2
            per = max(1, (options.max_width - head) // (width + 2))
            for start in range(0, len(doc.labels), per):
                yield _grid(doc, range(start, min(start + per, len(doc.labels))), [], short=True)
        if columns:
            aff = Table(box=None, pad_edge=False, header_style="bold")
            aff.add_column("", no_wrap=True)
            for title, _, _ in columns:
                aff.add_column(title, overflow="fold")  # a CPU list folds onto a second line rather than lose digits
            for g in doc.gpus:
                label = f"GPU{g.index}"
                aff.add_row(Text(_short(label), style="bold"), *_affinities(doc, label, columns))
            yield aff


def summarised(doc: TopoDocument, options: RenderOptions = DEFAULT_OPTIONS) -> bool:
    """Whether the reports summarise this topology (more than SUMMARY_ABOVE GPUs, and no --matrix)."""
    return len(doc.gpus) > SUMMARY_ABOVE and not options.full_matrix


def _ranges(indices: list[int]) -> str:
    """``[0, 1, 2, 3, 8, 9]`` -> "GPU0-3, GPU8-9" (at most _NAMED runs, then "and N more")."""
    runs: list[tuple[int, int]] = []
    for i in sorted(indices):
        if runs and i == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], i)
        else:
            runs.append((i, i))
    names = [f"GPU{a}" if a == b else f"GPU{a}-{b}" for a, b in runs]
    more = f" and {len(names) - _NAMED} more runs" if len(names) > _NAMED else ""
    return ", ".join(names[:_NAMED]) + more


def _groups(doc: TopoDocument) -> dict[int, str]:
    """GPU index -> its group's name: its NUMA node where the nodes are known and few, else one group."""
    nodes = {g.index: (g.numa_affinity or "").strip() for g in doc.gpus}
    distinct = set(nodes.values())
    if all(v.isdigit() for v in distinct) and 1 < len(distinct) <= _MAX_GROUPS:
        return {i: f"NUMA node {v}" for i, v in nodes.items()}
    return dict.fromkeys(nodes, _ALL)


@dataclass(frozen=True)
class Block:
    """The pairs within a group or between two groups: how many per code, the usual code, the others."""

    name: str  # "NUMA node 0", "NUMA node 0 ↔ NUMA node 1"
    counts: list[tuple[str, int]]  # code -> pairs, most first
    odd: Sequence[PairLink]  # the pairs whose code is not the block's usual one


def topology_blocks(doc: TopoDocument, links: Links | None = None) -> tuple[dict[str, list[int]], list[Block]]:
    """The summary of a large topology: the GPU groups (name -> GPU indices) and a block per group pair, from the
    pairs per link code (``links``, default the document's own pairs indexed by :func:`by_link`). A block's codes
    come most pairs first, ties in the order of their first pair, as the pairs list them."""
    group_of = _groups(doc)
    members: dict[str, list[int]] = {}
    for i, name in sorted(group_of.items()):
        members.setdefault(name, []).append(i)
    order = {name: k for k, name in enumerate(members)}
    # (group of a, group of b) -> the block's key, its groups in the order of the groups: a few distinct, so
    # each pair costs two lookups and an append (none where there is one group).
    keys: dict[tuple[str, str], tuple[str, str]] = {}
    one_group = set(members) <= {_ALL}
    # block -> code as shown -> its pairs; and where each code's first pair is (a list per code is in (a, b)
    # order; the unknown link's None and "?" pairs share one).
    cells: dict[tuple[str, str], dict[str, list[PairLink]]] = {}
    firsts: dict[tuple[tuple[str, str], str], tuple[int, int]] = {}

    def add(key: tuple[str, str], shown: str, pairs: Sequence[PairLink]) -> None:
        cells.setdefault(key, {}).setdefault(shown, []).extend(pairs)
        first = _PAIR_ORDER(pairs[0])
        firsts[key, shown] = min(firsts.get((key, shown), first), first)

    for code, pairs in (by_link(doc.pairs) if links is None else links).items():
        shown = code if code is not None else UNKNOWN_LINK
        if one_group:
            if pairs:
                add((_ALL, _ALL), shown, pairs)
            continue
        by_block: dict[tuple[str, str], list[PairLink]] = {}
        for p in pairs:
            groups = (group_of.get(p.a, _ALL), group_of.get(p.b, _ALL))
            key = keys.get(groups)
            if key is None:
                ga, gb = groups
                key = keys[groups] = groups if order.get(ga, 0) <= order.get(gb, 0) else (gb, ga)
            by_block.setdefault(key, []).append(p)
        for key, block in by_block.items():
            add(key, shown, block)

    def place(key: tuple[str, str]) -> tuple[int, int, tuple[int, int]]:
        return (order.get(key[0], 0), order.get(key[1], 0), min(firsts[key, shown] for shown in cells[key]))

    blocks = []
    for ga, gb in sorted(cells, key=place):
        # Counter.most_common's order: most pairs first, ties as first seen in the pairs' (a, b) order.
        seen = sorted(cells[ga, gb].items(), key=lambda kv: firsts[(ga, gb), kv[0]])
        counted = sorted(seen, key=lambda kv: len(kv[1]), reverse=True)
        odd = [p for _, pairs in counted[1:] for p in pairs]
        name = f"within {ga}" if ga == gb else f"{ga} ↔ {gb}"
        blocks.append(Block(name, [(code, len(pairs)) for code, pairs in counted], odd))
    return members, blocks


def _summary_lines(doc: TopoDocument, links: Links) -> list[str]:
    members, blocks = topology_blocks(doc, links)
    out = [
        "GPU groups: " + "; ".join(f"{name}: {_ranges(ix)} ({plural(len(ix), 'GPU')})" for name, ix in members.items())
    ]
    for b in blocks:
        counts = ", ".join(f"{code} × {n}" for code, n in b.counts)
        out.append(f"  {b.name}: {counts} pair{'s' if sum(n for _, n in b.counts) != 1 else ''}")
    odd = [p for b in blocks for p in b.odd]
    if odd:
        names = [f"GPU{p.a}–GPU{p.b} {p.link or UNKNOWN_LINK}" for p in sorted_pairs(odd)[::-1][:_NAMED]]
        more = f" and {len(odd) - _NAMED} more" if len(odd) > _NAMED else ""
        out.append(f"odd pairs (not their group's usual link), slowest first: {', '.join(names)}{more}")
    return out


def _unpack(
    topo: TopoDocument | TopoSummaryInput,
) -> tuple[TopoDocument, Links, list[tuple[str, Sequence[PairLink], str]]]:
    """(the document, its pairs per link code, the link groups): a summary input's from its pair table (the
    snapshot's, which the checks read too), a document's from its own pairs."""
    if isinstance(topo, TopoSummaryInput):
        links: Mapping[str | None, Sequence[GpuPair]] = topo.table.by_link
        return topo.doc, links, [(c, m, s) for c, m, s in _link_groups(links, topo.explanation)]
    own = by_link(topo.pairs)
    return topo, own, [(c, m, s) for c, m, s in _link_groups(own, _own_explanation)]


def topology_renderable(
    topo: TopoDocument | TopoSummaryInput, options: RenderOptions = DEFAULT_OPTIONS
) -> RenderableType:
    """The matrix coloured by link kind (a summary above SUMMARY_ABOVE GPUs), affinities, the NIC legend, each
    kind of link explained, a summary."""
    doc, links, groups = _unpack(topo)
    if not has_links(doc):
        return Group(Text("GPU topology", style="bold"), Hanging(Text(doc.summary, style="bold"), 2))
    parts: list[RenderableType]
    if summarised(doc, options):
        parts = [
            Hanging(
                Text(f"GPU topology: {len(doc.gpus)} GPUs, summarised (--matrix shows the full matrix)", style="bold"),
                2,
            ),
            *(Hanging(line, 4) for line in _summary_lines(doc, links)),
        ]
    else:
        parts = [Text("GPU topology (nvidia-smi topo -m)", style="bold"), _Matrix(doc)]
    if doc.nics:
        parts.append(Hanging(f"NICs: {_nics_text(doc)}", 6))
    for code, members, sentence in groups:
        line = _code_text(code)
        line.append(f"  {_pairs_text(members)}: {sentence}")
        parts.append(Hanging(line, len(code) + 2))  # under the pairs, the link code standing out on the left
    parts.append(Hanging(Text(doc.summary, style="bold"), 2))
    return Group(*parts)


# ---------------------------------------------------------------------------------------------- markdown


def topology_markdown(doc: TopoDocument, *, level: int = 2) -> list[str]:
    """The matrix as a Markdown table, the NICs, each kind of link explained, the summary (lines)."""
    columns = _affinity_columns(doc)
    head = ["", *doc.labels, *(t for _, t, _ in columns)]
    out = [f"{'#' * level} GPU topology", ""]
    if not has_links(doc):
        return [*out, f"**{doc.summary}**", ""]
    # Labels, link codes, affinities and NIC names are all as the input printed them: text, never markup.
    out += ["| " + " | ".join(md_text(h) for h in head) + " |", "|" + " --- |" * len(head)]
    for label, row in zip(doc.labels, doc.matrix, strict=False):
        cells = [md_text(c) for c in (*row, *_affinities(doc, label, columns))]
        out.append("| " + " | ".join([f"**{md_text(label)}**", *cells]) + " |")
    out.append("")
    if doc.nics:
        out += [f"NICs: {md_text(_nics_text(doc))}", ""]
    groups = link_groups(doc)
    # The sentence and the summary are rigcheck's own words, with their code spans; the link code is input.
    out += [f"- {md_code(code)} {md_text(_pairs_text(m))}: {sentence}" for code, m, sentence in groups]
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


def _summary_table_html(doc: TopoDocument, links: Links) -> list[str]:
    """The summary of a large topology as HTML: the GPU groups, a row per block of pairs (how many per link
    code), the odd pairs named."""
    from rigcheck.report.html import esc

    members, blocks = topology_blocks(doc, links)
    out = [
        f"<p>{len(doc.gpus)} GPUs, summarised; the full matrix is below.</p>",
        '<ul class="groups">',
        *(f"<li>{esc(name)}: {esc(_ranges(ix))} ({plural(len(ix), 'GPU')})</li>" for name, ix in members.items()),
        '</ul><table class="topo-summary"><thead><tr><th scope="col">GPU pairs</th><th scope="col">links</th>'
        '<th scope="col">odd pairs (not the usual link)</th></tr></thead><tbody>',
    ]
    for b in blocks:
        counts = ", ".join(f"{code} × {n}" for code, n in b.counts)
        names = [f"GPU{p.a}–GPU{p.b} {p.link or UNKNOWN_LINK}" for p in sorted_pairs(list(b.odd))[::-1][:_NAMED]]
        more = f" and {len(b.odd) - _NAMED} more" if len(b.odd) > _NAMED else ""
        odd = ", ".join(names) + more if names else "none"
        out.append(f'<tr><th scope="row">{esc(b.name)}</th><td>{esc(counts)}</td><td>{esc(odd)}</td></tr>')
    out.append("</tbody></table>")
    return out


def topology_section_html(topo: TopoDocument | TopoSummaryInput, options: RenderOptions = DEFAULT_OPTIONS) -> str:
    """The matrix as a grid coloured by link kind, with affinities, a legend, each link explained, a summary.
    Above SUMMARY_ABOVE GPUs a summary table comes first and the grid folds into a <details>."""
    from rigcheck.facts.legend import KIND_MEANING, LINK_CODES
    from rigcheck.report.html import KIND_COLOURS, esc

    doc, links, groups = _unpack(topo)
    columns = _affinity_columns(doc)
    out = ['<section id="topology"><h2>GPU topology</h2>']
    if not has_links(doc):
        out.append(f'<p class="summary-line">{esc(doc.summary)}</p></section>')
        return "".join(out)
    folded = summarised(doc, options)
    if folded:
        out += _summary_table_html(doc, links)
        out.append(f"<details><summary>Full matrix ({len(doc.labels)} × {len(doc.labels)})</summary>")
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
    if folded:
        out.append("</details>")
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


def topo_html(doc: TopoDocument, options: RenderOptions = DEFAULT_OPTIONS) -> str:
    """The topo document as one self-contained page."""
    from rigcheck.report.html import footer, page

    body = ["<header><h1>rigcheck topo</h1></header>", topology_section_html(doc, options), footer()]
    return page("rigcheck topo", "\n".join(body))


RENDERERS: Renderers[TopoDocument] = Renderers(
    terminal=WithOptions(topology_renderable), json=json_text, markdown=topo_markdown, html=WithOptions(topo_html)
)

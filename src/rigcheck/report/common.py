"""Small pieces several reports share: a value with its reason, folded findings, the machine lines, the
result line of the terminal, wrapped prose, severity order and styles (the finding lines with their advice are
report/advice.py's)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from typing import Protocol

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.text import Text

from rigcheck.model import Finding, Gpu, Missing, Severity, Snapshot, Source
from rigcheck.units import plural

SEVERITY_ORDER: tuple[Severity, ...] = (
    Severity.FAIL,
    Severity.WARN,
    Severity.UNKNOWN,
    Severity.INFO,
    Severity.OK,
)

SEVERITY_STYLE: dict[Severity, str] = {
    Severity.FAIL: "bold red",
    Severity.WARN: "yellow",
    Severity.UNKNOWN: "magenta",
    Severity.INFO: "cyan",
    Severity.OK: "green",
}

MISSING_WORDS: dict[Missing, str] = {
    Missing.NOT_SUPPORTED: "not supported",
    Missing.NO_PERMISSION: "no permission",
    Missing.GPU_LOST: "GPU lost",
    Missing.DRIVER_TOO_OLD: "driver too old",
    Missing.ERROR: "read error",
    Missing.REPORTED_NA: "N/A",
    Missing.NOT_IN_SOURCE: "not in input",
    Missing.TRUNCATED: "input cut",
    Missing.IMPLAUSIBLE: "implausible value",
}

SOURCE_WORDS = {
    "nvml": "read live through NVML",
    "nvidia-smi-q": "read from `nvidia-smi -q` output",
    "nvidia-smi-xml": "read from `nvidia-smi -q -x` output",
    "nvidia-smi-table": "read from the `nvidia-smi` table",
    "topo": "read from `nvidia-smi topo -m` output",
    "nvlink-status": "read from `nvidia-smi nvlink -s` output",
    "topo-p2p": "read from `nvidia-smi topo -p2p` output",
    "nvidia-smi-error": "read from nvidia-smi's error output",
    "snapshot": "replayed from a rigcheck snapshot",
    "combined": "combined from several files",
    "none": "no source",
}


class Reasoned(Protocol):
    """A record whose null fields may have their reason in ``missing`` (a snapshot record, a document's row)."""

    @property
    def missing(self) -> Mapping[str, Missing]: ...


def value_text(record: Reasoned, name: str, unit: str = "", digits: int = 0) -> str:
    """A field as a report shows it: ``"72 W"``, or ``"n/a (not supported)"`` with the reason."""
    value = getattr(record, name)
    if value is None:
        reason = record.missing.get(name)
        return f"n/a ({MISSING_WORDS[reason]})" if reason else "n/a"
    if isinstance(value, bool):
        return "on" if value else "off"
    text = f"{value:.{digits}f}" if isinstance(value, float) else str(value)
    return f"{text} {unit}".rstrip() if unit else text


def pcie_text(g: Gpu) -> str:
    """``gen4 x8 / gen4 x16`` (now / max), or the reason the link is unknown."""
    if g.pcie_gen_current is None and g.pcie_width_current is None:
        return value_text(g, "pcie_gen_current")
    now = f"gen{value_text(g, 'pcie_gen_current')} x{value_text(g, 'pcie_width_current')}"
    top = f"gen{value_text(g, 'pcie_gen_max')} x{value_text(g, 'pcie_width_max')}"
    return f"{now} / {top}"


def group_findings(findings: list[Finding]) -> list[tuple[Finding, list[str]]]:
    """Findings that say the same thing about several subjects, folded into one (first finding, subjects).

    An 8-GPU NVLink box has 28 identical pair findings; a person wants one line. Order is kept.
    """
    groups: dict[tuple[str, str, str, str | None], tuple[Finding, list[str]]] = {}
    for f in findings:
        key = (f.severity.value, f.id, f.message, f.advice)
        if key in groups:
            groups[key][1].append(f.subject)
        else:
            groups[key] = (f, [f.subject])
    return list(groups.values())


def subjects_text(subjects: list[str]) -> str:
    """``GPU0`` or ``4 GPUs`` / ``28 pairs``, for the subject column of a folded finding."""
    if len(subjects) == 1:
        return subjects[0]
    noun = (
        "pairs"
        if all("-" in s for s in subjects)
        else "GPUs"
        if all(s.startswith("GPU") for s in subjects)
        else "subjects"
    )
    return f"{len(subjects)} {noun}"


def subjects_list(subjects: list[str], *, limit: int = 8) -> str:
    shown = ", ".join(subjects[:limit])
    return shown + (f", … ({len(subjects) - limit} more)" if len(subjects) > limit else "")


def source_text(source: Source) -> str:
    """Where a snapshot came from, in words; a combined one lists its files (`--from A --from B`)."""
    if source.parts:
        return "combined: " + "; ".join(source_text(part) for part in source.parts)
    if source.kind == "none" and source.path:
        return f"empty file ({source.path})"  # a combined snapshot's part that held nothing
    src = SOURCE_WORDS.get(source.kind, source.kind)
    if source.path:
        src += f" ({source.path})"
    if source.replayed_from:
        src = f"snapshot {source.replayed_from}, originally {src}"
    return src


def machine_lines(snap: Snapshot) -> list[str]:
    """Host, software and GPU count, one fact a line; only what is known."""
    lines = [f"source: {source_text(snap.source)}"]
    host = snap.host
    if host.hostname or host.cpu_model:
        parts = [p for p in (host.hostname, host.os, host.cpu_model) if p]
        if host.cpu_count:
            parts.append(plural(host.cpu_count, "CPU"))
        if host.numa_nodes:
            parts.append(f"{host.numa_nodes} NUMA node{'s' if host.numa_nodes != 1 else ''}")
        if host.memory_total_gib:
            parts.append(f"{host.memory_total_gib:.0f} GiB RAM")
        lines.append("host: " + ", ".join(parts))
    sw = snap.software
    versions = [
        f"{label} {value}"
        for label, value in (
            ("driver", sw.driver_version),
            ("CUDA (driver)", sw.cuda_driver_version),
            ("torch", sw.torch_version),
            ("NCCL", sw.nccl_version),
        )
        if value
    ]
    if versions:
        lines.append("software: " + ", ".join(versions))
    if snap.gpus:
        readable = [g for g in snap.gpus if g.read_error is None]
        names = sorted({g.name or "name unknown" for g in readable})
        text = f"GPUs: {len(snap.gpus)}" + (" × " + " / ".join(names) if names else "")
        lost = len(snap.gpus) - len(readable)
        if lost:
            text += f" ({lost} unreadable)"
        if snap.gpu_selection is not None:
            text += f" (only these: --gpus {','.join(map(str, snap.gpu_selection))})"
        lines.append(text)
    elif snap.gpu_absent_reason:
        lines.append(f"GPUs: none visible — {snap.gpu_absent_reason}")
    else:
        lines.append("GPUs: none in this input")
    return lines


def passed_line(findings: list[Finding]) -> Text | None:
    """``OK  12 checks passed (power 2, …)``, or None when none passed."""
    passed = [f for f in findings if f.severity is Severity.OK]
    if not passed:
        return None
    per = Counter(f.category for f in passed)
    text = Text("OK      ", style=SEVERITY_STYLE[Severity.OK])
    text.append(
        f"{plural(len(passed), 'check')} passed (" + ", ".join(f"{c} {n}" for c, n in sorted(per.items())) + ")"
    )
    return text


def counts_text(counts: Mapping[str, int], exit_code: int) -> str:
    """``1 warn, 12 ok; exit code 0.``: the findings per severity, for the head of a findings section."""
    shown = ", ".join(f"{n} {sev}" for sev, n in counts.items() if n)
    return f"{shown or 'no findings'}; exit code {exit_code}."


def verdict_text(counts: Mapping[str, int], exit_code: int) -> str:
    """The verdict in words, from the findings per severity and the exit code the CLI decided."""
    if not any(counts.values()):
        return "nothing to check"
    if exit_code:
        return "problems found"
    if counts.get("warn"):
        return "warnings to look at"
    if counts.get("unknown"):
        return "no problems found, but some checks could not decide"
    return "healthy"


def verdict_word(counts: Mapping[str, int], exit_code: int) -> str:
    """The verdict in docs/verdicts.md's words: FAIL (exit 1: a ``fail`` finding, a ``warn`` with --strict), WARN
    (warnings to look at), INCOMPLETE (some checks could not decide, or nothing was checked), PASS."""
    if exit_code:
        return "FAIL"
    if counts.get("warn"):
        return "WARN"
    if counts.get("unknown") or not any(counts.values()):
        return "INCOMPLETE"
    return "PASS"


VERDICT_STYLE = {"FAIL": "bold red", "WARN": "bold yellow", "INCOMPLETE": "bold magenta", "PASS": "bold green"}


def result_line(counts: Mapping[str, int], exit_code: int, *, strict: bool) -> Text:
    """``Result: healthy (1 info) — exit 0``; ``counts`` is findings per severity, worst first."""
    problems = ", ".join(f"{n} {sev}" for sev, n in counts.items() if n and sev != "ok") or "no problems"
    text = Text("Result: ", style="bold")
    text.append(f"{verdict_text(counts, exit_code)} ({problems})", style="bold red" if exit_code else "bold green")
    text.append(f" — exit {exit_code}" + (" (--strict: warnings count)" if strict else ""))
    return text


_NARROWEST = 36  # the fewest cells a wrapped line keeps for its text before the indent gives way


class Hanging:
    """A line of prose as a report prints it. On a terminal it is wrapped at the width with every further line
    indented by ``indent`` (under the text after its bullet, not at column 0), a `command` in backticks kept on one
    line (folded only where it is wider than a line on its own). Anywhere else (a pipe, a file) it is one line,
    never wrapped: a program or a pager gets the whole line."""

    def __init__(self, text: Text | str, indent: int) -> None:
        self.text = text if isinstance(text, Text) else Text(text)
        self.indent = indent

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        from rich.segment import Segment

        lines = [self.text]
        if options.is_terminal:
            width = options.max_width
            # Under a bullet where that leaves a line room enough; near the edge on a very narrow terminal.
            indent = self.indent if width - self.indent >= _NARROWEST else min(4, self.indent)
            lines = wrapped(self.text, width, indent)
        for line in lines:
            yield from line.render(console)
            yield Segment.line()


def _words(plain: str) -> list[tuple[int, int]]:
    """(start, end) of each run a line may not break inside: a word, or a `command` with the words it holds."""
    spans = [(m.start(), m.end()) for m in re.finditer(r"\S+", plain)]
    code = [(m.start(), m.end()) for m in re.finditer(r"`[^`]*`", plain)]
    out: list[tuple[int, int]] = []
    for start, end in spans:
        inside = next((c for c in code if c[0] < start < c[1] or c[0] < end - 1 < c[1]), None)
        if out and inside is not None and out[-1][1] > inside[0]:
            out[-1] = (out[-1][0], end)  # a word of the command: joined to the one before it
        else:
            out.append((start, end))
    return out


def wrapped(text: Text, width: int, indent: int) -> list[Text]:
    """``text`` wrapped greedily at ``width`` cells between the words of :func:`_words`, every line after the
    first indented by ``indent`` spaces; a run wider than a line is folded, save a web address: that is left whole
    past the edge (a terminal shows it wrapped and copies or opens it as one; folded at the width it is two strings,
    neither of which opens)."""
    plain = text.plain
    breaks: list[int] = []
    line_start, room = 0, width
    runs: list[tuple[int, int]] = []
    for start, end in _words(plain):  # a command wider than a line breaks between its words, not inside one
        if cell_len(plain[start:end]) > width - indent and " " in plain[start:end]:
            runs += [(start + m.start(), start + m.end()) for m in re.finditer(r"\S+", plain[start:end])]
        else:
            runs.append((start, end))
    for start, end in runs:
        if plain[line_start:start].strip() and cell_len(plain[line_start:end]) > room:
            breaks.append(start)
            line_start, room = start, width - indent
        if "://" in plain[start:end]:  # a web address is never cut: it overflows the line it starts
            continue
        while cell_len(plain[line_start:end]) > room:  # one run wider than a line: folded
            line_start += room
            breaks.append(line_start)
            room = width - indent
    lines: list[Text] = []
    for i, part in enumerate(text.divide(breaks)):
        part.rstrip()
        lines.append(Text(" " * indent) + part if i else part)
    return lines


# ---------------------------------------------------------------------------------------------- Markdown


# Characters that mean something to Markdown anywhere in a line: backslash-escaped (CommonMark lets any ASCII
# punctuation be escaped, and GFM's table splitter honours ``\|``). ``<`` and ``&`` become entities, so a name
# like ``<script>`` is text in every renderer, including those that pass raw HTML through (GitHub sanitises, a
# static site generator may not). Without a ``<`` no tag can open, so a ``>`` is escaped only where it could
# start a block quote (first in the text), and an arrow such as ``0[0] -> 1[1]`` stays readable. Brackets make a
# link only as ``[text](url)`` or ``[text][ref]`` (these reports define no references), so a ``]`` is escaped
# where one of those follows it and ``rank[0]`` reads as printed.
_MD_ESCAPED = frozenset("\\`*|")
_HTML_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
_BLOCK_STARTS = frozenset("#>")  # first in a list item, these would open a heading or a block quote
_LINK_TAILS = frozenset("([:")  # after a "]": a link, a reference link, a reference definition


def md_text(text: str) -> str:
    """Text taken from input (a GPU name, a log line, a path), shown as itself in Markdown prose or a table
    cell: ``<`` and ``&`` as entities (``>`` too where it comes first); Markdown's ``\\ ` * |``, a ``]`` that would
    close a link, a leading ``#`` and a ``_`` that could open or close emphasis backslash-escaped (one between two
    letters or digits cannot: ``sw_power_cap`` stays as is); line breaks as spaces (one would end a cell or item)."""
    out: list[str] = []
    flat = " ".join(text.splitlines())
    first = len(flat) - len(flat.lstrip())
    for i, char in enumerate(flat):
        if char in "<&" or (char == ">" and i == first):
            out.append(_HTML_ENTITIES[char])
        elif (
            char in _MD_ESCAPED
            or (char in _BLOCK_STARTS and i == first)
            or (char == "]" and flat[i + 1 : i + 2] in _LINK_TAILS)
        ):
            out.append("\\" + char)
        elif char == "_" and not (0 < i < len(flat) - 1 and flat[i - 1].isalnum() and flat[i + 1].isalnum()):
            out.append("\\_")
        else:
            out.append(char)
    return "".join(out)


def md_prose(text: str, *, in_table: bool = False) -> str:
    """A sentence of rigcheck's that quotes input (a finding, a note): its `backticked` commands as code spans,
    the way the HTML report sets them (``prose_html``), every other part ``md_text``; an unmatched backtick
    leaves it all text."""
    parts = text.split("`")
    if len(parts) % 2 == 0:
        return md_text(text)
    return "".join(md_code(p, in_table=in_table) if i % 2 else md_text(p) for i, p in enumerate(parts))


def md_cell(text: str) -> str:
    """``md_prose`` for a table cell: input shown as text, commands as code, the row intact."""
    return md_prose(text, in_table=True)


def md_code(text: str, *, in_table: bool = False) -> str:
    """``text`` as a Markdown code span, shown verbatim: no HTML escaping is needed inside one (renderers
    escape code), but a backtick in ``text`` would close the span, so the fence is one backtick longer than the
    longest run in it (padded with a space where ``text`` starts or ends with one, CommonMark 6.1). In a table
    cell ``|`` still splits the row, so it is escaped there (GFM unescapes ``\\|`` inside code in cells)."""
    flat = " ".join(text.splitlines())
    fence = "`" * (max((len(run) for run in re.findall("`+", flat)), default=0) + 1)
    if flat.startswith("`") or flat.endswith("`"):
        flat = f" {flat} "
    if in_table:
        flat = flat.replace("|", "\\|")
    return f"{fence}{flat}{fence}"


def findings_markdown(findings: list[Finding], summary: str) -> list[str]:
    """The findings as Markdown lines: ``summary``, a table of the problems worst first (the same finding
    about several subjects in one row), the passed checks folded away."""
    out = ["## Findings", "", summary, ""]
    problems = [f for f in findings if f.severity is not Severity.OK]
    if problems:
        out += ["| severity | id | subject | finding | advice |", "| --- | --- | --- | --- | --- |"]
        for sev in SEVERITY_ORDER:
            for f, subjects in group_findings([p for p in problems if p.severity is sev]):
                cells = [md_cell(c) for c in (subjects_list(subjects), f.message, f.advice or "")]
                out.append("| " + " | ".join([f.severity.value.upper(), md_code(f.id, in_table=True), *cells]) + " |")
        out.append("")
    passed = [f for f in findings if f.severity is Severity.OK]
    if passed:
        out += ["<details><summary>Checks that passed</summary>", ""]
        out += [f"- {md_code(f.id)} {md_text(f.subject)}: {md_prose(f.message)}" for f in passed]
        out += ["", "</details>", ""]
    return out


# ---------------------------------------------------------------------------------------------- HTML


def prose_html(text: str) -> str:
    """Escaped text with `backticked` commands set as code (the checks write commands that way)."""
    from rigcheck.report.html import esc

    parts = esc(text).split("`")
    if len(parts) % 2 == 0:  # an unmatched backtick: leave the text as it is
        return esc(text)
    return "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts))


def finding_item_html(f: Finding, subjects: list[str]) -> str:
    """One finding (folded over its subjects) as a list item: badge, subject, message, evidence, advice."""
    from rigcheck.report.html import esc

    sev = f.severity.value
    parts = [
        f'<li class="finding" data-severity="{esc(sev)}" data-id="{esc(f.id)}">',
        f'<span class="badge sev-{esc(sev)}">{esc(sev.upper())}</span><div class="body">',
        f'<span class="subject">{esc(subjects_text(subjects))}</span> ',
        f'<span class="message">{prose_html(f.message)}</span> <code class="fid">[{esc(f.id)}]</code>',
    ]
    if len(subjects) > 1:
        parts.append(f'<div class="subjects">{esc(subjects_list(subjects, limit=28))}</div>')
    evidence = [f"measured: {f.measured}" if f.measured else "", f"expected: {f.expected}" if f.expected else ""]
    evidence = [x for x in evidence if x]
    if f.source:
        evidence.append(f"source: {f.source}")
    if evidence:
        parts.append(f'<div class="evidence">{esc("; ".join(evidence))}</div>')
    if f.advice:
        parts.append(f'<div class="advice">{prose_html(f.advice)}</div>')
    parts.append("</div></li>")
    return "".join(parts)


def findings_html(findings: list[Finding], summary: str) -> str:
    """The findings section: ``summary``, the problems grouped by severity worst first, the passed checks
    folded away in their own section."""
    from rigcheck.report.html import esc

    out = ['<section id="findings"><h2>Findings</h2>', f'<p class="muted">{esc(summary)}</p>']
    for sev in SEVERITY_ORDER:
        if sev is Severity.OK:
            continue
        groups = group_findings([f for f in findings if f.severity is sev])
        if not groups:
            continue
        out.append(f'<h3 class="sev-heading" data-severity="{sev.value}">{esc(sev.value.upper())} ({len(groups)})</h3>')
        out.append('<ol class="findings">' + "".join(finding_item_html(f, subs) for f, subs in groups) + "</ol>")
    out.append("</section>")
    passed = [f for f in findings if f.severity is Severity.OK]
    if passed:
        per = Counter(f.category for f in passed)
        cats = ", ".join(f"{c} {n}" for c, n in sorted(per.items()))
        out.append(
            f'<section id="passed"><details><summary>{plural(len(passed), "check")} passed ({esc(cats)})</summary>'
            '<ol class="findings">'
            + "".join(finding_item_html(f, subs) for f, subs in group_findings(passed))
            + "</ol></details></section>"
        )
    return "".join(out)


def td_html(text: str) -> str:
    """A table cell; "n/a (...)" values greyed so a missing figure stands out as missing."""
    from rigcheck.report.html import esc

    cls = ' class="na"' if text.startswith("n/a") else ""
    return f"<td{cls}>{esc(text)}</td>"


def result_class(counts: Mapping[str, int], exit_code: int) -> str:
    """The CSS class of the result banner (report/html.py): bad, warn or good."""
    if exit_code:
        return "bad"
    return "warn" if counts.get("warn") or counts.get("unknown") else "good"

"""The findings of a terminal report (doctor, power, thermal) with their advice said once: a finding about several
GPUs is one line, and an advice sentence that several findings share (the cooling paragraph of four thermal
findings, a power-limit command per GPU) is printed once, at its first finding, naming every GPU it is for. The
verdict line that heads such a report counts these lines (:func:`verdict_head`).

A sentence is a clause of the advice (the checks join them with ``; `` and ``. ``), or the cooling paragraph the
thermal checks append whole. ``nvidia-smi -i N`` of the finding's own GPU is the same sentence for every GPU, and
is printed once with the GPUs as nvidia-smi's comma list (``-i 0,1``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from rich.console import RenderableType
from rich.text import Text

from rigcheck.checks.doctor.thermal import COOLING_ADVICE
from rigcheck.model import Finding, Severity
from rigcheck.report.common import (
    SEVERITY_STYLE,
    VERDICT_STYLE,
    Hanging,
    subjects_list,
    subjects_text,
    verdict_text,
    verdict_word,
)
from rigcheck.units import plural

_SEVERITIES = (Severity.FAIL, Severity.WARN, Severity.UNKNOWN, Severity.INFO)
_GPU_ID = re.compile(r"(nvidia-smi -i )(\d+)\b")
_OWN_GPU = "{gpu}"
# A clause ends at "; " or ". " (not the "." of "e.g." or "i.e."), never inside a `command`.
_CLAUSE_END = re.compile(r"(?<!e\.g)(?<!i\.e)[;.] +")


@dataclass
class AdviceLine:
    """Sentences printed together under a finding; ``gpus`` names the GPUs they are for where those are more
    than the finding line's own."""

    sentences: list[str]
    gpus: list[int] = field(default_factory=list)


@dataclass
class FindingEntry:
    """One printed finding line: the first finding, the subjects it stands for, the advice printed under it."""

    finding: Finding
    subjects: list[str]
    advice: list[AdviceLine] = field(default_factory=list)


def _outside_code(text: str) -> list[tuple[str, bool]]:
    parts = text.split("`")
    if len(parts) % 2 == 0:  # an unmatched backtick: no code to keep whole
        return [(text, False)]
    return [(p if i % 2 == 0 else f"`{p}`", i % 2 == 1) for i, p in enumerate(parts)]


def _clauses(text: str) -> list[str]:
    out = [""]
    for part, code in _outside_code(text):
        if code:
            out[-1] += part
            continue
        pieces = _CLAUSE_END.split(part)
        out[-1] += pieces[0]
        out += pieces[1:]
    return [c.strip().rstrip(":;.").strip() for c in out if c.strip().rstrip(":;.").strip()]


def sentences(advice: str) -> list[str]:
    """``advice`` as its sentences, in order (the cooling paragraph kept whole)."""
    out: list[str] = []
    for i, piece in enumerate(advice.split(COOLING_ADVICE)):
        if i:
            out.append(COOLING_ADVICE)
        out += _clauses(piece)
    return out


def joined(said: list[str]) -> str:
    """Sentences as one line: ``; `` between clauses, ``. `` before one that starts a sentence (a capital)."""
    text = said[0] if said else ""
    for s in said[1:]:
        text += (". " if s[:1].isupper() else "; ") + s
    return text


def _key(sentence: str, gpu: int | None) -> str:
    """The sentence with this finding's own ``nvidia-smi -i N`` as a placeholder: the same for every GPU."""
    if gpu is None:
        return sentence
    return _GPU_ID.sub(lambda m: m.group(1) + _OWN_GPU if int(m.group(2)) == gpu else m.group(0), sentence)


def _gpus_text(gpus: list[int]) -> str:
    return ",".join(str(g) for g in gpus)


def finding_entries(findings: list[Finding]) -> list[FindingEntry]:
    """The problems worst first as printed lines (the same message about several subjects on one), each advice
    sentence under the first line that has it, with every GPU it is for."""
    lines: dict[tuple[Severity, str, str], tuple[list[Finding], list[str]]] = {}
    for sev in _SEVERITIES:
        for f in findings:
            if f.severity is sev:
                members, subjects = lines.setdefault((sev, f.id, f.message), ([], []))
                members.append(f)
                subjects.append(f.subject)
    scope: dict[str, list[int]] = {}  # sentence key -> the GPUs of every finding that gives it
    keyed: list[list[tuple[str, int | None]]] = []
    for members, _ in lines.values():
        own: list[tuple[str, int | None]] = []
        for f in members:
            for s in sentences(f.advice or ""):
                key = _key(s, f.gpu)
                gpus = scope.setdefault(key, [])
                if f.gpu is not None and f.gpu not in gpus:
                    gpus.append(f.gpu)
                if key not in (k for k, _ in own):
                    own.append((key, f.gpu))
        keyed.append(own)
    printed: set[str] = set()
    entries: list[FindingEntry] = []
    for (members, subjects), own in zip(lines.values(), keyed, strict=True):
        entry = FindingEntry(members[0], subjects)
        line_gpus = sorted({f.gpu for f in members if f.gpu is not None})
        for key, _gpu in own:
            if key in printed:
                continue
            printed.add(key)
            gpus = sorted(scope[key])
            text = key.replace(_OWN_GPU, _gpus_text(gpus or line_gpus))
            named = gpus if gpus and gpus != line_gpus else []
            if entry.advice and entry.advice[-1].gpus == named:
                entry.advice[-1].sentences.append(text)
            else:
                entry.advice.append(AdviceLine([text], named))
        entries.append(entry)
    return entries


def shown_counts(entries: list[FindingEntry], folded: int = 0, passed: int = 0) -> dict[str, int]:
    """Lines per severity as the terminal report prints them, worst first; ``folded``: the unknowns a report
    folds into lines of its own (doctor's ``NOT IN INPUT``), counted as findings as that heading counts them;
    ``passed``: the checks that passed (``ok``, where given), so that a report of passed checks alone is healthy,
    not "nothing to check"."""
    counts = {sev.value: 0 for sev in _SEVERITIES}
    for entry in entries:
        counts[entry.finding.severity.value] += 1
    counts[Severity.UNKNOWN.value] += folded
    if passed:
        counts[Severity.OK.value] = passed
    return counts


def verdict_head(
    command: str,
    counts: Mapping[str, int],
    exit_code: int,
    *,
    strict: bool,
    entries: list[FindingEntry],
    shown: list[Finding],
    folded: int = 0,
    fold_lines: int = 0,
) -> Text:
    """A report's first line: ``rigcheck COMMAND: WORD, exit N — verdict: `` and what the report lists below,
    counted as it lists it (``counts``: the document's findings per severity, which decide the word);
    ``folded`` unknowns in ``fold_lines`` lines of their own are said apart."""
    word = verdict_word(counts, exit_code)
    listed = shown_counts(entries)
    said = [", ".join(f"{n} {sev}" for sev, n in listed.items() if n) or "no problems"]
    problems = [f for f in shown if f.severity is not Severity.OK]
    if len(problems) != len(entries):  # the JSON's counts are findings: say why they differ
        said.append(
            f"{len(problems)} findings in {plural(len(entries), 'line')} (a finding about several GPUs or pairs is "
            "one line)"
        )
    if folded:
        said.append(
            f"{folded} unknown folded into {plural(fold_lines, 'line')} under NOT IN INPUT (--show-unknown lists them)"
        )
    passed = sum(1 for f in shown if f.severity is Severity.OK)
    if passed:
        said.append(f"{plural(passed, 'check')} passed")
    text = Text(f"rigcheck {command}: ", style="bold")
    text.append(word, style=VERDICT_STYLE[word])
    text.append(f", exit {exit_code}" + (" (--strict: warnings count)" if strict else ""))
    text.append(f" — {verdict_text(counts, exit_code)}: " + "; ".join(said))
    return text


_MESSAGE_AT = 20  # a finding's message starts after the severity (7), the subject (11) and their spaces
_ADVICE_BULLET = "        → "


def entry_lines(entries: list[FindingEntry]) -> list[RenderableType]:
    """A line per finding (several subjects named on one), worst first, its advice indented beneath: a sentence
    several findings share under the first of them, ``GPU 0, 1:`` naming the GPUs it is for."""
    out: list[RenderableType] = []
    for entry in entries:
        f, subjects = entry.finding, entry.subjects
        sev = f.severity
        line = Text()
        line.append(f"{sev.value.upper():<7}", style=SEVERITY_STYLE[sev])
        line.append(f" {subjects_text(subjects):<11} ", style="bold")
        line.append(f.message)
        if len(subjects) > 1:
            line.append(f" — {subjects_list(subjects)}")
        line.append(f"  [{f.id}]", style="dim")
        out.append(Hanging(line, _MESSAGE_AT))
        for advice in entry.advice:
            named = f"GPU {', '.join(str(g) for g in advice.gpus)}: " if advice.gpus else ""
            text = f"{_ADVICE_BULLET}{named}" + joined(advice.sentences)
            out.append(Hanging(Text(text, style="dim" if sev is Severity.INFO else ""), len(_ADVICE_BULLET)))
    return out

"""DCGM's own diagnostic (`dcgmi diag -j`, or the table dcgmi prints without -j) judged into verify checks (pure):
one check ``dcgm.<test>`` per DCGM test and GPU, or of the node for a result of no single GPU (a software test, a
CPU or NVSwitch entity). A table's "All" is each judged GPU where the run covered the snapshot's GPUs (its device
count agrees or is not given), else the node's.

DCGM has already judged each test against its own thresholds; rigcheck keeps its word and shows it:

- Fail: the check fails, its judgement quotes DCGM's messages (with DCGM_FR error ids);
- Warn: the check passes, and the warning is kept in the judgement and in the document's notes;
- Skip or not run: no check (nothing was judged), one note per test naming the GPUs;
- a status rigcheck does not know: incomplete, quoting it;
- a runtime error (DCGM could not run at all): one incomplete node check ``dcgm``.

DCGM numbers GPUs by its own ids, which follow the NVML index on a plain node; a result for a GPU the judge does
not judge (not in the snapshot, or left out by ``--gpus``) is a note, not a check.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Final

from rigcheck.model.dcgm import ALL_GPUS, DcgmDiag, DcgmMessage, DcgmResult, DcgmTest
from rigcheck.model.verify import Judgement, Verdict, VerifyCheck

SHOWN_MESSAGES: Final = 3  # DCGM messages quoted in one judgement
# Tests that only read the software set-up: a node whose DCGM run had only these measured nothing.
DEPLOYMENT: Final = "deployment"
_WORD: Final = {"pass": "Pass", "fail": "Fail", "warn": "Warn"}
_NAMES_GPU: Final = re.compile(r"^\s*GPU\s*(\d+)\b")


@dataclass
class DcgmJudged:
    """The DCGM checks per GPU and of the node, the notes, and each failing check's words in the drain line."""

    gpus: dict[int, list[VerifyCheck]] = field(default_factory=dict)
    node: list[VerifyCheck] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    shorts: dict[int, str] = field(default_factory=dict)  # id(VerifyCheck) -> its words in the drain reason


def check_id(test_name: str) -> str:
    """ "Memory Bandwidth" and "memory_bandwidth" -> "dcgm.memory-bandwidth"."""
    return "dcgm." + (re.sub(r"[^a-z0-9]+", "-", test_name.lower()).strip("-") or "test")


def measured(diag: DcgmDiag | None) -> bool:
    """Whether DCGM judged some GPU beyond its software set-up: a hardware, integration or stress test that
    passed, warned or failed (a level-1 run, or one whose tests were all skipped, measured nothing)."""
    if diag is None:
        return False
    return any(
        (r.gpu is not None or r.entity == ALL_GPUS) and r.status in ("pass", "warn", "fail")
        for t in diag.tests
        if (t.category or "").lower() != DEPLOYMENT and t.name.lower() != "software"
        for r in t.results
    )


def _quote(message: DcgmMessage) -> str:
    code = f" (DCGM error {message.error_id})" if message.error_id is not None else ""
    return f"{message.text}{code}" if message.text else f"DCGM error {message.error_id}"


def _said(result: DcgmResult) -> str:
    """What DCGM said of one result: its warnings, else its info lines."""
    quoted = [_quote(m) for m in result.warnings] or result.info
    more = f"; and {len(quoted) - SHOWN_MESSAGES} more" if len(quoted) > SHOWN_MESSAGES else ""
    return "; ".join(quoted[:SHOWN_MESSAGES]) + more


def _check(test: DcgmTest, result: DcgmResult, source: str) -> tuple[VerifyCheck, str | None]:
    """One result as a check, and its drain words when it does not pass."""
    said = _said(result)
    if result.status == "unknown":
        verdict: Verdict = "incomplete"
        judgement = Judgement(
            rule="dcgm", verdict="not_judged", text=f"DCGM status {result.status_text!r} is not one rigcheck knows"
        )
    else:
        verdict = "fail" if result.status == "fail" else "pass"
        word = _WORD[result.status]
        judgement = Judgement(rule="dcgm", verdict=verdict, text=f"DCGM {word}: {said}" if said else f"DCGM {word}")
    who = f"GPU {result.gpu}" if result.gpu is not None else (result.entity or "the node")
    category = f"{test.category} test" if test.category else "test"
    check = VerifyCheck(
        id=check_id(test.name),
        verdict=verdict,
        value=None,
        unit=None,
        expected_min=None,
        expected_source=source,
        peak=None,
        peer_best=None,
        baseline=None,
        judgements=[judgement],
        detail=f"DCGM {category} {test.name!r} on {who}: {result.status_text}" + (f"; {said}" if said else ""),
        remeasured=[],
    )
    if verdict == "fail":
        codes = [str(m.error_id) for m in result.warnings if m.error_id is not None]
        return check, f"DCGM error {','.join(dict.fromkeys(codes))}" if codes else "DCGM fail"
    return check, None if verdict == "pass" else "incomplete"


def judge_dcgm(
    diag: DcgmDiag, *, gpus: Collection[int], known: Collection[int], file: str | None, cpu: bool = False
) -> DcgmJudged:
    """Every result of ``diag`` as a check of the GPU it names (those in ``gpus``, the GPUs judged) or of the node;
    a result for a GPU not in ``known`` (the snapshot's) is a note, one left out by ``--gpus`` is dropped."""
    out = DcgmJudged()
    what = f"the DCGM diagnostic{f' ({file})' if file else ''}"
    if cpu:
        out.notes.append(f"{what}: not judged on a CPU run")
        return out
    version = f"DCGM {diag.version}" if diag.version else "DCGM (version not given)"
    how = "`dcgmi diag -j`" if diag.source == "json" else "the `dcgmi diag` table"
    source = f"{version}'s own verdict ({how}{f', {file}' if file else ''})"
    out.notes.extend(f"{what}: {note}" for note in diag.notes)
    if diag.runtime_error is not None:
        out.node.append(_runtime_error(diag.runtime_error, source))
    every = _every_gpu(diag, gpus, known, what, out.notes)
    elsewhere: set[int] = set()
    for test in diag.tests:
        unrun: dict[str, list[str]] = {}
        for result in (r for each in test.results for r in _each_gpu(each, every)):
            if result.status in ("skip", "not-run"):
                unrun.setdefault(result.status, []).append(
                    f"GPU {result.gpu}" if result.gpu is not None else (result.entity or "the node")
                )
                continue
            if result.gpu is not None and result.gpu not in gpus:
                if result.gpu not in known:
                    elsewhere.add(result.gpu)
                continue
            check, short = _check(test, result, source)
            if result.gpu is None:
                out.node.append(check)
            else:
                out.gpus.setdefault(result.gpu, []).append(check)
            if short is not None:
                out.shorts[id(check)] = short
            if result.status == "warn":
                who = f"GPU {result.gpu}" if result.gpu is not None else "the node"
                out.notes.append(f"{who} {check.id}: DCGM warns: {_said(result) or result.status_text}")
        for status, subjects in unrun.items():
            words = "skipped" if status == "skip" else "did not run"
            out.notes.append(f"DCGM {words} {test.name!r} on {', '.join(subjects)}: not judged")
    if elsewhere:
        listed = ", ".join(map(str, sorted(elsewhere)))
        out.notes.append(f"{what} has results for GPU {listed}, which the snapshot does not have: not judged")
    return out


def _every_gpu(
    diag: DcgmDiag, gpus: Collection[int], known: Collection[int], what: str, notes: list[str]
) -> list[int] | None:
    """The GPUs a text table's "All" stands for: the judged ones, where the run covered the GPUs the snapshot
    knows (the table's device count agrees, or it gives none); None (All stays the node's) where it did not, or
    where no GPU is judged."""
    if not any(r.entity == ALL_GPUS for t in diag.tests for r in t.results) or not gpus:
        return None  # no "All", or no GPU it could stand for (a table that names none, with no device list)
    if diag.gpu_count is not None and diag.gpu_count != len(known):
        notes.append(
            f"{what} ran on {diag.gpu_count} GPU(s) and says 'All' without naming them; the snapshot has "
            f"{len(known)}: its results are the node's"
        )
        return None
    return sorted(gpus)


def _each_gpu(result: DcgmResult, every: list[int] | None) -> list[DcgmResult]:
    """A result of "all GPUs" as one result per GPU it stands for, each keeping the messages that name it or no
    GPU ("GPU 3 Error using CUDA API ..."); any other result as it is."""
    if result.entity != ALL_GPUS or every is None:
        return [result]
    return [
        result.model_copy(
            update={
                "gpu": gpu,
                "entity": None,
                "warnings": [w for w in result.warnings if _names(w.text) in (None, gpu)],
                "info": [i for i in result.info if _names(i) in (None, gpu)],
            }
        )
        for gpu in every
    ]


def _names(message: str) -> int | None:
    """The GPU a DCGM message starts by naming ("GPU 3 ...", "GPU3: ..."), else None."""
    m = _NAMES_GPU.match(message)
    return int(m.group(1)) if m else None


def _runtime_error(error: str, source: str) -> VerifyCheck:
    return VerifyCheck(
        id="dcgm",
        verdict="incomplete",
        value=None,
        unit=None,
        expected_min=None,
        expected_source=source,
        peak=None,
        peer_best=None,
        baseline=None,
        judgements=[Judgement(rule="dcgm", verdict="not_judged", text=f"DCGM could not run: {error}")],
        detail=f"DCGM could not run the diagnostic: {error}",
        remeasured=[],
    )

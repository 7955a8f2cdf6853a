"""Where a hung fleet stands: every rank's Python stack at a deadline, grouped by where it is, the waiting majority
told from the ranks it waits for. Pure: rank 0 (rigcheck.bench.fleet.stacks) gathers the stacks; this module reads
faulthandler's text, groups, and names.

A rank's place is its phase and its *site*: the innermost rigcheck frame that is not a wait on the store or on
rank 0's word (a rank polling the store for rank 0's word stands where it asked for it). Ranks of one place are
one group; the largest group (the one holding rank 0 on a tie: rank 0 saw the deadline pass, so it was waiting) is
the waiting majority, and every other group is named (``fleet.stuck-rank``, fail) with its frame, its phase and
the majority it holds up: "rank 3 (node b07) in all_reduce ...; 7 ranks waiting in barrier ...".
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rigcheck.model.finding import Severity
from rigcheck.model.fleet import FleetFinding, StackGroup

FINDING_IDS: tuple[str, ...] = ("fleet.stuck-rank",)

Frame = tuple[str, int, str]  # (file, line, function): rigcheck's files from "rigcheck/", others their last two parts

# The waiting machinery: a frame here is a rank waiting on the store or on rank 0, not where it stands.
WAIT_FILES: tuple[str, ...] = ("rigcheck/bench/fleet/store.py", "rigcheck/bench/fleet/stacks.py")
WAIT_FUNCTIONS: frozenset[str] = frozenset({"await_lead", "sleep"})

_FILE_LINE = re.compile(r'^\s*File "(?P<file>.*)", line (?P<line>\d+) in (?P<func>\S+)')
_THREAD = re.compile(r"^(?:Current thread|Thread) (?P<id>0x[0-9a-f]+)", re.IGNORECASE)


@dataclass(frozen=True)
class RankStack:
    """One rank's main-thread stack (outermost first), where it said it was, and how the stack was had."""

    rank: int
    phase: str | None
    doing: str | None
    frames: tuple[Frame, ...]
    via: str  # "thread": the rank answered; "signal": faulthandler, signalled on its host


def short_path(path: str) -> str:
    """rigcheck's files from "rigcheck/" on; any other file by its last two parts (torch/.../distributed_c10d.py
    as "distributed/distributed_c10d.py")."""
    parts = path.replace("\\", "/").split("/")
    if "rigcheck" in parts:
        return "/".join(parts[len(parts) - 1 - parts[::-1].index("rigcheck") :])
    return "/".join(parts[-2:])


def parse_faulthandler(text: str, thread_id: int) -> tuple[Frame, ...]:
    """The frames faulthandler wrote for thread ``thread_id`` (its last dump in ``text``), outermost first."""
    blocks: list[tuple[int, list[Frame]]] = []
    for line in text.splitlines():
        head = _THREAD.match(line)
        if head is not None:
            blocks.append((int(head.group("id"), 16), []))
            continue
        frame = _FILE_LINE.match(line)
        if frame is not None and blocks:
            blocks[-1][1].append((short_path(frame.group("file")), int(frame.group("line")), frame.group("func")))
    mine = [frames for ident, frames in blocks if ident == thread_id]
    return tuple(reversed(mine[-1])) if mine else ()  # faulthandler writes the most recent call first


def _waiting(frame: Frame) -> bool:
    return frame[0] in WAIT_FILES or frame[2] in WAIT_FUNCTIONS


def site(frames: Sequence[Frame]) -> Frame | None:
    """The innermost rigcheck frame that is not the waiting machinery; else the innermost rigcheck frame."""
    ours = [f for f in frames if f[0].startswith("rigcheck/")]
    standing = [f for f in ours if not _waiting(f)]
    chosen = standing or ours
    return chosen[-1] if chosen else None


def frame_text(frame: Frame | None) -> str:
    return "no frame" if frame is None else f"{frame[2]} ({frame[0]}:{frame[1]})"


def where_text(stack: RankStack) -> str:
    """'site > innermost function', as the document holds a rank's place."""
    here = site(stack.frames)
    inner = stack.frames[-1] if stack.frames else None
    text = frame_text(here)
    if inner is not None and inner != here:
        text += f" > {inner[2]}"
    return text


def _key(stack: RankStack) -> tuple[str | None, str, str]:
    here = site(stack.frames)
    return (stack.phase, here[0] if here else "", here[2] if here else "")


def _ranks_text(ranks: Sequence[int]) -> str:
    if len(ranks) > 2 and list(ranks) == list(range(ranks[0], ranks[-1] + 1)):
        return f"{ranks[0]}-{ranks[-1]}"
    return ", ".join(str(r) for r in ranks)


def _who(ranks: Sequence[int], node_of: Mapping[int, str]) -> str:
    nodes = sorted({node_of[r] for r in ranks if r in node_of})
    on = f" (node{'s' if len(nodes) > 1 else ''} {', '.join(nodes)})" if nodes else ""
    return f"rank{'s' if len(ranks) > 1 else ''} {_ranks_text(ranks)}{on}"


def group_stacks(
    stacks: Sequence[RankStack], node_of: Mapping[int, str]
) -> tuple[list[StackGroup], list[FleetFinding]]:
    """The groups, the waiting majority first, and a ``fleet.stuck-rank`` finding for each other group."""
    by_place: dict[tuple[str | None, str, str], list[RankStack]] = {}
    for stack in sorted(stacks, key=lambda s: s.rank):
        by_place.setdefault(_key(stack), []).append(stack)
    if not by_place:
        return [], []
    places = sorted(by_place.values(), key=lambda g: (-len(g), not any(s.rank == 0 for s in g), g[0].rank))
    groups = []
    for i, members in enumerate(places):
        first = members[0]
        ranks = [s.rank for s in members]
        inner = first.frames[-1] if first.frames else None
        groups.append(
            StackGroup(
                ranks=ranks,
                nodes=sorted({node_of[r] for r in ranks if r in node_of}),
                phase=first.phase,
                site=frame_text(site(first.frames)),
                frame=frame_text(inner),
                doing=first.doing,
                via="signal" if all(s.via == "signal" for s in members) else "thread",
                waiting=i == 0,
            )
        )
    majority = groups[0]
    held = f"{len(majority.ranks)} rank{'s' if len(majority.ranks) > 1 else ''} ({_ranks_text(majority.ranks)})"
    waiting = f"{held} waiting in {majority.site}" + (f" during {majority.phase}" if majority.phase else "")
    findings = []
    for group, members in zip(groups[1:], places[1:], strict=True):
        during = f" during {group.phase}" if group.phase else ""
        doing = f", {group.doing}" if group.doing else ""
        how = " (its stack by faulthandler, signalled on its host)" if group.via == "signal" else ""
        findings.append(
            FleetFinding(
                id="fleet.stuck-rank",
                severity=Severity.FAIL,
                node=group.nodes[0] if len(group.nodes) == 1 else None,
                gpu=None,
                message=(
                    f"{_who(group.ranks, node_of)} stuck in {where_text(members[0])}{during}{doing}{how}; {waiting}"
                ),
                measured=group.site,
                expected=majority.site,
            )
        )
    return groups, findings

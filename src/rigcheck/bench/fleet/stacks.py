"""Where a hung rank is stuck: every rank's Python stack, asked for by rank 0 when a deadline passes, through the
store, and grouped (checks/fleet/stacks.py).

Every rank, from the rendezvous on, runs a watch (:class:`StackWatch`): a daemon thread that looks at the store's
``stacks/asked`` counter every ``ASK_POLL_S`` and, when rank 0 asks (``stacks/ask/<n>``), answers
``stacks/<n>/<rank>`` with its main thread's stack (``sys._current_frames``: the thread answers while the main one
is blocked in a collective, a sleep or a wait on the store), its phase and the collective in progress. Each rank
also registers faulthandler on a real-time signal (``STACK_SIGNAL``), writing to a file of its own in the temporary
directory, headed by its rank, pid, start time and main thread: a rank whose Python threads cannot run at all (the
GIL held by a stuck C call) still dumps its stack there when signalled, from C.

Rank 0, on a deadline missed (:func:`collect`), asks, names the ranks it suspects, and gets a suspect's stack by
the signal where the suspect does not answer: itself for the suspects of its own host, else through the lowest
live rank of the suspect's host, which signals it, reads the file and relays it (``stacks/<n>/<rank>/signal``).
Before signalling, the file's header must name the rank, and the pid's start time in /proc must match it (a pid
reused by another process is never signalled). What cannot be seen: a rank whose host has no live rank that
answers (the host is down, its network is cut, every rank there hung so hard its watch cannot run) — named missing
with the reason, without a stack.

The hang test hook's rank (RIGCHECK_FLEET_TEST_HANG_RANK) is mute: its watch answers nothing, as a process whose
interpreter is stuck, so its stack comes through the signal.
"""

from __future__ import annotations

import contextlib
import faulthandler
import os
import signal
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Mapping
from pathlib import Path
from types import FrameType
from typing import Any, Final

from rigcheck.bench.fleet.state import FleetRun
from rigcheck.checks.fleet.stacks import Frame, RankStack, group_stacks, parse_faulthandler, short_path, where_text
from rigcheck.errors import BenchError

ASK_POLL_S: Final = 0.5  # a watch looks at the counter this often: 2 reads a second a rank at most
ANSWER_S: Final = 5.0  # rank 0 waits this long at most for the answers (the deadline if shorter)
MAX_FRAMES: Final = 24  # the innermost frames kept of a stack
SIGNAL_WAIT_S: Final = 1.0  # a signalled rank's dump is in its file within this
STACK_SIGNAL: Final = signal.SIGRTMAX - 3 if hasattr(signal, "SIGRTMAX") else None  # no job uses it (USR1/2: Slurm)
HEADER: Final = "rigcheck fleet stacks"


def _frames(frame: FrameType | None) -> tuple[Frame, ...]:
    if frame is None:
        return ()
    stack = traceback.extract_stack(frame)[-MAX_FRAMES:]
    return tuple((short_path(f.filename), int(f.lineno or 0), f.name) for f in stack)


def _start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (/proc/PID/stat field 22); None where unreadable."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()
    return fields[19] if len(fields) > 19 else None


def stack_file(pid: int) -> Path:
    return Path(tempfile.gettempdir()) / f"rigcheck-fleet-{os.getuid()}-{pid}.stacks"


class StackWatch:
    """This rank's watch (module docstring): answers rank 0's asks, relays the signalled stacks of its host."""

    def __init__(self, run: FleetRun) -> None:
        self.run = run
        self.rank = run.env.rank
        self.mute = False  # the hang hook's rank answers nothing
        self.doing: str | None = None
        self.stopped = threading.Event()
        self.main = threading.main_thread().ident or 0
        self.file: Path | None = None
        self.fd: int | None = None

    # --- this rank -------------------------------------------------------------------------------------------

    def start(self) -> None:
        self._register()
        if self.run.env.world_size > 1 and self.rank != 0:  # rank 0 asks; it answers nothing
            threading.Thread(target=self._loop, name="rigcheck-fleet-stacks", daemon=True).start()

    def _register(self) -> None:
        """faulthandler on STACK_SIGNAL into this rank's file (Linux; elsewhere only the thread answers)."""
        start = _start_time(os.getpid())
        if STACK_SIGNAL is None or start is None or self.run.env.world_size == 1:
            return
        path = stack_file(os.getpid())
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o600)
            os.write(fd, f"{HEADER} rank {self.rank} pid {os.getpid()} start {start} main {self.main}\n".encode())
            faulthandler.register(STACK_SIGNAL, file=fd, all_threads=True, chain=False)
        except (OSError, RuntimeError, ValueError):  # no temporary directory, or the signal taken: the thread answers
            return
        self.file, self.fd = path, fd

    def note(self, what: str) -> None:
        """What this rank is doing now (the collective in progress; "": none), said with its stack."""
        self.doing = what or None

    def stop(self) -> None:
        self.stopped.set()
        if self.fd is None:
            return
        with contextlib.suppress(OSError, RuntimeError, ValueError):
            if STACK_SIGNAL is not None:
                faulthandler.unregister(STACK_SIGNAL)
            os.close(self.fd)
        with contextlib.suppress(OSError):
            if self.file is not None:
                self.file.unlink()
        self.fd = None

    def own(self, frame: FrameType | None = None) -> RankStack:
        """This rank's main thread's stack (``frame``: from there outward instead, rank 0's own at a deadline)."""
        if frame is None:
            frame = sys._current_frames().get(self.main)
        return RankStack(self.rank, self.run.current, self.doing, _frames(frame), "thread")

    def _loop(self) -> None:
        answered = 0
        ctl = self.run.ctl
        while not self.stopped.wait(ASK_POLL_S):
            if ctl is None:
                ctl = self.run.ctl
                continue
            try:
                asked = ctl.count("stacks/asked")
                while answered < asked:
                    answered += 1
                    self._answer(answered, ctl.read_if(f"stacks/ask/{answered}"))
            except BenchError:  # the store is gone (the run ended, or rank 0 with it): nothing more to answer
                return

    def _answer(self, n: int, ask: Any) -> None:
        if not isinstance(ask, dict) or self.mute:
            return
        ctl = self.run.control
        if self.rank != 0:
            ctl.put(f"stacks/{n}/{self.rank}", to_json(self.own()))
            ctl.bump(f"stacks/{n}/answered")
        relay = ask.get("relay", {})
        for rank, pid in relay.get(str(self.rank), []) if isinstance(relay, dict) else []:
            if isinstance(rank, int) and isinstance(pid, int):
                got = signalled(rank, pid)
                ctl.put(f"stacks/{n}/{rank}/signal", {"frames": list(got[0]), "why": got[1]})
                ctl.bump(f"stacks/{n}/answered")


def to_json(stack: RankStack) -> dict[str, Any]:
    return {"phase": stack.phase, "doing": stack.doing, "frames": [list(f) for f in stack.frames]}


def from_json(rank: int, value: Any, via: str) -> RankStack | None:
    """A stack as read from the store (sealed, still untrusted): None when it is not one."""
    if not isinstance(value, dict) or not isinstance(value.get("frames"), list):
        return None
    frames = []
    for f in value["frames"][-MAX_FRAMES:]:
        if not (isinstance(f, list) and len(f) == 3 and isinstance(f[0], str) and isinstance(f[1], int)):
            return None
        frames.append((f[0][:200], f[1], str(f[2])[:100]))
    phase, doing = value.get("phase"), value.get("doing")
    return RankStack(
        rank,
        phase if isinstance(phase, str) else None,
        doing[:200] if isinstance(doing, str) else None,
        tuple(frames),
        via,
    )


def signalled(rank: int, pid: int) -> tuple[tuple[Frame, ...], str | None]:
    """Rank ``rank``'s stack, had by signalling its process ``pid`` on this host: (frames, None), or ((), why not)."""
    path = stack_file(pid)
    try:
        with path.open("rb") as fh:
            header = fh.readline().decode(errors="replace").split()
            before = path.stat().st_size
    except OSError:
        return (), f"its stack file ({path.name}) is not on its host: it never registered faulthandler"
    # "rigcheck fleet stacks rank R pid P start S main M"
    fields = dict(zip(header[3::2], header[4::2], strict=False))
    if fields.get("rank") != str(rank) or fields.get("pid") != str(pid) or STACK_SIGNAL is None:
        return (), "its stack file names another process"
    if _start_time(pid) != fields.get("start"):
        return (), f"its process {pid} is gone"
    try:
        os.kill(pid, STACK_SIGNAL)
    except OSError as exc:
        return (), f"its process {pid} could not be signalled: {exc.strerror}"
    until = time.monotonic() + SIGNAL_WAIT_S
    size = before
    while time.monotonic() < until:
        time.sleep(0.05)
        now = path.stat().st_size
        if now > before and now == size:  # written, and no longer growing
            break
        size = now
    with path.open("rb") as fh:
        fh.seek(before)
        text = fh.read().decode(errors="replace")
    frames = parse_faulthandler(text, int(fields.get("main", "0")))
    return (frames, None) if frames else ((), f"signalled, its process wrote no stack within {SIGNAL_WAIT_S:g} s")


# --- rank 0 ----------------------------------------------------------------------------------------------------


def _relays(run: FleetRun, suspects: Mapping[int, int]) -> tuple[dict[str, list[list[int]]], dict[int, str]]:
    """Who signals each suspect on another host (the lowest rank of its host not suspected), and why no one can."""
    relay: dict[str, list[list[int]]] = {}
    none: dict[int, str] = {}
    home = run.host
    for rank, pid in sorted(suspects.items()):
        host = run.host_of(rank)
        if host == home:
            continue  # rank 0 signals it itself
        mates = sorted(r for r in run.checkins if run.host_of(r) == host and r not in suspects and r != 0)
        if not mates:
            none[rank] = f"not obtained: it did not answer, and no other rank on its host ({host}) could signal it"
            continue
        relay.setdefault(str(mates[0]), []).append([rank, pid])
    return relay, none


def collect(run: FleetRun, why: str, suspects: Mapping[int, str], caller: FrameType | None) -> None:
    """Rank 0 at a missed deadline: every rank's stack (``suspects``: the ranks it is missing, rank -> the reason),
    grouped; the groups and findings into ``run``, each suspect's place into its MissingRank."""
    watch: StackWatch | None = run.watch
    if watch is None or run.ctl is None:
        return
    ctl = run.control
    pids = {r: int(run.checkins[r]["pid"]) for r in suspects if isinstance(run.checkins.get(r, {}).get("pid"), int)}
    relay, unreachable = _relays(run, pids)
    n = ctl.count("stacks/asked") + 1
    try:
        ctl.put(f"stacks/ask/{n}", {"why": why, "relay": relay})
        ctl.bump("stacks/asked")
    except BenchError:
        return
    stacks: dict[int, RankStack] = {0: watch.own(caller)}
    reasons: dict[int, str] = dict(unreachable)
    for rank in sorted(pids):  # the suspects of rank 0's own host: signalled here
        if run.host_of(rank) == run.host:
            frames, reason = signalled(rank, pids[rank])
            if frames:
                stacks[rank] = RankStack(rank, _phase(run, rank), None, frames, "signal")
            elif reason:
                reasons[rank] = f"not obtained: {reason}"
    others = [r for r in run.checkins if r != 0]
    until = run.clock() + min(ANSWER_S, run.deadline_s)
    while True:
        for rank in others:
            if rank in stacks and stacks[rank].via == "thread":
                continue
            got = from_json(rank, ctl.read_if(f"stacks/{n}/{rank}"), "thread")
            if got is None and rank not in stacks and rank in pids:
                relayed = ctl.read_if(f"stacks/{n}/{rank}/signal")
                got = from_json(rank, relayed, "signal")
                if got is not None:
                    got = RankStack(rank, _phase(run, rank), None, got.frames, "signal")
                if got is not None and not got.frames:
                    reasons[rank] = f"not obtained: {relayed.get('why') if isinstance(relayed, dict) else 'none'}"
                    got = None
            if got is not None:
                stacks[rank] = got
        settled = all(r in stacks or (r in pids and r in reasons) for r in others)
        if settled or run.clock() >= until:
            break
        time.sleep(0.1)
    node_of = _node_of(run)
    run.stacks, run.stuck = group_stacks(list(stacks.values()), node_of)
    for i, missing in enumerate(run.missing):
        if missing.rank not in suspects:
            continue
        stack = stacks.get(missing.rank)
        if stack is not None:
            source = "faulthandler, signalled on its host" if stack.via == "signal" else "its own thread"
            update: dict[str, Any] = {"stack": where_text(stack), "stack_source": source}
        else:
            wait = min(ANSWER_S, run.deadline_s)
            reason = reasons.get(missing.rank, f"not obtained: no answer within {wait:g} s and no signal reached it")
            update = {"stack": None, "stack_source": reason}
        run.missing[i] = missing.model_copy(update=update)


def _phase(run: FleetRun, rank: int) -> str | None:
    try:
        last = run.control.read_if(f"phase/{rank}")
    except BenchError:
        return None
    return str(last["phase"]) if isinstance(last, dict) and last.get("phase") else None


def _node_of(run: FleetRun) -> dict[int, str]:
    names = {n.node_rank: n.name for n in run.nodes if n.node_rank is not None}
    out = {}
    for rank, rec in run.checkins.items():
        name = names.get(int(rec["node_rank"]))
        out[rank] = name if name is not None else str(rec["host"])
    return out

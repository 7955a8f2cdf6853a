"""Start the worker processes of a benchmark, collect their rows, and end the run cleanly whatever happens.

``launch(fn, payload, world_size=, cpu=, timeout_s=)`` starts ``world_size`` processes with
torch.multiprocessing (spawn), one per rank, which meet on a free loopback port with gloo on CPU or NCCL on one
GPU each (``torch.cuda.set_device(local_rank)``), run ``fn(ctx, payload)`` and leave the process group.
Nothing listens beyond loopback: rank 0 binds the rendezvous store's socket to 127.0.0.1 itself (torch's
TCPStore would listen on every interface) and hands it over (``master_listen_fd``), and gloo is told to use
``lo`` (GLOO_SOCKET_IFNAME), so its own listening sockets are on 127.0.0.1 too.
Each worker writes its rows, progress lines and its failure to its own pipe
(one per rank: a worker killed mid-write cannot block the others on a shared queue lock).

A run ends early, keeping the rows already reported and marking itself partial, when a worker: raises (the last
line of its traceback reaches the parent), dies (exit code or signal), or outlives ``timeout_s`` (counted from the
start, or inside ``setup_budget(S)`` from when every rank is in the process group, the set-up having S seconds of
its own: `rigcheck verify` runs so, and a busy machine's slow start does not cut its stages short). The rank to
blame is the one that died without a word, else the first to report an error (the others usually fail *because*
a peer went away); at the timeout, the one that hung: a stopped process (state T: SIGSTOP, a debugger), else the
rank whose phase (``ctx.phase``, sent by every rank) is behind the others', named with its pid and that phase
("rank 1 (pid 4242) did not finish within 5 s: last phase 'allreduce 1 KiB', silent for 4.2 s; rank 0 waited at
'allreduce 2 KiB'"). The other workers are then terminated (a stopped one is continued so it can go), and killed
if they do not go. A KeyboardInterrupt in the parent (Ctrl-C; SIGTERM too, as the CLI raises
``errors.Interrupted`` for it) does the same and returns the rows measured so far, ``partial`` and ``error``
"interrupted (SIGINT)"; workers ignore SIGINT themselves so the terminal shows no worker tracebacks, and die
with the parent if it is killed outright (PR_SET_PDEATHSIG).

Inside a job started by torchrun or srun (RANK, WORLD_SIZE and MASTER_ADDR set), ``launch`` runs ``fn``
in this process instead, with ``init_method="env://"``; by convention rank 0 reports rows.

torch is imported lazily (``rigcheck --help`` never loads it).
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import inspect
import os
import shutil
import signal
import socket
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import timedelta
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any, Literal

from rigcheck.bench.env import require_torch
from rigcheck.errors import interrupted_text, signal_of

# After the first failure, how long to wait for the other workers' own reports (to find the root cause).
FAILURE_GRACE_S = 1.0
# After terminate (SIGTERM), how long a worker has to go before it is killed (SIGKILL).
TERMINATE_GRACE_S = 3.0
EXIT_GRACE_S = 20.0  # after every rank said "done": time to tear its process group down and exit
# The process group's own timeout is longer than the run's, so the launcher, which can name the rank
# that hung, always speaks first.
PG_TIMEOUT_MARGIN_S = 30.0
JOB_VARIABLES = ("RANK", "WORLD_SIZE", "MASTER_ADDR")
DistBackend = Literal["gloo", "nccl"]
READY_PHASE = "started"  # the phase a rank sends once it is in the process group


@dataclass
class SetupBudget:
    """A set-up budget for the launches made inside :func:`setup_budget`: the workers' start and the process
    group's init may take up to ``limit_s`` of their own, and ``timeout_s`` counts from when every rank is in the
    group (a busy machine's slow start does not eat the measurement's time). ``used_s``: what set-up took."""

    limit_s: float
    used_s: float = 0.0


_SETUP: ContextVar[SetupBudget | None] = ContextVar("rigcheck_setup_budget", default=None)


@contextlib.contextmanager
def setup_budget(limit_s: float) -> Iterator[SetupBudget]:
    """Give every :func:`launch` in this block a set-up budget of its own (see :class:`SetupBudget`)."""
    budget = SetupBudget(limit_s)
    token = _SETUP.set(budget)
    try:
        yield budget
    finally:
        _SETUP.reset(token)


def setup_text(ranks: list[_Rank], limit_s: float) -> str:
    """One line naming the ranks that were not in the process group when the set-up budget ran out."""
    late = [r for r in ranks if not r.ready and r.exitcode is None] or [r for r in ranks if not r.ready]
    each = "; ".join(f"rank {r.rank} (pid {r.process.pid}) at {r.phase!r}" for r in late)
    return f"the workers did not join the process group within the {_seconds_text(limit_s)} set-up budget: {each}"


def _discard(_: Any) -> None:
    return None


@dataclass(frozen=True)
class WorkerContext:
    """What a worker function knows about its rank, and where its results go."""

    rank: int
    world_size: int
    local_rank: int
    backend: DistBackend
    device: Any  # torch.device: cuda:<local_rank>, or cpu
    on_row: Callable[[dict[str, Any]], None] = field(default=_discard, repr=False, compare=False)
    on_progress: Callable[[str], None] = field(default=_discard, repr=False, compare=False)
    on_phase: Callable[[str], None] = field(default=_discard, repr=False, compare=False)

    def report(self, row: dict[str, Any]) -> None:
        """Send one result row to the parent as soon as it exists: plain data (a row model's ``model_dump()``),
        which the benchmark types again from ``LaunchOutcome.rows``."""
        self.on_row(dict(row))

    def progress(self, message: str) -> None:
        """A progress line (shown on stderr by the CLI)."""
        self.on_progress(message)

    def phase(self, name: str) -> None:
        """Where this rank is now ("allreduce 1 KiB", "step 12"), sent by every rank and shown nowhere: at the
        timeout the launcher names the rank whose phase is behind the others' as the one that hung."""
        self.on_phase(name)


@dataclass
class LaunchOutcome:
    rows: list[dict[str, Any]]  # rows reported (by any rank; by convention rank 0 reports), in order
    partial: bool  # True when a worker failed, hung or the run was interrupted
    error: str | None  # one line naming the rank: "rank 1 exited with code -9 (SIGKILL)"
    wall_s: float
    nccl_log: str = ""  # NCCL_DEBUG=INFO output of every rank, when asked for; else ""


def free_port() -> int:
    """A TCP port on the loopback interface that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def in_launched_job(environ: Mapping[str, str] | None = None) -> bool:
    """True inside a torchrun/srun job: this process is one rank of it already."""
    environ = os.environ if environ is None else environ
    return all(name in environ for name in JOB_VARIABLES)


def one_line(exc: BaseException) -> str:
    """The last line of the exception's traceback ("ValueError: boom"), on one line."""
    text = traceback.format_exception_only(type(exc), exc)[-1]
    return " ".join(text.split())


def exit_text(code: int) -> str:
    """How a worker ended: "exited with code 3", "exited with code -9 (SIGKILL)"."""
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"exited with code {code} ({name})"
    return f"exited with code {code}"


def _ranks_text(ranks: list[int]) -> str:
    if len(ranks) == 1:
        return f"rank {ranks[0]}"
    return "ranks " + ", ".join(str(r) for r in ranks)


def _seconds_text(seconds: float) -> str:
    return f"{seconds:g} s"


def _nccl_debug_env(log_dir: str) -> dict[str, str]:
    return {"NCCL_DEBUG": "INFO", "NCCL_DEBUG_FILE": os.path.join(log_dir, "nccl.%h.%p.log")}


def _read_logs(log_dir: str | None) -> str:
    if log_dir is None:
        return ""
    parts = []
    for path in sorted(Path(log_dir).iterdir()):
        if path.is_file():
            parts.append(path.read_text(errors="replace"))
    return "".join(part if part.endswith("\n") or not part else part + "\n" for part in parts)


# --- the worker side ---------------------------------------------------------------------------------


def _loopback_store(dist: Any, *, rank: int, world_size: int, port: int, timeout_s: float) -> Any:
    """The rendezvous store on 127.0.0.1:``port``. torch's TCPStore server listens on every interface whatever
    host it is given, so rank 0 binds the socket to loopback itself and hands it over."""
    timeout = timedelta(seconds=timeout_s)
    if rank != 0:
        return dist.TCPStore("127.0.0.1", port, world_size, False, timeout)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", port))
        sock.listen(max(128, world_size))
    except OSError:
        sock.close()
        raise
    # the store owns the descriptor from here (detach: Python must not close it too)
    return dist.TCPStore(
        "127.0.0.1", port, world_size, True, timeout, wait_for_workers=False, master_listen_fd=sock.detach()
    )


def _setup_rank(
    *,
    rank: int,
    world_size: int,
    local_rank: int,
    cpu: bool,
    init_method: str,
    pg_timeout_s: float,
    store_port: int | None = None,
) -> tuple[DistBackend, Any]:
    """Join the process group (through a loopback store on ``store_port`` when given, else ``init_method``);
    the backend and this rank's device."""
    torch: Any = require_torch()
    import torch.distributed as dist

    backend: DistBackend = "gloo" if cpu else "nccl"
    if cpu:
        device = torch.device("cpu")
    else:
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
    if not dist.is_initialized():
        options: dict[str, Any] = {}
        if not cpu and "device_id" in inspect.signature(dist.init_process_group).parameters:
            # torch >= 2.3: binds the group to this GPU (no "no device id" warning, no guessing at barriers)
            options["device_id"] = device
        if store_port is not None:
            options["store"] = _loopback_store(
                dist, rank=rank, world_size=world_size, port=store_port, timeout_s=pg_timeout_s
            )
        else:
            options["init_method"] = init_method
        dist.init_process_group(
            backend,
            rank=rank,
            world_size=world_size,
            timeout=timedelta(seconds=pg_timeout_s),
            **options,
        )
    return backend, device


@dataclass(frozen=True)
class _WorkerSpec:
    """What a spawned worker needs (pickled to it)."""

    rank: int
    fn: Callable[[WorkerContext, Any], None]
    payload: Any
    world_size: int
    cpu: bool
    store_port: int  # rank 0 serves the rendezvous store on 127.0.0.1:store_port
    pg_timeout_s: float
    env: dict[str, str]
    parent_pid: int = 0


def _worker_main(spec: _WorkerSpec, conn: Connection) -> None:
    """One spawned rank: report rows, progress, and its end ("done" or "error") through ``conn``."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and ends every worker
    _die_with_parent(spec.parent_pid)
    # Whatever a library prints (NCCL_DEBUG set in the user's shell writes to stdout) goes to stderr: the
    # parent's stdout may be a --json document.
    with contextlib.suppress(OSError):
        os.dup2(2, 1)
    os.environ.update(spec.env)
    try:
        conn.send(("phase", "joining the process group"))
        import torch.distributed as dist

        backend, device = _setup_rank(
            rank=spec.rank,
            world_size=spec.world_size,
            local_rank=spec.rank,
            cpu=spec.cpu,
            init_method="",
            pg_timeout_s=spec.pg_timeout_s,
            store_port=spec.store_port,
        )
        ctx = WorkerContext(
            rank=spec.rank,
            world_size=spec.world_size,
            local_rank=spec.rank,
            backend=backend,
            device=device,
            on_row=lambda row: conn.send(("row", row)),
            on_progress=lambda message: conn.send(("progress", message)),
            on_phase=lambda name: conn.send(("phase", name)),
        )
        ctx.phase(READY_PHASE)
        spec.fn(ctx, spec.payload)
    except Exception as exc:
        # Any failure of the benchmark is the parent's to report: send its type and message, then end
        # this worker with a non-zero code (without a traceback on the user's terminal).
        with contextlib.suppress(OSError):
            conn.send(("error", one_line(exc)))
        raise SystemExit(1) from exc
    # Done before the teardown: the results are complete even if destroying the group hangs or crashes
    # (the parent waits EXIT_GRACE_S for the exit, then ends the process). A parent gone already (killed
    # outright) is no reason for a traceback.
    with contextlib.suppress(OSError):
        conn.send(("done", None))
    conn.close()
    # Free what the benchmark left (a DDP reducer holds the process group) before the group goes:
    # gloo aborts the process ("terminate called without an active exception") otherwise.
    gc.collect()
    if dist.is_initialized():
        dist.destroy_process_group()


PR_SET_PDEATHSIG = 1  # prctl(2)


def _die_with_parent(parent_pid: int) -> None:
    """Linux: the kernel sends this worker SIGKILL when the parent dies, even by SIGKILL (a rank left alone
    would wait in its collective until the process group's timeout)."""
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    if os.getppid() != parent_pid:  # the parent died before the call above
        os._exit(1)


# --- the parent side ---------------------------------------------------------------------------------


@dataclass
class _Rank:
    rank: int
    process: Any  # a SpawnProcess
    conn: Connection | None
    error: str | None = None  # the worker's own report of its failure
    done: bool = False  # it said it finished
    exitcode: int | None = None
    phase: str = "starting"  # the last phase it reached (WorkerContext.phase)
    phases: int = 0  # how many phases it reported: the rank with fewer than the others is behind
    ready: bool = False  # it reached READY_PHASE: it is in the process group
    heard_at: float = field(default_factory=time.monotonic)  # when it last sent anything


@dataclass
class _Monitor:
    ranks: list[_Rank]
    rows: list[dict[str, Any]]
    on_progress: Callable[[str], None] | None
    errors_in_order: list[int] = field(default_factory=list)

    def pump(self, timeout: float) -> None:
        """Read what the workers sent within ``timeout`` seconds, and note who has exited."""
        conns = [r.conn for r in self.ranks if r.conn is not None]
        sentinels = [r.process.sentinel for r in self.ranks if r.exitcode is None]
        if conns or sentinels:
            wait([*conns, *sentinels], timeout)
        for r in self.ranks:
            while r.conn is not None and r.conn.poll():
                try:
                    kind, data = r.conn.recv()
                except (EOFError, OSError):
                    r.conn.close()
                    r.conn = None
                    break
                r.heard_at = time.monotonic()
                self._handle(r, kind, data)
        for r in self.ranks:
            if r.exitcode is None and r.process.exitcode is not None:
                r.exitcode = int(r.process.exitcode)

    def _handle(self, r: _Rank, kind: str, data: Any) -> None:
        if kind == "row":
            self.rows.append(data)
        elif kind == "progress":
            if self.on_progress is not None:
                self.on_progress(str(data))
        elif kind == "error":
            r.error = str(data)
            self.errors_in_order.append(r.rank)
        elif kind == "done":
            r.done = True
        elif kind == "phase":
            r.phase = str(data)
            r.phases += 1
            r.ready = r.ready or r.phase == READY_PHASE

    def failed(self) -> bool:
        """A rank reported an error, or ended badly before saying it was done (a crash in the teardown
        after "done" loses nothing)."""
        return any(r.error is not None or (not r.done and r.exitcode not in (None, 0)) for r in self.ranks)

    def all_exited(self) -> bool:
        return all(r.exitcode is not None for r in self.ranks)

    def all_done(self) -> bool:
        return all(r.done for r in self.ranks)

    def blame(self) -> str:
        """One line naming the rank that most likely caused the failure."""
        silent = [r for r in self.ranks if r.error is None and r.exitcode not in (None, 0)]
        if silent:
            r = silent[0]
            assert r.exitcode is not None
            return f"rank {r.rank} {exit_text(r.exitcode)}"
        first = self.ranks[self.errors_in_order[0]]
        return f"rank {first.rank} failed: {first.error}"


def process_state(pid: int) -> str | None:
    """The state letter of /proc/<pid>/stat ("R", "S", "T" stopped, "t" traced...), None when unreadable."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # the command name (in parentheses) may hold spaces and parentheses: the state follows the last ")"
    fields = stat[stat.rfind(")") + 1 :].split()
    return fields[0] if fields else None


def hung_text(ranks: list[_Rank], timeout_s: float, now: float) -> str:
    """One line naming the rank(s) that hung, with pid and last phase, and who waited for them.

    A stopped process (SIGSTOP, a debugger) is the one; else the ranks whose phase count is behind the
    others' (the others went on to the next phase and wait there, in a collective, for them); else, every
    rank at the same phase, all of them.
    """
    alive = [r for r in ranks if r.exitcode is None]
    stopped = [r for r in alive if process_state(r.process.pid) in ("T", "t")]
    least = min((r.phases for r in alive), default=0)
    behind = [r for r in alive if r.phases == least]
    culprits = stopped or (behind if len(behind) < len(alive) else alive)
    what = "stopped (process state T) at" if stopped else "last phase"

    def state(r: _Rank) -> str:
        return f"{what} {r.phase!r}, silent for {now - r.heard_at:.1f} s"

    within = f"did not finish within {_seconds_text(timeout_s)}"
    if len(culprits) == 1:
        text = f"rank {culprits[0].rank} (pid {culprits[0].process.pid}) {within}: {state(culprits[0])}"
    else:
        each = "; ".join(f"rank {r.rank} (pid {r.process.pid}) {state(r)}" for r in culprits)
        text = f"{_ranks_text([r.rank for r in culprits])} {within}: {each}"
    waiting = [r for r in alive if r not in culprits]
    if waiting:
        text += f"; {_ranks_text([r.rank for r in waiting])} waited at {waiting[0].phase!r}"
    return text


def _stop(ranks: list[_Rank]) -> None:
    """Terminate every worker still running, kill those that do not go, and reap them all."""
    for r in ranks:
        if r.process.is_alive():
            r.process.terminate()
            # a stopped worker acts on SIGTERM only once continued: without this it waits for SIGKILL below
            with contextlib.suppress(OSError):
                os.kill(r.process.pid, signal.SIGCONT)
    deadline = time.monotonic() + TERMINATE_GRACE_S
    for r in ranks:
        r.process.join(max(0.0, deadline - time.monotonic()))
    for r in ranks:
        if r.process.is_alive():
            r.process.kill()
            r.process.join()


@contextlib.contextmanager
def _patched_environ(values: Mapping[str, str]) -> Iterator[None]:
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, old in saved.items():
            if old is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = old


def launch(
    fn: Callable[[WorkerContext, Any], None],
    payload: Any,
    *,
    world_size: int,
    cpu: bool,
    timeout_s: float,
    env: Mapping[str, str] | None = None,
    nccl_debug: bool = False,
    on_progress: Callable[[str], None] | None = None,
) -> LaunchOutcome:
    """Run ``fn(ctx, payload)`` on ``world_size`` ranks (see the module docstring) and collect its rows.

    ``fn`` must be a module-level function and ``payload`` picklable (workers are spawned). ``env`` is set in
    every worker before torch.distributed starts. Inside a torchrun/srun job, ``fn`` runs in this process
    and ``world_size`` is the job's.
    """
    if world_size < 1:
        raise ValueError("world_size must be at least 1")
    if timeout_s <= 0:
        raise ValueError("timeout_s must be positive")
    if in_launched_job():
        return _launch_inline(
            fn, payload, cpu=cpu, timeout_s=timeout_s, env=env, nccl_debug=nccl_debug, on_progress=on_progress
        )
    require_torch()
    import torch.multiprocessing as tmp

    mp = tmp.get_context("spawn")
    worker_env = dict(env or {})
    if cpu and sys.platform.startswith("linux") and "GLOO_SOCKET_IFNAME" not in {**os.environ, **worker_env}:
        worker_env["GLOO_SOCKET_IFNAME"] = "lo"  # one host: gloo over loopback, whatever the hostname resolves to
    log_dir = tempfile.mkdtemp(prefix="rigcheck-nccl-") if nccl_debug else None
    if log_dir is not None:
        worker_env.update(_nccl_debug_env(log_dir))
    store_port = free_port()
    pg_timeout_s = timeout_s + PG_TIMEOUT_MARGIN_S
    ranks: list[_Rank] = []
    monitor = _Monitor(ranks=ranks, rows=[], on_progress=on_progress)
    start = time.monotonic()
    error: str | None = None
    try:
        for rank in range(world_size):
            reader, writer = mp.Pipe(duplex=False)
            process = mp.Process(
                target=_worker_main,
                args=(
                    _WorkerSpec(
                        rank, fn, payload, world_size, cpu, store_port, pg_timeout_s, worker_env, parent_pid=os.getpid()
                    ),
                    writer,
                ),
                name=f"rigcheck-rank{rank}",
            )
            process.start()
            writer.close()  # the worker holds the only write end: its death reads as EOF here
            ranks.append(_Rank(rank=rank, process=process, conn=reader))
        setup = _SETUP.get()
        deadline = start + timeout_s if setup is None else start + setup.limit_s  # set-up's own, until all ready
        ready_at: float | None = None
        failed_at: float | None = None
        done_at: float | None = None
        while True:
            monitor.pump(0.05)
            now = time.monotonic()
            if setup is not None and ready_at is None and all(r.ready for r in ranks):
                ready_at = now  # the measurement's clock starts now
                setup.used_s += ready_at - start
                deadline = ready_at + timeout_s
            if monitor.failed():
                failed_at = now if failed_at is None else failed_at
                if monitor.all_exited() or now - failed_at >= FAILURE_GRACE_S:
                    error = monitor.blame()
                    break
            elif monitor.all_exited():
                break
            elif monitor.all_done():
                # every rank delivered; one stuck in its teardown is ended by _stop below
                done_at = now if done_at is None else done_at
                if now - done_at >= EXIT_GRACE_S:
                    break
            elif now >= deadline:
                if setup is not None and ready_at is None:
                    setup.used_s += now - start
                    error = setup_text(ranks, setup.limit_s)
                else:
                    error = hung_text(ranks, timeout_s, now)
                break
    except KeyboardInterrupt as exc:
        # Ctrl-C or SIGTERM (errors.Interrupted): end the run like a failure, keeping the rows measured so far;
        # the caller prints them and exits with the signal's code.
        error = interrupted_text(signal_of(exc))
        monitor.on_progress = None  # the run is over: what is still in the pipes is kept, not shown
    finally:
        # Reached on success, on failure and on interruption: no process left.
        _stop(ranks)
        for r in ranks:
            if r.conn is not None:
                # rows a worker sent just before it ended
                with contextlib.suppress(EOFError, OSError):
                    while r.conn.poll():
                        kind, data = r.conn.recv()
                        monitor._handle(r, kind, data)
                r.conn.close()
                r.conn = None
            r.process.close()
        nccl_log = _read_logs(log_dir)
        if log_dir is not None:
            shutil.rmtree(log_dir, ignore_errors=True)
    return LaunchOutcome(
        rows=monitor.rows,
        partial=error is not None,
        error=error,
        wall_s=time.monotonic() - start,
        nccl_log=nccl_log,
    )


def _launch_inline(
    fn: Callable[[WorkerContext, Any], None],
    payload: Any,
    *,
    cpu: bool,
    timeout_s: float,
    env: Mapping[str, str] | None,
    nccl_debug: bool,
    on_progress: Callable[[str], None] | None,
) -> LaunchOutcome:
    """This process is one rank of a torchrun/srun job: run ``fn`` here (``env://`` rendezvous)."""
    import torch.distributed as dist

    rank = int(os.environ["RANK"])
    world_size = int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    log_dir = tempfile.mkdtemp(prefix="rigcheck-nccl-") if nccl_debug else None
    values = dict(env or {})
    if log_dir is not None:
        values.update(_nccl_debug_env(log_dir))
    rows: list[dict[str, Any]] = []
    error: str | None = None
    start = time.monotonic()
    created = not dist.is_initialized()
    try:
        with _patched_environ(values):
            try:
                backend, device = _setup_rank(
                    rank=rank,
                    world_size=world_size,
                    local_rank=local_rank,
                    cpu=cpu,
                    init_method="env://",
                    pg_timeout_s=timeout_s + PG_TIMEOUT_MARGIN_S,
                )
                ctx = WorkerContext(
                    rank=rank,
                    world_size=world_size,
                    local_rank=local_rank,
                    backend=backend,
                    device=device,
                    on_row=rows.append,
                    on_progress=on_progress or _discard,
                )
                fn(ctx, payload)
            except Exception as exc:  # noqa: BLE001 - kept as the outcome's error: type and message
                # This rank's failure becomes the outcome's one-line error, as a spawned worker's would.
                error = f"rank {rank} failed: {one_line(exc)}"
            finally:
                if created and dist.is_initialized():
                    dist.destroy_process_group()
    finally:
        nccl_log = _read_logs(log_dir)
        if log_dir is not None:
            shutil.rmtree(log_dir, ignore_errors=True)
    return LaunchOutcome(
        rows=rows, partial=error is not None, error=error, wall_s=time.monotonic() - start, nccl_log=nccl_log
    )

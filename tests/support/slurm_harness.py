"""A real, private, single-host Slurm cluster for the tests: munged, slurmctld and slurmd started in a temporary
directory, listening on loopback, gone again when the module that uses it ends.

What it starts (Debian's ``slurm-wlm`` and ``munge``; nothing of the machine's own Slurm or MUNGE is used):

- **munged** in the foreground with its own generated key (1024 random bytes, mode 0400, owned by the user
  the tests run as), socket, pid, seed and log files. ``--force`` lets it run as root and from a directory
  that is not world-executable (it warns instead of refusing).
- **slurm.conf**: one node named after the short hostname at 127.0.0.1 with the machine's CPUs (at least 2,
  so a two-task step fits), one default partition ``test``, ``auth/munge`` and ``cred/munge`` on that socket
  (``AuthInfo=socket=``), no accounting, ``proctrack/linuxproc`` and ``task/none`` (no cgroups), free ports
  for slurmctld and slurmd, both bound to their own address rather than every interface
  (``CommunicationParameters=NoCtldInAddrAny,NoInAddrAny``), state, spool, logs and pid files in the
  directory, ``ReturnToService=2``, a short ``KillWait`` so a cancelled step goes quickly, and a random
  ``FirstJobId`` (ports derived from job ids, as `rigcheck fleet` derives its store's, differ between sessions).
- **slurmctld** (``-D -c -i``: foreground, no saved state) and **slurmd** (``-D -N <node>``), each with ``-f``.

The fixture waits until ``sinfo`` shows the node ``idle`` (30 s at most; about a second here), yields a
:class:`SlurmCluster` (``env`` for the clients: ``SLURM_CONF``, and the caller's environment without any
``SLURM_*`` it may have inherited from an outer job, nor torchrun's ``RANK``/``MASTER_*``; ``srun(args,
timeout)``), and at the end cancels what is still queued, stops the daemons and kills any process left
carrying the cluster's marker (every daemon and every task gets ``RIGCHECK_SLURM_HARNESS=<dir>`` in its
environment, so a leftover can be found in ``/proc/*/environ``; each ``srun`` also marks its own tasks, for a
test to check that nothing of its step outlived it). Whenever the cluster cannot start, the tests that need it
skip with the reason: a program not installed, a daemon that died (with its log's last error), a node that
never became idle.

Use: ``from tests.support.slurm_harness import SlurmCluster, slurm_cluster`` (the import registers the fixture), then
take ``slurm_cluster: SlurmCluster`` as a test's argument.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

MARKER = "RIGCHECK_SLURM_HARNESS"
STEP_MARKER = "RIGCHECK_SLURM_STEP"
START_TIMEOUT_S = 30.0
PARTITION = "test"
SBIN = ("/usr/sbin", "/sbin", "/usr/local/sbin")
# An AF_UNIX path holds at most 107 bytes; munged's socket must fit.
MAX_SOCKET_PATH = 100


class ClusterUnavailable(Exception):
    """The cluster could not start; the message is the reason the tests skip with."""


def find_program(name: str) -> str | None:
    """``name`` on PATH, or in an sbin directory (daemons live there, and a non-root PATH may lack it)."""
    found = shutil.which(name)
    if found:
        return found
    for directory in SBIN:
        candidate = Path(directory, name)
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def free_port() -> int:
    """A TCP port nothing listens on at this moment (bound to port 0, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def last_line(*paths: Path) -> str:
    """Why a daemon stopped, from its logs (stderr before the log file opens, then the log file): the last line
    saying error or fatal in the first of ``paths`` that has one, else the last line of the last log there is."""
    last = f"(no log at {', '.join(p.name for p in paths)})"
    for path in paths:
        try:
            lines = [line.strip() for line in path.read_text(errors="replace").splitlines() if line.strip()]
        except OSError:
            continue
        errors = [line for line in lines if "error" in line.lower() or "fatal" in line.lower()]
        if errors:
            return errors[-1]
        last = lines[-1] if lines else f"({path.name} is empty)"
    return last


def tail(path: Path, n: int = 20) -> str:
    """A log's last ``n`` lines (for a failing test's message)."""
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-n:])
    except OSError:
        return f"(no log at {path.name})"


def client_environment(base: Mapping[str, str]) -> dict[str, str]:
    """``base`` without anything an outer Slurm job or allocation set (the clients must talk to this cluster),
    nor torchrun's variables (a step's tasks must find their ranks from Slurm alone)."""
    prefixes = ("SLURM_", "SRUN_", "SALLOC_", "SBATCH_", "SQUEUE_", "SINFO_", "SCANCEL_", "TORCHELASTIC_")
    torchrun = {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "MASTER_ADDR", "MASTER_PORT"}
    return {k: v for k, v in base.items() if not k.startswith(prefixes) and k not in torchrun}


def processes_with(variable: str, value: str) -> list[int]:
    """Processes (of those this user may read) whose environment holds ``variable=value``."""
    needle = f"{variable}={value}".encode()
    found: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:  # gone meanwhile, or another user's
            continue
        if needle in environ.split(b"\0"):
            found.append(int(entry.name))
    return sorted(found)


class SrunTimeout(subprocess.TimeoutExpired):
    """srun ran past its timeout; the step was cancelled. ``marker`` finds what may be left of it."""

    def __init__(self, argv: list[str], timeout: float, output: str, stderr: str, marker: str) -> None:
        super().__init__(argv, timeout, output=output, stderr=stderr)
        self.marker = marker


@dataclass(frozen=True)
class SrunResult:
    args: list[str]
    returncode: int
    stdout: str
    stderr: str
    marker: str  # the value of RIGCHECK_SLURM_STEP in this step's tasks
    elapsed_s: float


@dataclass
class SlurmCluster:
    root: Path
    conf: Path
    node: str
    cpus: int
    env: dict[str, str]
    programs: dict[str, str]

    def log(self, name: str) -> Path:
        return self.root / "log" / f"{name}.log"

    def run(self, argv: Sequence[str], timeout: float = 30.0) -> subprocess.CompletedProcess[str]:
        """A Slurm client (``sinfo``, ``squeue``, ...) against this cluster."""
        program = self.programs.get(argv[0], argv[0])
        return subprocess.run(
            [program, *argv[1:]], env=self.env, capture_output=True, text=True, timeout=timeout, check=False
        )

    def node_state(self) -> str:
        """What ``sinfo`` says of the node (``idle``, ``alloc``, ``down*``...), or why it could not say."""
        try:
            done = self.run(["sinfo", "-h", "-N", "-o", "%T"], timeout=10)
        except subprocess.TimeoutExpired:
            return "(sinfo timed out)"
        if done.returncode != 0:
            return f"(sinfo failed: {done.stderr.strip().splitlines()[-1:] or done.returncode})"
        return done.stdout.strip()

    def jobs(self) -> list[str]:
        """``squeue``'s lines (job id, name, state) for every job still known."""
        done = self.run(["squeue", "-h", "-o", "%i %j %T"])
        return [line for line in done.stdout.splitlines() if line.strip()]

    def srun(
        self,
        args: Sequence[str],
        timeout: float = 120.0,
        *,
        extra_env: Mapping[str, str] | None = None,
        cwd: Path | str | None = None,
    ) -> SrunResult:
        """``srun ARGS`` with this cluster's environment; the step is named (and its tasks marked) uniquely.

        Slurm itself ends the step after ``timeout`` (``--time``, rounded up to minutes); past ``timeout``
        the job is cancelled by name, srun is stopped, and :class:`SrunTimeout` is raised.
        """
        marker = uuid.uuid4().hex
        env = {**self.env, **(extra_env or {}), STEP_MARKER: marker}
        minutes = max(1, int(timeout // 60) + 1)
        argv = [self.programs["srun"], f"--job-name=rigcheck-{marker}", f"--time={minutes}", *args]
        started = time.monotonic()
        proc = subprocess.Popen(
            argv, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
        )
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.run(["scancel", f"--name=rigcheck-{marker}"])
            try:
                stdout, stderr = proc.communicate(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                stdout, stderr = proc.communicate()
            raise SrunTimeout(argv, timeout, stdout, stderr, marker) from None
        return SrunResult(list(args), proc.returncode, stdout, stderr, marker, time.monotonic() - started)

    @staticmethod
    def step_processes(step: SrunResult | str) -> list[int]:
        """Processes still running that belong to a step (its tasks and anything they started)."""
        return processes_with(STEP_MARKER, step.marker if isinstance(step, SrunResult) else step)

    def wait_step_gone(self, step: SrunResult | str, timeout: float = 10.0) -> list[int]:
        """Wait for a step's processes to end; those still there after ``timeout`` are returned."""
        deadline = time.monotonic() + timeout
        left = self.step_processes(step)
        while left and time.monotonic() < deadline:
            time.sleep(0.1)
            left = self.step_processes(step)
        return left

    def wait_jobs_gone(self, timeout: float = 15.0) -> list[str]:
        """Wait for the queue to empty (a cancelled job passes through COMPLETING); what remains is returned."""
        deadline = time.monotonic() + timeout
        left = self.jobs()
        while left and time.monotonic() < deadline:
            time.sleep(0.2)
            left = self.jobs()
        return left


def slurm_conf(
    *, root: Path, node: str, cpus: int, user: str, ctld_port: int, slurmd_port: int, munge_socket: Path
) -> str:
    lines = {
        "ClusterName": "rigcheck",
        "SlurmctldHost": f"{node}(127.0.0.1)",
        "SlurmUser": user,
        "SlurmdUser": user,
        "SlurmctldPort": str(ctld_port),
        "SlurmdPort": str(slurmd_port),
        "CommunicationParameters": "NoCtldInAddrAny,NoInAddrAny",
        "AuthType": "auth/munge",
        "CredType": "cred/munge",
        "AuthInfo": f"socket={munge_socket}",
        "StateSaveLocation": str(root / "state"),
        "SlurmdSpoolDir": str(root / "spool"),
        "SlurmctldLogFile": str(root / "log" / "slurmctld.log"),
        "SlurmdLogFile": str(root / "log" / "slurmd.log"),
        "SlurmctldPidFile": str(root / "slurmctld.pid"),
        "SlurmdPidFile": str(root / "slurmd.pid"),
        "ProctrackType": "proctrack/linuxproc",
        "TaskPlugin": "task/none",
        "SelectType": "select/cons_tres",
        "SelectTypeParameters": "CR_CPU",
        "SwitchType": "switch/none",
        "MpiDefault": "none",
        "JobAcctGatherType": "jobacct_gather/none",
        "JobCompType": "jobcomp/none",
        "AccountingStorageType": "accounting_storage/none",
        "MailProg": shutil.which("true") or "/bin/true",
        "ReturnToService": "2",
        # Job ids (and so ports derived from them, as `rigcheck fleet` derives its store's) differ between sessions.
        "FirstJobId": str(random.randint(10_000, 1_000_000)),
        "KillWait": "2",
        # The node's CPUs as written here, not as slurmd counts them (it may see sockets and cores differently).
        "SlurmdParameters": "config_overrides",
    }
    text = "".join(f"{k}={v}\n" for k, v in lines.items())
    text += f"NodeName={node} NodeAddr=127.0.0.1 NodeHostname={node} CPUs={cpus} State=UNKNOWN\n"
    text += f"PartitionName={PARTITION} Nodes={node} Default=YES MaxTime=INFINITE State=UP\n"
    return text


class _Daemons:
    """The processes started, stopped in reverse order."""

    def __init__(self) -> None:
        self.procs: list[tuple[str, subprocess.Popen[bytes]]] = []

    def start(self, name: str, argv: list[str], env: Mapping[str, str], out: Path) -> subprocess.Popen[bytes]:
        with out.open("wb") as sink:
            proc = subprocess.Popen(
                argv,
                env=dict(env),
                stdin=subprocess.DEVNULL,
                stdout=sink,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.procs.append((name, proc))
        return proc

    def running(self, name: str) -> bool:
        return any(n == name and proc.poll() is None for n, proc in self.procs)

    def stop(self) -> None:
        for _, proc in reversed(self.procs):
            if proc.poll() is None:
                proc.terminate()
        deadline = time.monotonic() + 10
        for _, proc in reversed(self.procs):
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            # slurmctld forks slurmscriptd into its session: make sure nothing of that session stays.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)


def _wait(
    predicate: Callable[[], bool],
    timeout: float,
    what: str,
    died: Sequence[tuple[str, subprocess.Popen[bytes], tuple[Path, ...]]],
) -> None:
    """Poll ``predicate`` until true; a watched daemon that exits meanwhile, or the timeout, ends the wait."""
    deadline = time.monotonic() + timeout
    while True:
        for name, proc, log in died:
            if proc.poll() is not None:
                raise ClusterUnavailable(f"{name} did not start (exit {proc.returncode}): {last_line(*log)}")
        if predicate():
            return
        if time.monotonic() > deadline:
            raise ClusterUnavailable(f"{what} within {timeout:.0f} s")
        time.sleep(0.1)


def _stepds(root: Path) -> list[int]:
    """This cluster's slurmstepd processes (they carry the cluster's marker from slurmd's environment)."""
    found = []
    for pid in processes_with(MARKER, str(root)):
        with contextlib.suppress(OSError):
            if Path(f"/proc/{pid}/comm").read_text().strip() == "slurmstepd":
                found.append(pid)
    return found


def _root_dir(base: Path) -> tuple[Path, bool]:
    """A directory for the cluster: under ``base`` when munged's socket path fits, else a fresh one in /tmp."""
    if len(str(base / "munge.socket")) <= MAX_SOCKET_PATH:
        return base, False
    return Path(tempfile.mkdtemp(prefix="rigslurm-", dir="/tmp")), True


@contextlib.contextmanager
def start_cluster(base: Path) -> Iterator[SlurmCluster]:
    """Start the cluster in ``base`` (raises :class:`ClusterUnavailable`), yield it, then tear it all down."""
    programs: dict[str, str] = {}
    for name in ("munged", "slurmctld", "slurmd", "srun", "sinfo", "squeue", "scancel"):
        found = find_program(name)
        if found is None:
            package = "munge" if name == "munged" else "slurm-wlm"
            raise ClusterUnavailable(f"{name} not installed (Debian: apt-get install {package})")
        programs[name] = found
    root, owned = _root_dir(base)
    root.chmod(0o700)
    for sub in ("state", "spool", "log"):
        (root / sub).mkdir(exist_ok=True)
    node = socket.gethostname().split(".")[0]
    cpus = max(os.cpu_count() or 1, 2)
    key = root / "munge.key"
    fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o400)
    with os.fdopen(fd, "wb") as f:
        f.write(os.urandom(1024))
    munge_socket = root / "munge.socket"
    conf = root / "slurm.conf"
    conf.write_text(
        slurm_conf(
            root=root,
            node=node,
            cpus=cpus,
            user=getpass.getuser(),
            ctld_port=free_port(),
            slurmd_port=free_port(),
            munge_socket=munge_socket,
        )
    )
    daemon_env = {**client_environment(os.environ), "SLURM_CONF": str(conf), MARKER: str(root)}
    cluster = SlurmCluster(root=root, conf=conf, node=node, cpus=cpus, env=dict(daemon_env), programs=programs)
    daemons = _Daemons()
    try:
        munged_log = root / "log" / "munged.log"
        munged = daemons.start(
            "munged",
            [
                programs["munged"],
                "--foreground",
                "--force",
                f"--socket={munge_socket}",
                f"--key-file={key}",
                f"--pid-file={root / 'munged.pid'}",
                f"--seed-file={root / 'munged.seed'}",
                f"--log-file={munged_log}",
            ],
            daemon_env,
            root / "log" / "munged.out",
        )
        munged_logs = (root / "log" / "munged.out", munged_log)
        _wait(munge_socket.exists, 10, "munged made no socket", [("munged", munged, munged_logs)])
        ctld = daemons.start(
            "slurmctld",
            [programs["slurmctld"], "-D", "-c", "-i", "-f", str(conf)],
            daemon_env,
            root / "log" / "slurmctld.out",
        )
        slurmd = daemons.start(
            "slurmd", [programs["slurmd"], "-D", "-N", node, "-f", str(conf)], daemon_env, root / "log" / "slurmd.out"
        )
        watched = [
            ("munged", munged, munged_logs),
            ("slurmctld", ctld, (root / "log" / "slurmctld.out", cluster.log("slurmctld"))),
            ("slurmd", slurmd, (root / "log" / "slurmd.out", cluster.log("slurmd"))),
        ]
        try:
            _wait(lambda: cluster.node_state() == "idle", START_TIMEOUT_S, f"node {node} not idle", watched)
        except ClusterUnavailable as e:
            raise ClusterUnavailable(
                f"{e} (sinfo: {cluster.node_state()}; slurmctld: {last_line(cluster.log('slurmctld'))};"
                f" slurmd: {last_line(cluster.log('slurmd'))})"
            ) from None
        yield cluster
    finally:
        if daemons.running("slurmctld"):
            with contextlib.suppress(subprocess.TimeoutExpired, OSError):
                cluster.run(["scancel", f"--partition={PARTITION}"], timeout=10)
                cluster.wait_jobs_gone(10)
        # Let a slurmstepd still finishing a step end on its own (one still there after that is killed below).
        deadline = time.monotonic() + 5
        while _stepds(root) and time.monotonic() < deadline:
            time.sleep(0.1)
        daemons.stop()
        for pid in processes_with(MARKER, str(root)):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        if owned:
            shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def slurm_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmCluster]:
    """A running single-host Slurm cluster for the module that uses it (its daemons are this process's children:
    they must be gone before other modules check that nothing outlived their tests); skips with the reason when
    one cannot start."""
    try:
        with start_cluster(tmp_path_factory.mktemp("slurm")) as cluster:
            yield cluster
    except ClusterUnavailable as e:
        pytest.skip(f"no Slurm cluster: {e}")

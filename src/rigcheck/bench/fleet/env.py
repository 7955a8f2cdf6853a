"""Where this process stands in a `rigcheck fleet` job, read from the launcher's environment variables.

Three launchers, tried in this order:

- **torchrun** (``RANK`` set): ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``LOCAL_WORLD_SIZE``, ``GROUP_RANK``
  (the node's rank; derived as ``RANK // LOCAL_WORLD_SIZE`` where a launcher leaves it out),
  ``MASTER_ADDR``, ``MASTER_PORT``. When torchrun's agent already serves a store at that address
  (``TORCHELASTIC_USE_AGENT_STORE=True``, as torchrun's c10d rendezvous does), every rank joins it as a client.
- **Slurm** (``SLURM_PROCID`` set, e.g. under ``srun``): ``SLURM_PROCID``, ``SLURM_NTASKS``, ``SLURM_LOCALID``,
  ``SLURM_NODEID``; the tasks on this node from ``SLURM_STEP_TASKS_PER_NODE``, ``SLURM_TASKS_PER_NODE`` ("2(x3),1":
  the step's own layout first) or ``SLURM_NTASKS_PER_NODE``; the store's host from ``MASTER_ADDR``, else the first
  host of ``SLURM_STEP_NODELIST`` / ``SLURM_JOB_NODELIST`` (Slurm's hostlist syntax, :func:`expand_hostlist`);
  its port from ``MASTER_PORT``, else ``SLURM_PORT_BASE + SLURM_JOB_ID mod SLURM_PORT_SPAN`` (20000-29999:
  below Linux's ephemeral range, 32768 and up, so an outgoing connection cannot be holding it; set
  MASTER_PORT where two jobs whose ids differ by a multiple of 10000 share their first node).
- **single**: neither: one process, world size 1, its store on 127.0.0.1 at a port the system picks (0).

Pure functions of a mapping (``os.environ`` in the CLI): a bad or inconsistent value is a UsageError of one
line naming the variable.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Literal

from rigcheck.errors import UsageError

Launcher = Literal["torchrun", "slurm", "single"]

SLURM_PORT_BASE: Final = 20000
SLURM_PORT_SPAN: Final = 10000
LOOPBACK: Final = "127.0.0.1"
MAX_PORT: Final = 65535


@dataclass(frozen=True)
class FleetEnv:
    """This process in the job: its ranks, its node, and where the job's c10d store is."""

    rank: int
    world_size: int
    local_rank: int
    local_world_size: int
    node_rank: int
    master_addr: str
    master_port: int  # 0: any free port (single process only)
    launcher: Launcher
    agent_store: bool = False  # torchrun's agent serves the store already: rank 0 joins it, hosts none
    attempt: int = 0  # torchrun's restart count: keys of an earlier attempt in the agent's store are not read


# --- Slurm's hostlist and task-count syntax ------------------------------------------------------------------

_RANGE = re.compile(r"^(\d+)(?:-(\d+))?$")


def _split_top(text: str) -> list[str]:
    """Split at the commas outside brackets: "a[1,2],b" -> ["a[1,2]", "b"]."""
    parts: list[str] = []
    depth = 0
    current: list[str] = []
    for char in text:
        if char == "[":
            depth += 1
            if depth > 1:
                raise ValueError("nested '['")
        elif char == "]":
            depth -= 1
            if depth < 0:
                raise ValueError("']' without '['")
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    if depth != 0:
        raise ValueError("'[' without ']'")
    parts.append("".join(current))
    return parts


def _expand_ranges(body: str) -> list[str]:
    """The inside of brackets: "01-03,7" -> ["01", "02", "03", "7"]. A zero-padded lower bound sets the width
    of every number of its range, as Slurm writes them."""
    out: list[str] = []
    for item in body.split(","):
        match = _RANGE.match(item.strip())
        if match is None:
            raise ValueError(f"bad range {item!r}")
        low_text, high_text = match.group(1), match.group(2)
        low = int(low_text)
        high = low if high_text is None else int(high_text)
        if high < low:
            raise ValueError(f"range {item!r} runs backwards")
        width = len(low_text) if low_text.startswith("0") else 0
        out.extend(str(n).zfill(width) for n in range(low, high + 1))
    return out


def _expand_one(pattern: str) -> list[str]:
    """One host pattern, every bracket expanded in turn: "r[1-2]n[1-2]" -> r1n1, r1n2, r2n1, r2n2."""
    start = pattern.find("[")
    if start < 0:
        if "]" in pattern:
            raise ValueError("']' without '['")
        return [pattern]
    end = pattern.find("]", start)
    if end < 0:
        raise ValueError("'[' without ']'")
    head, body, tail = pattern[:start], pattern[start + 1 : end], pattern[end + 1 :]
    return [head + number + rest for number in _expand_ranges(body) for rest in _expand_one(tail)]


def expand_hostlist(text: str) -> list[str]:
    """Slurm's compressed host list, expanded in order: "gpu[01-03,07],cpu5" -> gpu01 gpu02 gpu03 gpu07 cpu5.

    Raises ValueError on text that is not a host list (empty, an unbalanced bracket, a bad range).
    """
    if not text.strip():
        raise ValueError("empty host list")
    hosts: list[str] = []
    for part in _split_top(text.strip()):
        pattern = part.strip()
        if not pattern:
            raise ValueError("empty host name")
        hosts.extend(_expand_one(pattern))
    return hosts


_TASKS = re.compile(r"^(\d+)(?:\(x(\d+)\))?$")


def expand_tasks_per_node(text: str) -> list[int]:
    """Slurm's tasks per node, one count per node: "2(x3),1" -> [2, 2, 2, 1]. Raises ValueError otherwise."""
    counts: list[int] = []
    for item in text.split(","):
        match = _TASKS.match(item.strip())
        if match is None:
            raise ValueError(f"bad item {item!r}")
        counts.extend([int(match.group(1))] * int(match.group(2) or 1))
    return counts


# --- reading the variables -------------------------------------------------------------------------------


def _int(environ: Mapping[str, str], name: str, *, minimum: int = 0) -> int:
    if name not in environ:
        raise UsageError(f"{name} is not set (it comes with the launcher's other variables)")
    text = environ[name].strip()
    try:
        value = int(text)
    except ValueError:
        raise UsageError(f"{name}={environ[name]!r} is not a whole number") from None
    if value < minimum:
        raise UsageError(f"{name}={value} must be at least {minimum}")
    return value


def _port(environ: Mapping[str, str], name: str) -> int:
    value = _int(environ, name, minimum=1)
    if value > MAX_PORT:
        raise UsageError(f"{name}={value} is not a TCP port (1-{MAX_PORT})")
    return value


def _address(environ: Mapping[str, str], name: str) -> str:
    value = environ.get(name, "").strip()
    if not value:
        raise UsageError(f"{name} is not set (the host of rank 0, where the job's store listens)")
    return value


def _check(env: FleetEnv, names: tuple[str, str, str, str, str]) -> FleetEnv:
    """Ranks that contradict one another: one line naming the variable at fault."""
    rank, world, local, local_world, node = names
    if env.rank >= env.world_size:
        raise UsageError(f"{rank}={env.rank} is not below {world}={env.world_size}")
    if env.local_rank >= env.local_world_size:
        raise UsageError(f"{local}={env.local_rank} is not below {local_world}={env.local_world_size}")
    if env.local_world_size > env.world_size:
        raise UsageError(f"{local_world}={env.local_world_size} is more than {world}={env.world_size}")
    if env.node_rank >= env.world_size:
        raise UsageError(f"{node}={env.node_rank} is not below {world}={env.world_size}")
    return env


def _torchrun(environ: Mapping[str, str]) -> FleetEnv:
    local_world = _int(environ, "LOCAL_WORLD_SIZE", minimum=1)
    rank = _int(environ, "RANK")
    node = _int(environ, "GROUP_RANK") if "GROUP_RANK" in environ else rank // local_world
    env = FleetEnv(
        rank=rank,
        world_size=_int(environ, "WORLD_SIZE", minimum=1),
        local_rank=_int(environ, "LOCAL_RANK"),
        local_world_size=local_world,
        node_rank=node,
        master_addr=_address(environ, "MASTER_ADDR"),
        master_port=_port(environ, "MASTER_PORT"),
        launcher="torchrun",
        agent_store=environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True",
        attempt=_int(environ, "TORCHELASTIC_RESTART_COUNT") if "TORCHELASTIC_RESTART_COUNT" in environ else 0,
    )
    return _check(env, ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK"))


def _slurm_local_world(environ: Mapping[str, str], node: int) -> tuple[int, str]:
    """The tasks on node ``node``, and the variable it came from."""
    for name in ("SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"):
        if name in environ:
            try:
                counts = expand_tasks_per_node(environ[name])
            except ValueError as exc:
                raise UsageError(f"{name}={environ[name]!r} is not Slurm's tasks-per-node list: {exc}") from None
            if node >= len(counts):
                raise UsageError(f"SLURM_NODEID={node} has no entry in {name}={environ[name]!r}")
            if counts[node] < 1:
                raise UsageError(f"{name}={environ[name]!r} gives node {node} no task")
            return counts[node], name
    return _int(environ, "SLURM_NTASKS_PER_NODE", minimum=1), "SLURM_NTASKS_PER_NODE"


def _slurm_master(environ: Mapping[str, str]) -> str:
    if environ.get("MASTER_ADDR", "").strip():
        return environ["MASTER_ADDR"].strip()
    for name in ("SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST"):
        if environ.get(name, "").strip():
            try:
                return expand_hostlist(environ[name])[0]
            except ValueError as exc:
                raise UsageError(f"{name}={environ[name]!r} is not a Slurm host list: {exc}") from None
    raise UsageError("SLURM_STEP_NODELIST and SLURM_JOB_NODELIST are not set: no host for the store (set MASTER_ADDR)")


def slurm_port(job_id: int) -> int:
    """The store's port derived from the job id (see the module docstring)."""
    return SLURM_PORT_BASE + job_id % SLURM_PORT_SPAN


def _slurm(environ: Mapping[str, str]) -> FleetEnv:
    node = _int(environ, "SLURM_NODEID")
    local_world, local_world_name = _slurm_local_world(environ, node)
    port = _port(environ, "MASTER_PORT") if "MASTER_PORT" in environ else slurm_port(_int(environ, "SLURM_JOB_ID"))
    env = FleetEnv(
        rank=_int(environ, "SLURM_PROCID"),
        world_size=_int(environ, "SLURM_NTASKS", minimum=1),
        local_rank=_int(environ, "SLURM_LOCALID"),
        local_world_size=local_world,
        node_rank=node,
        master_addr=_slurm_master(environ),
        master_port=port,
        launcher="slurm",
    )
    return _check(env, ("SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", local_world_name, "SLURM_NODEID"))


def parse_fleet_env(environ: Mapping[str, str]) -> FleetEnv:
    """This process's place in the job (see the module docstring); UsageError naming a bad variable."""
    if "RANK" in environ:
        return _torchrun(environ)
    if "SLURM_PROCID" in environ:
        return _slurm(environ)
    return FleetEnv(
        rank=0,
        world_size=1,
        local_rank=0,
        local_world_size=1,
        node_rank=0,
        master_addr=LOOPBACK,
        master_port=0,
        launcher="single",
    )

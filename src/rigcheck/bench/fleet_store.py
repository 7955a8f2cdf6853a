"""The control plane of `rigcheck fleet`: the job's c10d TCPStore, read by polling so that no wait can hang.

Every rank reaches rank 0 through the store, never through a collective: a collective waits for every rank,
so one rank gone quiet would hang it, while polling a key (``check``) returns at once whether or not the key
is there, and the caller gives up at its deadline and names who did not write. Values are JSON.

Where the store is: torchrun's agent serves one at MASTER_ADDR:MASTER_PORT already (every rank joins it as a
client); under Slurm, rank 0 serves it there (on every interface: the other nodes must reach it); a single
process serves it on 127.0.0.1 only, at a port the system picks. Keys live under ``rigcheck.fleet/<attempt>/``
so they neither meet torchrun's own keys nor an earlier attempt's after a restart.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any

from rigcheck.bench.env import require_torch
from rigcheck.bench.fleet_env import LOOPBACK, FleetEnv
from rigcheck.errors import BenchError

POLL_S = 0.05  # how often a waiting rank looks at the store: short next to any phase, cheap for the store


def _loopback_server(dist: Any, timeout: timedelta) -> Any:
    """A store served on 127.0.0.1 at a free port: torch's TCPStore server listens on every interface whatever
    host it is given, so the socket is bound here and handed over."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind((LOOPBACK, 0))
        sock.listen(16)
        port = int(sock.getsockname()[1])
    except OSError:
        sock.close()
        raise
    return dist.TCPStore(LOOPBACK, port, 1, True, timeout, wait_for_workers=False, master_listen_fd=sock.detach())


def open_store(env: FleetEnv, timeout_s: float) -> Any:
    """The job's store, as this rank reaches it (see the module docstring); BenchError when it cannot be served
    or reached within ``timeout_s``."""
    require_torch()
    import torch.distributed

    dist: Any = torch.distributed  # TCPStore is not in the stubs' exports
    timeout = timedelta(seconds=timeout_s)
    where = f"{env.master_addr}:{env.master_port}"
    try:
        if env.master_port == 0:
            return _loopback_server(dist, timeout)
        if env.agent_store or env.rank != 0:
            return dist.TCPStore(env.master_addr, env.master_port, None, False, timeout)
        return dist.TCPStore(
            env.master_addr, env.master_port, env.world_size, True, timeout, wait_for_workers=False, multi_tenant=True
        )
    except (RuntimeError, OSError) as exc:  # DistNetworkError / DistStoreError are RuntimeErrors
        verb = "serve" if env.rank == 0 and not env.agent_store else "reach"
        raise BenchError(f"rank {env.rank} could not {verb} the job's store at {where}: {_line(exc)}") from None


def _line(exc: BaseException) -> str:
    """The first line of an error (torch's store errors append a C++ traceback)."""
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def prefixed(store: Any, prefix: str) -> Any:
    """``store`` seen under ``prefix``: keys written through it do not meet anyone else's."""
    import torch.distributed

    dist: Any = torch.distributed  # PrefixStore is not in the stubs' exports
    return dist.PrefixStore(prefix, store)


class Control:
    """JSON keys in the store, and waits on them that end at a deadline instead of hanging."""

    def __init__(self, store: Any, *, clock: Callable[[], float] = time.monotonic, poll_s: float = POLL_S) -> None:
        self.store = store
        self.clock = clock
        self.poll_s = poll_s

    def _do(self, op: str, *args: Any) -> Any:
        """One store operation; a store gone (its host ended: rank 0, or torchrun's agent) is a BenchError."""
        try:
            return getattr(self.store, op)(*args)
        except RuntimeError as exc:  # DistNetworkError, DistStoreError: the connection, not a bug of ours
            raise BenchError(f"lost the job's store (its host, rank 0 or the launcher, ended?): {_line(exc)}") from None

    def put(self, key: str, value: Any) -> None:
        self._do("set", key, json.dumps(value))

    def read(self, key: str) -> Any:
        """A key known to be there (``has`` said so): ``get`` returns at once."""
        return json.loads(bytes(self._do("get", key)).decode())

    def has(self, key: str) -> bool:
        return bool(self._do("check", [key]))

    def bump(self, key: str) -> None:
        self._do("add", key, 1)

    def count(self, key: str) -> int:
        return int(self._do("add", key, 0))

    def read_if(self, key: str) -> Any | None:
        """The key's value, or None when it is not there (yet)."""
        return self.read(key) if self.has(key) else None

    def await_count(self, key: str, target: int, until: float) -> bool:
        """Whether the counter ``key`` reached ``target`` by the clock's ``until``."""
        while True:
            if self.count(key) >= target:
                return True
            if self.clock() >= until:
                return False
            time.sleep(self.poll_s)

    def await_key(self, key: str, until: float) -> Any | None:
        """The key's value once written; None when ``until`` passes first."""
        while True:
            if self.has(key):
                return self.read(key)
            if self.clock() >= until:
                return None
            time.sleep(self.poll_s)

    def absent(self, keys: Sequence[str]) -> list[str]:
        """The keys not written (yet)."""
        return [key for key in keys if not self.has(key)]

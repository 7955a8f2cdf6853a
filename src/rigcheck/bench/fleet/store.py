"""The control plane of `rigcheck fleet`: the job's c10d TCPStore, read by polling so that no wait can hang, every
message sealed (rigcheck.bench.fleet.auth) and every call to the store bounded.

Every rank reaches rank 0 through the store, never through a collective: a collective waits for every rank,
so one rank gone quiet would hang it, while polling a key (``check``) returns at once whether or not the key
is there, and the caller gives up at its deadline and names who did not write. Values are sealed JSON
envelopes; what does not open (a stranger's write, garbage, a replay) is dropped and counted
(``Control.rejections``), and the key reads as not written.

No call into the store can block past a deadline: torch's TCPStore client waits in C++ without a bound of its
own when the port accepts but never answers (a wrong MASTER_PORT: 147 s measured with a 5 s timeout), and no
signal handler runs meanwhile. So every store call (the connection, each read and write, gloo's set-up, which
reads the store) runs on one daemon thread (:class:`Bounded`) while the rank waits for it with a deadline, in
Python, where SIGINT/SIGTERM still land. A call past its deadline is a BenchError; the store is then taken as
lost (the thread is still stuck in it) and every later call fails at once.

Where the store is: torchrun's agent serves one at MASTER_ADDR:MASTER_PORT already (every rank joins it as a
client); under Slurm, rank 0 serves it there, listening on MASTER_ADDR's address only (the other nodes reach
it there; torch's own server would listen on every interface, so the socket is bound here and handed over
with ``master_listen_fd``); a single process serves it on 127.0.0.1 only, at a port the system picks. Keys
live under ``rigcheck.fleet/<attempt>/`` so they neither meet torchrun's own keys nor an earlier attempt's
after a restart.
"""

from __future__ import annotations

import hashlib
import queue
import socket
import threading
import time
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any, Final

from rigcheck.bench.env import require_torch
from rigcheck.bench.fleet.auth import Rejected, Sealer
from rigcheck.bench.fleet.env import LOOPBACK, FleetEnv
from rigcheck.errors import BenchError

POLL_S: Final = 0.05  # how often a waiting rank looks at the store: short next to any phase, cheap for the store
RESCAN_S: Final = 1.0  # keys awaited are read again at least this often, whatever their counter says
LISTEN_BACKLOG: Final = 128


class Bounded:
    """Calls that may block in C++, run on one daemon thread and waited for with a deadline (module docstring)."""

    def __init__(self, limit_s: float) -> None:
        self.limit_s = limit_s
        self.stuck: str | None = None  # the call that overran: the thread is still in it
        self._calls: queue.SimpleQueue[tuple[Callable[[], Any], list[Any], threading.Event]] = queue.SimpleQueue()
        threading.Thread(target=self._serve, name="rigcheck-fleet-store", daemon=True).start()

    def _serve(self) -> None:
        while True:
            fn, box, done = self._calls.get()
            try:
                box.append((True, fn()))
            except BaseException as exc:  # noqa: BLE001 - handed to the waiting caller, which raises it
                box.append((False, exc))
            done.set()

    def call(self, fn: Callable[[], Any], what: str, limit_s: float | None = None) -> Any:
        """``fn()``'s result or exception; BenchError when it has not returned within ``limit_s``."""
        if self.stuck is not None:
            raise BenchError(f"the job's store stopped answering ({self.stuck}); {what} was not tried")
        limit = self.limit_s if limit_s is None else limit_s
        box: list[Any] = []
        done = threading.Event()
        self._calls.put((fn, box, done))
        if not done.wait(limit):  # a signal lands here: its handler's exception propagates
            self.stuck = what
            raise BenchError(f"the job's store did not answer within {limit:g} s ({what})")
        ok, value = box[0]
        if not ok:
            raise value
        return value


def _line(exc: BaseException) -> str:
    """The first line of an error (torch's store errors append a C++ traceback)."""
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def listen_socket(host: str, port: int) -> socket.socket:
    """A socket listening on ``host``'s own address (not every interface) at ``port`` (0: any free one)."""
    family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as torch's own server: a restart may rebind
        sock.bind(address)
        sock.listen(LISTEN_BACKLOG)
    except OSError:
        sock.close()
        raise
    return sock


def open_store(env: FleetEnv, timeout_s: float, bounded: Bounded) -> Any:
    """The job's store, as this rank reaches it (see the module docstring); BenchError when it cannot be served
    or reached within ``timeout_s``."""
    require_torch()
    import torch.distributed

    dist: Any = torch.distributed  # TCPStore is not in the stubs' exports
    timeout = timedelta(seconds=timeout_s)
    where = f"{env.master_addr}:{env.master_port}"
    serve = env.master_port == 0 or (env.rank == 0 and not env.agent_store)
    verb = "serve" if serve else "reach"
    try:
        if not serve:
            return bounded.call(
                lambda: dist.TCPStore(env.master_addr, env.master_port, None, False, timeout),
                f"connecting to {where}",
                timeout_s + 1.0,  # torch's own timeout first, where it keeps it
            )
        host = LOOPBACK if env.master_port == 0 else env.master_addr
        sock = bounded.call(lambda: listen_socket(host, env.master_port), f"resolving {host}")  # DNS may hang
        port = int(sock.getsockname()[1])
        fd = sock.detach()
        return bounded.call(
            lambda: dist.TCPStore(
                host, port, env.world_size, True, timeout, wait_for_workers=False, master_listen_fd=fd
            ),
            f"serving at {where}",
        )
    except (RuntimeError, OSError) as exc:  # DistNetworkError / DistStoreError are RuntimeErrors
        raise BenchError(f"rank {env.rank} could not {verb} the job's store at {where}: {_line(exc)}") from None
    except BenchError as exc:
        raise BenchError(f"rank {env.rank} could not {verb} the job's store at {where}: {exc}") from None


def prefixed(store: Any, prefix: str) -> Any:
    """``store`` seen under ``prefix``: keys written through it do not meet anyone else's."""
    import torch.distributed

    dist: Any = torch.distributed  # PrefixStore is not in the stubs' exports
    return dist.PrefixStore(prefix, store)


class Control:
    """Sealed JSON keys in the store, and waits on them that end at a deadline instead of hanging."""

    def __init__(
        self,
        store: Any,
        *,
        sealer: Sealer,
        bounded: Bounded,
        clock: Callable[[], float] = time.monotonic,
        poll_s: float = POLL_S,
    ) -> None:
        self.store = store
        self.sealer = sealer
        self.bounded = bounded
        self.clock = clock
        self.poll_s = poll_s
        self._rejected: dict[tuple[str, str], str] = {}  # (key, digest of what was there) -> why it was dropped

    def _do(self, op: str, *args: Any) -> Any:
        """One store operation, bounded; a store gone (its host ended: rank 0, or torchrun's agent) is a
        BenchError."""
        try:
            return self.bounded.call(lambda: getattr(self.store, op)(*args), f"{op} {args[0]}")
        except RuntimeError as exc:  # DistNetworkError, DistStoreError: the connection, not a bug of ours
            raise BenchError(f"lost the job's store (its host, rank 0 or the launcher, ended?): {_line(exc)}") from None

    def put(self, key: str, value: Any) -> None:
        self._do("set", key, self.sealer.seal(key, value))

    def put_raw(self, key: str, text: str) -> None:
        self._do("set", key, text)

    def get_raw(self, key: str) -> bytes | None:
        return bytes(self._do("get", key)) if self.has(key) else None

    def has(self, key: str) -> bool:
        return bool(self._do("check", [key]))

    def bump(self, key: str) -> None:
        self._do("add", key, 1)

    def count(self, key: str) -> int:
        return int(self._do("add", key, 0))

    def reject(self, key: str, raw: bytes, why: str) -> None:
        """Count what was dropped once, however often the same bytes are read again."""
        self._rejected.setdefault((key, hashlib.sha256(raw).hexdigest()), why)

    def rejections(self) -> list[tuple[str, str]]:
        """Every message dropped so far: (key, why), in the order they were met."""
        return [(key, why) for (key, _), why in self._rejected.items()]

    def _read(self, key: str) -> tuple[bool, Any]:
        """(True, the value) when the key holds a message that opens; (False, None) when it holds none (yet) or
        what it holds does not open (counted)."""
        raw = self.get_raw(key)
        if raw is None:
            return False, None
        try:
            return True, self.sealer.open_sealed(key, raw)
        except Rejected as why:
            self.reject(key, raw, str(why))
            return False, None

    def read_if(self, key: str) -> Any | None:
        """The key's value, or None when it is not there (yet) or what is there does not open (counted)."""
        return self._read(key)[1]

    def await_key(self, key: str, until: float) -> Any | None:
        """The key's value once written (and sealed); None when ``until`` passes first."""
        while True:
            came, value = self._read(key)
            if came:
                return value
            if self.clock() >= until:
                return None
            time.sleep(self.poll_s)

    def await_keys(self, keys: Sequence[str], until: float, hint: str | None = None) -> dict[str, Any]:
        """Each key's value once written, as far as ``until``: those that came. ``hint``: a counter the writers
        bump after writing; the keys are read again when it moves (or every RESCAN_S), not at every poll."""
        found: dict[str, Any] = {}
        seen = -1
        scanned = float("-inf")
        while True:
            now = self.clock()
            mark = self.count(hint) if hint is not None else seen + 1
            if mark != seen or now - scanned >= RESCAN_S:
                seen, scanned = mark, now
                for key in keys:
                    if key not in found:
                        came, value = self._read(key)
                        if came:
                            found[key] = value
            if len(found) == len(keys) or self.clock() >= until:
                return found
            time.sleep(self.poll_s)

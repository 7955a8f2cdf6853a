"""Who may speak on the control plane of `rigcheck fleet`: every message a rank accepts through the job's store is
sealed with an HMAC-SHA256 under a per-job key, and what does not open is dropped and counted, never trusted.

The c10d store has no authentication of its own: whoever reaches its port may set any key. So each value
rigcheck writes is an envelope (``seal``): the key name, the job's id, the sender's rank, a counter, the value,
and the HMAC-SHA256 of all of them. ``open_sealed`` refuses, as :class:`Rejected` (one line, the reason): what is
not JSON or not an envelope, a MAC that does not match (a stranger's write, a message of another key moved
here), another job's id (a message of an earlier job with the same key), and a counter lower than the last one
accepted for that key (an older message replayed over a newer one).

Where the key comes from (:func:`plan_key`, first that applies):

1. ``--key-file FILE`` or ``RIGCHECK_FLEET_KEY``: a secret the launcher gives every rank (16 bytes at least).
2. Under Slurm with MUNGE (Slurm's own credential service) answering: rank 0 draws a random key and sends it to
   each rank inside a MUNGE credential only the job's user can decode (``munge --restrict-uid``); the rank
   decodes it with ``unmunge`` and takes it only when the credential's UID is its own and it names this job and
   this rank. MUNGE decodes a credential once per host, so each rank gets its own.
3. MASTER_ADDR is a loopback address (127.0.0.0/8, ::1): every rank is on this host; no key (a stranger on
   this host could still write, as they could read the processes' memory as the same user; not across hosts).
4. ``--insecure``: no key, on the operator's word; the report's notes say so.

Otherwise the run is refused with one line saying how to give a key. The store's raw counters (``add``) cannot
be sealed: they only wake a waiting rank up, which then reads the sealed keys themselves.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

from rigcheck.bench.fleet.env import FleetEnv
from rigcheck.errors import BenchError, UsageError

KEY_VAR: Final = "RIGCHECK_FLEET_KEY"
MIN_KEY_BYTES: Final = 16
MUNGE_TIMEOUT_S: Final = 10.0
DEFAULT_SLURM_CONF: Final = "/etc/slurm/slurm.conf"
RESOLVE_S: Final = 10.0  # MASTER_ADDR's lookup: a resolver that hangs is not waited on longer

KeyMode = Literal["key", "munge", "loopback", "insecure"]


class Rejected(Exception):
    """A message that does not open: unauthenticated, malformed, of another job, or replayed."""


@dataclass(frozen=True)
class Munge:
    """The MUNGE clients and the socket of the munged Slurm uses (None: MUNGE's default)."""

    munge: str
    unmunge: str
    socket: str | None

    def argv(self, program: str) -> list[str]:
        return [program, *([f"--socket={self.socket}"] if self.socket else [])]

    def encode(self, payload: bytes, uid: int) -> str:
        """A credential of this process's user carrying ``payload``, decodable by ``uid`` alone."""
        done = _run([*self.argv(self.munge), f"--restrict-uid={uid}"], payload)
        return done.decode().strip()

    def decode(self, credential: str) -> tuple[int, bytes]:
        """The credential's UID and payload; Rejected when MUNGE refuses it (forged, expired, replayed)."""
        try:
            out = _run([*self.argv(self.unmunge), "--numeric"], credential.encode())
        except BenchError as exc:
            raise Rejected(f"MUNGE refused the credential: {exc}") from None
        head, _, payload = out.partition(b"\n\n")
        fields = dict(line.split(":", 1) for line in head.decode(errors="replace").splitlines() if ":" in line)
        status = fields.get("STATUS", "").strip()
        uid = fields.get("UID", "").strip()
        if not status.startswith("0") and not status.lower().startswith("success"):
            raise Rejected(f"MUNGE status {status or 'missing'}")
        if not uid.isdigit():
            raise Rejected("the credential names no UID")
        return int(uid), payload


def _run(argv: list[str], stdin: bytes) -> bytes:
    try:
        done = subprocess.run(argv, input=stdin, capture_output=True, timeout=MUNGE_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BenchError(f"{Path(argv[0]).name} did not run: {exc}") from None
    if done.returncode != 0:
        lines = done.stderr.decode(errors="replace").strip().splitlines()
        raise BenchError(f"{Path(argv[0]).name} failed: {lines[-1] if lines else f'exit {done.returncode}'}")
    return done.stdout


_AUTH_INFO = re.compile(r"^\s*AuthInfo\s*=\s*(\S+)", re.IGNORECASE | re.MULTILINE)


def munge_socket(environ: Mapping[str, str]) -> str | None:
    """The munged socket Slurm is set to use (slurm.conf's ``AuthInfo=socket=PATH``), else None (the default)."""
    try:
        text = Path(environ.get("SLURM_CONF") or DEFAULT_SLURM_CONF).read_text(errors="replace")
    except OSError:
        return None
    match = _AUTH_INFO.search(text)
    if match is None:
        return None
    for item in match.group(1).split(","):
        name, _, value = item.partition("=")
        if name.strip().lower() == "socket" and value.strip():
            return value.strip()
    return None


def find_munge(environ: Mapping[str, str]) -> Munge | None:
    """MUNGE, when both clients are installed and munged answers (``munge -n`` makes a credential): Slurm may
    authenticate otherwise (auth/slurm), and a MUNGE that cannot answer cannot carry the key."""
    munge, unmunge = shutil.which("munge"), shutil.which("unmunge")
    if munge is None or unmunge is None:
        return None
    tool = Munge(munge=munge, unmunge=unmunge, socket=munge_socket(environ))
    try:
        _run([*tool.argv(munge), "--no-input"], b"")
    except BenchError:
        return None
    return tool


def is_loopback(host: str, timeout_s: float = RESOLVE_S) -> bool:
    """Whether every address ``host`` resolves to is a loopback address (127.0.0.0/8, ::1); False when it does
    not resolve within ``timeout_s`` (getaddrinfo has no timeout of its own: it runs on a daemon thread)."""
    found: list[set[str]] = []

    def resolve() -> None:
        try:
            infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
        except (OSError, UnicodeError):
            infos = []
        found.append({str(info[4][0]).split("%")[0] for info in infos})

    worker = threading.Thread(target=resolve, name="rigcheck-fleet-resolve", daemon=True)
    worker.start()
    worker.join(timeout_s)
    addresses = found[0] if found else set()
    return bool(addresses) and all(ipaddress.ip_address(a).is_loopback for a in addresses)


def job_id(env: FleetEnv, environ: Mapping[str, str]) -> str:
    """What tells this job's messages from another's under the same key: the launcher's job (Slurm's job and
    step, torchrun's run id and restart), the store's address."""
    parts = [env.launcher, f"{env.master_addr}:{env.master_port}", str(env.attempt)]
    if env.launcher == "slurm":
        parts.append(f"{environ.get('SLURM_JOB_ID', '')}.{environ.get('SLURM_STEP_ID', '')}")
    elif env.launcher == "torchrun":
        parts.append(environ.get("TORCHELASTIC_RUN_ID", ""))
    return "/".join(parts)


@dataclass(frozen=True)
class KeyPlan:
    """How this job's messages are authenticated: ``secret`` is known now (``key``) or comes through MUNGE."""

    mode: KeyMode
    source: str  # for the report: "RIGCHECK_FLEET_KEY", "--key-file", "MUNGE", "loopback", "--insecure"
    secret: bytes | None = None
    munge: Munge | None = None


def _secret(text: bytes, where: str) -> bytes:
    secret = text.strip()
    if len(secret) < MIN_KEY_BYTES:
        raise UsageError(f"{where} holds {len(secret)} byte(s); the fleet's key needs {MIN_KEY_BYTES} at least")
    return secret


def plan_key(
    env: FleetEnv,
    environ: Mapping[str, str],
    *,
    key_file: Path | None = None,
    insecure: bool = False,
    munge: Munge | None = None,
) -> KeyPlan:
    """Where this job's key comes from (the module docstring's order); UsageError of one line when there is none
    and the store is reachable from the network."""
    if key_file is not None:
        try:
            return KeyPlan("key", "--key-file", secret=_secret(key_file.read_bytes(), f"--key-file {key_file}"))
        except OSError as exc:
            raise UsageError(f"--key-file {key_file}: {exc.strerror or exc}") from None
    if environ.get(KEY_VAR):
        return KeyPlan("key", KEY_VAR, secret=_secret(environ[KEY_VAR].encode(), KEY_VAR))
    if env.launcher == "slurm" and munge is not None:
        return KeyPlan("munge", "MUNGE", munge=munge)
    if env.launcher == "single" or is_loopback(env.master_addr):
        return KeyPlan("loopback", "loopback")
    if insecure:
        return KeyPlan("insecure", "--insecure")
    raise UsageError(
        f"the fleet's store at {env.master_addr}:{env.master_port} is reachable from the network and nothing "
        f"authenticates its messages: give every rank the same secret in {KEY_VAR} or --key-file FILE "
        "(or run under Slurm with MUNGE), or add --insecure"
    )


def munge_payload(job: str, rank: int, secret: bytes) -> bytes:
    return json.dumps({"job": job, "rank": rank, "key": secret.hex()}, sort_keys=True).encode()


def key_from_credential(tool: Munge, credential: str, *, job: str, rank: int) -> bytes:
    """The key in rank ``rank``'s credential; Rejected unless it is this user's, this job's and this rank's."""
    uid, payload = tool.decode(credential)
    if uid != os.getuid():
        raise Rejected(f"the credential is of UID {uid}, not of the job's user ({os.getuid()})")
    try:
        data = json.loads(payload)
        ok = data["job"] == job and data["rank"] == rank
        secret = bytes.fromhex(data["key"])
    except (ValueError, KeyError, TypeError):
        raise Rejected("the credential's payload is not a fleet key") from None
    if not ok:
        raise Rejected("the credential is for another job or rank")
    return secret


def new_secret() -> bytes:
    return secrets.token_bytes(32)


@dataclass
class Sealer:
    """Seals what this rank writes and opens what it reads (see the module docstring). ``secret`` None: the
    envelope is still checked (JSON, this job), without a MAC."""

    job: str
    sender: int
    secret: bytes | None = None
    counter: int = 0
    last: dict[str, int] = field(default_factory=dict)  # per key and sender: the highest counter accepted

    def _mac(self, body: list[Any]) -> str:
        if self.secret is None:
            return ""
        text = json.dumps(body, sort_keys=True, separators=(",", ":")).encode()
        return hmac.new(self.secret, text, hashlib.sha256).hexdigest()

    def seal(self, key: str, value: Any) -> str:
        self.counter += 1
        body = [key, self.job, self.sender, self.counter, value]
        return json.dumps({"k": key, "j": self.job, "r": self.sender, "n": self.counter, "v": value,
                           "m": self._mac(body)})  # fmt: skip

    def open_sealed(self, key: str, raw: bytes) -> Any:
        """The value in ``raw`` read from ``key``; Rejected with the reason otherwise."""
        try:
            env = json.loads(raw.decode())
        except (UnicodeDecodeError, ValueError):
            raise Rejected("not JSON") from None
        if not isinstance(env, dict) or not {"k", "j", "r", "n", "v", "m"} <= env.keys():
            raise Rejected("not a sealed message")
        sender, counter, mac = env["r"], env["n"], env["m"]
        if not isinstance(sender, int) or not isinstance(counter, int) or not isinstance(mac, str):
            raise Rejected("not a sealed message")
        expected = self._mac([key, self.job, sender, counter, env["v"]])
        if not hmac.compare_digest(expected, mac):
            raise Rejected("its MAC does not match (not sealed with this job's key, or moved from another key)")
        if env["k"] != key or env["j"] != self.job:
            raise Rejected("of another key or job")
        slot = f"{key}\0{sender}"
        if counter < self.last.get(slot, 0):
            raise Rejected("replayed (an older message of this key)")
        self.last[slot] = counter
        return env["v"]

"""The fleet's control plane under attack and bad luck, for real on loopback: a stranger forging rank 1's check-in
(and garbage in a key) while the real rank 1 never comes, a rank pointed at a port that accepts and never
answers (ended by the deadline, and by SIGTERM), a rank killed mid-measurement; plus the seal and the key's
sources on their own. Every launched rank runs in a session of its own, and none may be left behind."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from rigcheck.bench.fleet.auth import (
    KEY_VAR,
    Munge,
    Rejected,
    Sealer,
    find_munge,
    is_loopback,
    job_id,
    key_from_credential,
    munge_payload,
    plan_key,
)
from rigcheck.bench.fleet.env import FleetEnv
from rigcheck.bench.fleet.store import Bounded
from rigcheck.errors import BenchError, UsageError
from tests.support.cli import Rigcheck
from tests.support.procs import assert_none_left
from tests.support.slurm_harness import SlurmCluster, slurm_cluster

__all__ = ["slurm_cluster"]  # the fixture: imported to register it for this module's tests

needs_torch = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch (gloo)")

KEY = "fault-test-key-" + "7" * 20
PREFIX = "rigcheck.fleet/0/"  # the runtime's keys: PrefixStore(PREFIX) then PrefixStore("ctl")


# --- the seal and the key's sources --------------------------------------------------------------------------


def test_a_sealed_message_opens_and_anything_else_is_rejected() -> None:
    writer = Sealer(job="j", sender=1, secret=b"k" * 32)
    reader = Sealer(job="j", sender=0, secret=b"k" * 32)
    first = writer.seal("phase/1", {"phase": "rendezvous"})
    second = writer.seal("phase/1", {"phase": "gather"})
    assert reader.open_sealed("phase/1", second.encode()) == {"phase": "gather"}
    with pytest.raises(Rejected, match="replayed"):
        reader.open_sealed("phase/1", first.encode())  # an older message of the key, put back
    with pytest.raises(Rejected, match="MAC"):
        reader.open_sealed("phase/2", second.encode())  # moved to another key
    with pytest.raises(Rejected, match="MAC"):
        Sealer(job="other", sender=0, secret=b"k" * 32).open_sealed("phase/1", second.encode())
    forged = Sealer(job="j", sender=1, secret=b"x" * 32).seal("rank/1", {"host": "evil"})
    with pytest.raises(Rejected, match="MAC"):
        reader.open_sealed("rank/1", forged.encode())
    with pytest.raises(Rejected, match="not JSON"):
        reader.open_sealed("rank/1", b"\xff{garbage")
    with pytest.raises(Rejected, match="not a sealed message"):
        reader.open_sealed("rank/1", b'{"host": "evil"}')


def test_without_a_key_the_envelope_is_still_checked() -> None:
    loose = Sealer(job="j", sender=0)
    assert loose.open_sealed("a", Sealer(job="j", sender=1).seal("a", 5).encode()) == 5
    with pytest.raises(Rejected, match="not JSON"):
        loose.open_sealed("a", b"not json")


def _env(addr: str, launcher: str = "torchrun") -> FleetEnv:
    return FleetEnv(
        rank=0,
        world_size=2,
        local_rank=0,
        local_world_size=1,
        node_rank=0,
        master_addr=addr,
        master_port=29500,
        launcher=launcher,  # type: ignore[arg-type]
    )


def test_where_the_key_comes_from(tmp_path: Path) -> None:
    off_host = _env("192.0.2.1")  # TEST-NET-1: not this host's loopback
    assert plan_key(off_host, {KEY_VAR: KEY}).secret == KEY.encode()
    key_file = tmp_path / "key"
    key_file.write_text("file-secret-" + "9" * 20 + "\n")
    from_file = plan_key(off_host, {KEY_VAR: KEY}, key_file=key_file)
    assert (from_file.source, from_file.secret) == ("--key-file", b"file-secret-" + b"9" * 20)
    assert plan_key(_env("127.0.0.1"), {}).mode == "loopback"
    assert plan_key(off_host, {}, insecure=True).mode == "insecure"
    with pytest.raises(UsageError, match="16 at least"):
        plan_key(off_host, {KEY_VAR: "short"})
    with pytest.raises(UsageError) as refused:
        plan_key(off_host, {})
    assert "\n" not in str(refused.value)
    assert KEY_VAR in str(refused.value)
    assert "--insecure" in str(refused.value)


def test_loopback_is_every_address_being_loopback() -> None:
    assert is_loopback("127.0.0.1")
    assert is_loopback("127.3.2.1")
    assert is_loopback("::1")
    assert not is_loopback("192.0.2.1")
    assert not is_loopback("no-such-host.invalid")


def test_a_call_past_its_deadline_ends_and_the_store_is_taken_as_lost() -> None:
    bounded = Bounded(0.2)
    assert bounded.call(lambda: 7, "quick") == 7
    release = threading.Event()
    started = time.monotonic()
    with pytest.raises(BenchError, match=r"did not answer within 0\.2 s"):
        bounded.call(release.wait, "a silent peer")
    assert time.monotonic() - started < 1.0
    with pytest.raises(BenchError, match="stopped answering"):
        bounded.call(lambda: 7, "the next call")
    release.set()


# --- real ranks on loopback --------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _rank(rank: int, port: int, *args: str, key: str | None = KEY, **extra: str) -> subprocess.Popen[str]:
    """``rigcheck fleet --cpu --json`` as rank ``rank`` of 2 (one rank per node), the store at 127.0.0.1:port."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RIGCHECK_FLEET", "SLURM_", "TORCHELASTIC"))}
    env.update(
        RANK=str(rank),
        WORLD_SIZE="2",
        LOCAL_RANK="0",
        LOCAL_WORLD_SIZE="1",
        GROUP_RANK=str(rank),
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
        GLOO_SOCKET_IFNAME="lo",
        OMP_NUM_THREADS="1",
        **extra,
    )
    if key is not None:
        env[KEY_VAR] = key
    return subprocess.Popen(
        [sys.executable, "-m", "rigcheck", "fleet", "--cpu", "--json", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )


def _stranger(port: int) -> Any:
    """A client of the job's store, as anyone who reaches the port is, under the runtime's prefixes."""
    import torch.distributed

    dist: Any = torch.distributed  # TCPStore and PrefixStore are not in the stubs' exports
    store = dist.TCPStore("127.0.0.1", port, None, False, timedelta(seconds=30))
    return store, dist.PrefixStore("ctl", dist.PrefixStore(PREFIX, store))


@needs_torch
@pytest.mark.parametrize(
    ("key", "forged"),
    [
        (KEY, json.dumps({"k": "rank/1", "j": "x", "r": 1, "n": 1, "v": {"host": "evil"}, "m": "0" * 64})),
        (None, "\x00not json at all{"),
    ],
    ids=["forged-check-in", "non-json"],
)
def test_a_stranger_forging_rank_1s_check_in_is_dropped_and_rank_1_named(key: str | None, forged: str) -> None:
    """Rank 0 of two; rank 1 never comes; a stranger writes rank 1's check-in (a forged MAC, or garbage, on a
    keyless loopback job), bumps the check-in counter and garbles rank 1's phase. Rank 0 still prints a
    rigcheck.fleet document naming rank 1 missing, exit 1, and counts what it dropped (the old runtime took
    the counter's word, waited for rank 1 in gloo's set-up and died "internal error: DistStoreError", exit 3)."""
    port = _free_port()
    proc = _rank(0, port, "--deadline", "3", key=key)  # the stranger writes within ~1 s (its connect retries)
    try:
        store, ctl = _stranger(port)
        ctl.set("rank/1", forged)
        ctl.add("checked_in", 1)
        ctl.set("phase/1", "\x1b]0;pwned\x07")
        out, err = proc.communicate(timeout=60)
        del ctl, store
    finally:
        proc.kill()
    assert_none_left([proc.pid], within_s=10)
    assert proc.returncode == 1, err[-3000:]
    data = json.loads(out)
    assert data["schema"] == "rigcheck.fleet/1"
    assert [(m["rank"], m["kind"]) for m in data["missing_ranks"]] == [(1, "missing")]
    assert [f["id"] for f in data["findings"]] == ["fleet.missing-rank"]
    assert data["rejected_messages"] == 2  # the check-in and the phase, each once however often read
    assert any("'rank/1'" in note for note in data["notes"])
    assert "internal error" not in err


@needs_torch
def test_ranks_given_different_keys_name_each_other() -> None:
    """An operator's slip: rank 1 was given another key. Rank 0 drops its check-in (counted, the MAC named in
    the notes) and names it missing; rank 1 cannot open rank 0's word and says so; both exit 1."""
    port = _free_port()
    lead = _rank(0, port, "--deadline", "3")
    other = _rank(1, port, "--deadline", "3", key="another-key-" + "5" * 20)
    try:
        out, err = lead.communicate(timeout=60)
        _, other_err = other.communicate(timeout=60)
    finally:
        for proc in (lead, other):
            proc.kill()
            proc.communicate(timeout=10)
    assert_none_left([lead.pid, other.pid], within_s=10)
    assert (lead.returncode, other.returncode) == (1, 1), err[-2000:] + other_err[-2000:]
    data = json.loads(out)
    assert [(m["rank"], m["kind"]) for m in data["missing_ranks"]] == [(1, "missing")]
    assert data["rejected_messages"] >= 1
    assert any("'rank/1'" in note and "MAC" in note for note in data["notes"])
    assert "MAC does not match" in other_err


@needs_torch
def test_an_impostor_that_checks_in_and_never_joins_is_named() -> None:
    """A keyless loopback job (nothing to forge): a stranger writes a well-formed check-in for rank 1, which
    never runs. Rank 0 takes it, then gloo's set-up waits for a rank 1 that never comes: bounded by the
    deadline, it ends with rank 1 named (checked in, never joined the process group), exit 1 (the old runtime
    died "internal error: DistStoreError", exit 3)."""
    port = _free_port()
    proc = _rank(0, port, "--deadline", "3", key=None)
    try:
        store, ctl = _stranger(port)
        job = job_id(dataclasses.replace(_env("127.0.0.1"), master_port=port), {})
        impostor = Sealer(job=job, sender=1).seal("rank/1", {"host": "impostor", "node_rank": 1, "local_rank": 0})
        ctl.set("rank/1", impostor)
        ctl.add("checked_in", 1)
        out, err = proc.communicate(timeout=60)
        del ctl, store
    finally:
        proc.kill()
    assert_none_left([proc.pid], within_s=10)
    assert proc.returncode == 1, err[-3000:]
    data = json.loads(out)
    assert [(m["rank"], m["phase"], m["kind"]) for m in data["missing_ranks"]] == [(1, "rendezvous", "missing")]
    assert "never joined the process group" in data["missing_ranks"][0]["reason"]
    rendezvous = next(p for p in data["phases"] if p["name"] == "rendezvous")
    assert rendezvous["status"] == "failed"
    assert "internal error" not in err


@needs_torch
def test_sigterm_to_rank_0_prints_the_partial_document() -> None:
    """Rank 0 waiting at the rendezvous for a rank 1 that never comes (deadline 60 s) gets SIGTERM: it prints the
    document so far at once, the rendezvous marked failed (interrupted), exit 143 (the old runtime printed
    nothing)."""
    port = _free_port()
    proc = _rank(0, port, "--deadline", "60")
    try:
        _stranger(port)  # returns once rank 0 serves the store: it waits for rank 1 now
        time.sleep(0.5)
        sent = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
        took = time.monotonic() - sent
    finally:
        proc.kill()
    assert_none_left([proc.pid], within_s=10)
    assert proc.returncode == 143, err[-2000:]
    assert took < 5, f"{took:.1f} s"
    data = json.loads(out)
    assert data["partial"] is True
    assert data["verdict"] == "incomplete"
    assert next((p["name"], p["status"], p["reason"]) for p in data["phases"]) == (
        "rendezvous",
        "failed",
        "interrupted (SIGTERM)",
    )


def test_an_off_host_store_without_a_key_is_refused_in_one_line(
    monkeypatch: pytest.MonkeyPatch, rigcheck: Rigcheck
) -> None:

    for name in [k for k in os.environ if k.startswith(("SLURM_", KEY_VAR))]:
        monkeypatch.delenv(name)
    ranks = {"RANK": "0", "WORLD_SIZE": "2", "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "1"}
    for name, value in {**ranks, "MASTER_ADDR": "192.0.2.1", "MASTER_PORT": "29555"}.items():
        monkeypatch.setenv(name, value)
    result = rigcheck("fleet", "--cpu", "--json")
    out, err = result.stdout, result.stderr
    assert (result.code, out) == (2, "")
    assert len(err.strip().splitlines()) == 1
    assert "--insecure" in err


class _Silent:
    """A port that accepts connections and never answers (a wrong MASTER_PORT pointing at another service)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = int(self.sock.getsockname()[1])
        self.accepted = threading.Event()
        self.held: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(conn)
            self.accepted.set()

    def close(self) -> None:
        for conn in self.held:
            conn.close()
        self.sock.close()


@pytest.fixture
def silent() -> Iterator[_Silent]:
    listener = _Silent()
    yield listener
    listener.close()


@needs_torch
def test_a_silent_store_ends_by_the_deadline(silent: _Silent) -> None:
    """Rank 1 pointed at a port that accepts and never answers, --deadline 2: it ends, one line, 2 s (plus a
    little) after it connected (the old runtime stayed 147 s in torch's connection, deaf to signals)."""
    proc = _rank(1, silent.port, "--deadline", "2")
    try:
        assert silent.accepted.wait(60), "the rank never connected"
        connected = time.monotonic()
        out, err = proc.communicate(timeout=60)
        took = time.monotonic() - connected
    finally:
        proc.kill()
    assert_none_left([proc.pid], within_s=10)
    assert took < 2 + 3, f"{took:.1f} s\n{err[-2000:]}"
    assert (proc.returncode, out) == (1, "")
    assert "did not answer within" in err
    assert "internal error" not in err


@needs_torch
def test_rank_0_on_a_silent_agent_store_reports_by_the_deadline(silent: _Silent) -> None:
    """Rank 0 of a torchrun job whose agent serves the store (rank 0 joins it as a client) at a port that never
    answers: by the deadline it prints the document, the rendezvous failed with the reason, exit 1."""
    proc = _rank(0, silent.port, "--deadline", "2", TORCHELASTIC_USE_AGENT_STORE="True")
    try:
        assert silent.accepted.wait(60), "the rank never connected"
        connected = time.monotonic()
        out, err = proc.communicate(timeout=60)
        took = time.monotonic() - connected
    finally:
        proc.kill()
    assert_none_left([proc.pid], within_s=10)
    assert took < 2 + 3, f"{took:.1f} s\n{err[-2000:]}"
    assert proc.returncode == 1, err[-2000:]
    data = json.loads(out)
    assert data["partial"] is True
    rendezvous = data["phases"][0]
    assert (rendezvous["name"], rendezvous["status"]) == ("rendezvous", "failed")
    assert "did not answer within" in rendezvous["reason"]


@needs_torch
def test_sigterm_ends_a_rank_stuck_on_a_silent_store(silent: _Silent) -> None:
    proc = _rank(1, silent.port, "--deadline", "60")
    try:
        assert silent.accepted.wait(60), "the rank never connected"
        time.sleep(0.5)  # inside torch's connection now
        sent = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
        took = time.monotonic() - sent
    finally:
        proc.kill()
    assert_none_left([proc.pid], within_s=10)
    assert proc.returncode == 143, err[-2000:]
    assert took < 3, f"{took:.1f} s"


@needs_torch
def test_a_rank_killed_mid_measurement_is_named_and_its_node_fails() -> None:
    """Two one-rank nodes; rank 1 gets SIGKILL once the collectives run. Rank 0 names it (fleet.rank-died, its
    node, the phase) and that node is not "pass" (the old runtime named nobody: its node stayed pass)."""
    port = _free_port()
    lead = _rank(0, port, "--deadline", "4")
    other = _rank(1, port, "--deadline", "4")
    try:
        assert lead.stderr is not None
        seen: list[str] = []
        for line in lead.stderr:
            seen.append(line)
            if "fleet: allreduce" in line:  # measuring: both ranks are inside the collectives
                break
        else:
            pytest.fail("rank 0 never measured:\n" + "".join(seen)[-3000:])
        other.kill()
        other.communicate(timeout=10)
        out, err = lead.communicate(timeout=60)
    finally:
        for proc in (lead, other):
            proc.kill()
            proc.communicate(timeout=10)
    assert_none_left([lead.pid, other.pid], within_s=10)
    assert lead.returncode == 1, err[-3000:]
    data = json.loads(out)
    host = socket.gethostname()
    died = [(m["rank"], m["kind"], m["host"]) for m in data["missing_ranks"]]
    assert died == [(1, "died", host)]
    assert data["missing_ranks"][0]["phase"] in ("collectives", "pairs")
    findings = [(f["id"], f["node"]) for f in data["findings"] if f["id"] in ("fleet.rank-died", "fleet.missing-rank")]
    assert findings == [("fleet.rank-died", f"{host}#1")]
    verdicts = {n["name"]: n["verdict"] for n in data["nodes"]}
    assert verdicts[f"{host}#1"] == "fail"
    assert data["verdict"] == "fail"
    assert data["partial"] is True


# --- a two-task Slurm job (tests/support/slurm_harness.py: a private cluster on loopback, skipped where it cannot
# run) --


def listening(port: int) -> set[str]:
    """The local addresses of the sockets listening on TCP ``port`` (/proc/net/tcp and tcp6, state 0A)."""
    found: set[str] = set()
    for table, width in (("/proc/net/tcp", 8), ("/proc/net/tcp6", 32)):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            address, _, hex_port = fields[1].partition(":")
            if fields[3] != "0A" or int(hex_port, 16) != port or len(address) != width:
                continue
            raw = bytes.fromhex(address)
            # the kernel prints each 32-bit word in host (little-endian) order
            words = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
            family = socket.AF_INET if width == 8 else socket.AF_INET6
            found.add(socket.inet_ntop(family, words))
    return found


def test_listening_reads_this_process_socket() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(1)
        assert listening(int(sock.getsockname()[1])) == {"127.0.0.1"}


@needs_torch
def test_a_slurm_job_listens_on_master_addr_only_and_names_the_rank_a_stranger_forged(
    slurm_cluster: SlurmCluster,
) -> None:
    """``srun -N1 -n2``: rank 1 never runs the fleet (it sleeps), rank 0 serves the store. Rank 0 listens on
    MASTER_ADDR's address alone (127.0.0.1 here: the old runtime listened on every interface); a stranger on
    the port forges rank 1's check-in; rank 0 ends with a rigcheck.fleet document naming rank 1 missing, exit 1,
    the forged message counted. The key comes from MUNGE (the harness's munged, found through SLURM_CONF)."""
    port = _free_port()
    seen: dict[str, Any] = {}

    def stranger() -> None:
        until = time.monotonic() + 60
        while not (addresses := listening(port)) and time.monotonic() < until:
            time.sleep(0.05)
        seen["listening"] = addresses
        if addresses:
            store, ctl = _stranger(port)
            ctl.set("rank/1", json.dumps({"k": "rank/1", "j": "x", "r": 1, "n": 9, "v": {"host": "evil"}, "m": ""}))
            ctl.add("checked_in", 1)
            seen["forged"] = True
            del ctl, store

    thread = threading.Thread(target=stranger, daemon=True)
    thread.start()
    # rank 1 never comes (it sleeps about as long as rank 0 runs: srun waits for both); the stranger writes as
    # soon as rank 0 listens, well within the deadline
    script = 'if [ "$SLURM_PROCID" = 0 ]; then exec "$@"; fi; sleep 5'
    entry = [sys.executable, "-m", "rigcheck", "fleet", "--cpu", "--json", "--deadline", "2"]
    result = slurm_cluster.srun(
        ["-N1", "-n2", "--export=ALL", "sh", "-c", script, "sh", *entry],
        timeout=120,
        extra_env={"MASTER_PORT": str(port), "OMP_NUM_THREADS": "1", "GLOO_SOCKET_IFNAME": "lo"},
    )
    thread.join(timeout=10)
    assert seen.get("listening") == {"127.0.0.1"}, seen
    assert seen.get("forged"), seen
    assert result.returncode == 1, result.stderr[-3000:]
    data = json.loads(result.stdout)
    assert data["schema"] == "rigcheck.fleet/1"
    assert data["launcher"] == "slurm"
    assert [(m["rank"], m["kind"]) for m in data["missing_ranks"]] == [(1, "missing")]
    assert data["rejected_messages"] >= 1
    assert "the ranks' messages were sealed with the job's key (MUNGE)" in data["notes"]
    assert slurm_cluster.wait_step_gone(result) == []


def test_munge_carries_the_key_to_its_rank_alone(slurm_cluster: SlurmCluster) -> None:
    """The harness's munged: a rank's credential decodes to the key once (MUNGE refuses a replay); a credential
    for another rank, or not MUNGE's, is refused."""
    tool = find_munge({"SLURM_CONF": str(slurm_cluster.conf)})
    assert tool is not None, "munged does not answer"
    secret = b"s" * 32
    credential = tool.encode(munge_payload("job", 1, secret), os.getuid())
    assert key_from_credential(tool, credential, job="job", rank=1) == secret
    with pytest.raises(Rejected, match="MUNGE"):
        key_from_credential(tool, credential, job="job", rank=1)  # replayed
    with pytest.raises(Rejected, match="another job or rank"):
        key_from_credential(tool, tool.encode(munge_payload("job", 2, secret), os.getuid()), job="job", rank=1)
    with pytest.raises(Rejected, match="MUNGE"):
        key_from_credential(tool, "MUNGE:forged:", job="job", rank=1)


class _OtherUser(Munge):
    """Synthetic: what unmunge says of a credential a process of UID 4242 made (munge --uid drops to that user,
    which may not reach the harness's socket, so the decoding is stood in for here)."""

    def decode(self, credential: str) -> tuple[int, bytes]:
        return 4242, credential.encode()


def test_a_credential_of_another_user_is_refused() -> None:
    tool = _OtherUser(munge="munge", unmunge="unmunge", socket=None)
    payload = munge_payload("job", 1, b"s" * 32).decode()
    with pytest.raises(Rejected, match="UID 4242"):
        key_from_credential(tool, payload, job="job", rank=1)

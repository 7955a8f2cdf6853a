"""Real fleets under torchrun on this machine, for the tests: each launch in its own session (none may leave a live
process behind), gloo on loopback, a key for the ranks' messages, the test hooks of the environment cleared first."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from typing import Any

from rigcheck.bench.fleet.auth import KEY_VAR
from rigcheck.bench.fleet.state import HOOK_VARS, PAIR_BYTES_VAR, SIZES_VAR
from tests.support.procs import assert_none_left


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def fleet_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in HOOK_VARS}
    # one host: gloo on loopback whatever the hostname resolves to; torchrun's own OMP default, without its banner
    env.update(GLOO_SOCKET_IFNAME="lo", OMP_NUM_THREADS="1", **extra)
    # a key for the ranks' messages: torchrun's MASTER_ADDR is the hostname, not loopback on every machine
    env.setdefault(KEY_VAR, "test-fleet-key-" + "0" * 16)
    return env


def torchrun(args: Sequence[str], env: Mapping[str, str], *fleet_args: str) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "torch.distributed.run", *args, "-m", "rigcheck", "fleet", "--cpu", "--json"]
    command += fleet_args
    return subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(env), start_new_session=True
    )


def none_left(procs: Sequence[subprocess.Popen[str]]) -> None:
    """No live process of the launches' sessions (a zombie runs nothing), within a few seconds."""
    assert_none_left((p.pid for p in procs), within_s=10)


def finish(procs: Sequence[subprocess.Popen[str]], timeout: float = 120) -> list[tuple[int, str, str]]:
    """Wait for every launch; (exit code, stdout, stderr) each; then no process of their sessions may live."""
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=timeout)
        results.append((proc.returncode, out, err))
    none_left(procs)
    return results


def the_document(results: Sequence[tuple[int, str, str]]) -> tuple[int, dict[str, Any]]:
    """The one launch that printed (rank 0's), its exit code and its document; the others printed nothing."""
    printed = [(code, out) for code, out, _ in results if out.strip()]
    assert len(printed) == 1, [err[-2000:] for _, _, err in results]
    code, out = printed[0]
    data = json.loads(out)
    assert data["schema"] == "rigcheck.fleet/1"
    return code, data


def phases(data: Mapping[str, Any]) -> dict[str, str]:
    return {p["name"]: p["status"] for p in data["phases"]}


# Small measurements for the launches of many processes on a small machine: one collective size, 64 KiB pairs.
SMALL = {SIZES_VAR: "4096", PAIR_BYTES_VAR: str(64 << 10)}


def nodes(count: int, per_node: int, env: Mapping[str, str]) -> list[subprocess.Popen[str]]:
    """``count`` torchrun launches on this host joined by a c10d rendezvous: ``count`` nodes."""
    endpoint = f"127.0.0.1:{free_port()}"
    args = ["--nnodes", str(count), "--nproc-per-node", str(per_node), "--rdzv-backend", "c10d"]
    args += ["--rdzv-endpoint", endpoint, "--rdzv-id", f"fleet-test-{os.getpid()}-{time.monotonic_ns()}"]
    return [torchrun(args, env) for _ in range(count)]

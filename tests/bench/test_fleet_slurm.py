"""`rigcheck fleet` launched by Slurm for real: ``srun -N1 -n2`` on a private single-host cluster
(tests/support/slurm_harness.py: munged, slurmctld and slurmd started for the session, skipped with the reason where
they cannot start).

First the harness proves itself: a two-task step runs, each task sees the Slurm variables the fleet reads
(SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, SLURM_NODEID, SLURM_STEP_NODELIST), and a step cut short by the
harness's timeout is cancelled with nothing left running. Then the fleet's Slurm path: two ranks on gloo
(``--cpu``), rank, world size and the rendezvous host taken from Slurm alone, one ``rigcheck.fleet/1``
document printed by rank 0, and no process of the step left afterwards; started as ``srun -N1 -n2 python -m
rigcheck fleet`` and as the docs write it, ``srun --ntasks-per-node 2 rigcheck fleet``.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from tests.contracts.test_schemas import assert_valid
from tests.support.slurm_harness import STEP_MARKER, SlurmCluster, SrunTimeout, processes_with, slurm_cluster

__all__ = ["slurm_cluster"]  # the fixture: imported to register it for this module's tests

FLEET_TIMEOUT_S = 300.0


def json_documents(text: str) -> tuple[list[Any], str]:
    """Every top-level JSON value in ``text``, in order, and whatever else it held (stripped)."""
    decoder = json.JSONDecoder()
    docs: list[Any] = []
    rest: list[str] = []
    pos = 0
    while pos < len(text):
        if text[pos].isspace():
            pos += 1
            continue
        try:
            doc, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError:
            end = text.find("\n", pos)
            end = len(text) if end < 0 else end + 1
            rest.append(text[pos:end])
            pos = end
            continue
        docs.append(doc)
    return docs, "".join(rest).strip()


@cache
def fleet_entry() -> list[str]:
    """How to start `rigcheck fleet` in this checkout: the registered command, else its module; skip if neither."""
    for argv in ([sys.executable, "-m", "rigcheck", "fleet"], [sys.executable, "-m", "rigcheck.cli.fleet"]):
        done = subprocess.run([*argv, "--help"], capture_output=True, text=True, timeout=120, check=False)
        if done.returncode == 0 and "--cpu" in done.stdout:
            return argv
    pytest.skip("`rigcheck fleet` is not there yet (neither `-m rigcheck fleet` nor `-m rigcheck.cli.fleet` runs)")


# --- the harness ---------------------------------------------------------------------------------------------


def test_json_documents_counts_and_keeps_the_rest() -> None:
    docs, rest = json_documents('{"a": 1}\n  {"b": [2]}\nnoise line\n')
    assert docs == [{"a": 1}, {"b": [2]}]
    assert rest == "noise line"


def test_processes_with_finds_a_process_by_its_environment() -> None:
    env = {**os.environ, STEP_MARKER: "probe-" + str(os.getpid())}
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], env=env)
    try:
        assert processes_with(STEP_MARKER, env[STEP_MARKER]) == [proc.pid]
    finally:
        proc.kill()
        proc.wait()
    assert processes_with(STEP_MARKER, env[STEP_MARKER]) == []


def test_two_tasks_run_on_the_node(slurm_cluster: SlurmCluster) -> None:
    result = slurm_cluster.srun(["-N1", "-n2", "hostname"], timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [socket.gethostname()] * 2
    assert slurm_cluster.wait_step_gone(result) == []


def test_each_task_sees_the_variables_the_fleet_reads(slurm_cluster: SlurmCluster) -> None:
    script = 'echo "$SLURM_PROCID $SLURM_NTASKS $SLURM_LOCALID $SLURM_NODEID $SLURM_STEP_NODELIST"'
    result = slurm_cluster.srun(["-N1", "-n2", "sh", "-c", script], timeout=60)
    assert result.returncode == 0, result.stderr
    node = slurm_cluster.node
    assert sorted(result.stdout.splitlines()) == [f"0 2 0 0 {node}", f"1 2 1 0 {node}"]


def test_the_step_marker_reaches_the_tasks(slurm_cluster: SlurmCluster) -> None:
    """What the leftover checks look for is in every task's environment (as /proc shows it)."""
    result = slurm_cluster.srun(["-N1", "-n2", "sh", "-c", "tr '\\0' '\\n' < /proc/$$/environ"], timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines().count(f"{STEP_MARKER}={result.marker}") == 2


def test_a_step_past_its_timeout_is_cancelled_and_leaves_nothing(slurm_cluster: SlurmCluster) -> None:
    with pytest.raises(SrunTimeout) as cut:
        slurm_cluster.srun(["-N1", "-n2", "sleep", "600"], timeout=3)
    assert cut.value.marker
    assert slurm_cluster.wait_step_gone(cut.value.marker, timeout=15) == []
    assert slurm_cluster.wait_jobs_gone() == []


# --- the fleet under srun ------------------------------------------------------------------------------------


def console_script() -> list[str]:
    """The ``rigcheck`` command installed beside this interpreter, as the docs' ``srun ... rigcheck fleet``."""
    script = Path(sys.executable).parent / "rigcheck"
    if not script.exists():
        pytest.skip(f"no rigcheck command beside {sys.executable}")
    fleet_entry()  # skips while the command is not there yet
    return [str(script), "fleet"]


@pytest.mark.parametrize(
    ("layout", "command"),
    [
        (["-N1", "-n2"], fleet_entry),
        (["-N1", "--ntasks-per-node=2"], console_script),
    ],
    ids=["n2-python-m", "ntasks-per-node-script"],
)
def test_fleet_under_srun_gathers_both_ranks_on_rank_0(
    slurm_cluster: SlurmCluster, layout: list[str], command: Callable[[], list[str]]
) -> None:
    entry = command()
    result = slurm_cluster.srun([*layout, "--export=ALL", *entry, "--cpu", "--json"], timeout=FLEET_TIMEOUT_S)
    assert result.returncode == 0, f"exit {result.returncode}\n--- stderr\n{result.stderr[-4000:]}"

    docs, rest = json_documents(result.stdout)
    assert rest == "", f"stdout holds more than JSON: {rest[:2000]}"
    assert len(docs) == 1, f"{len(docs)} documents on stdout (rank 0 alone prints one)"
    doc = docs[0]
    assert doc["schema"] == "rigcheck.fleet/1"
    assert_valid(doc)
    assert doc["source"] == "live"
    assert doc["launcher"] == "slurm"
    assert doc["backend"] == "gloo"
    assert doc["world_size"] == 2
    assert [node["ranks"] for node in doc["nodes"]] == [[0, 1]]
    assert slurm_cluster.node in doc["nodes"][0]["name"]
    assert doc["collectives"], "no collective measured"
    assert all(c["world_size"] == 2 for c in doc["collectives"])
    assert doc["missing_ranks"] == []
    assert doc["partial"] is False

    assert slurm_cluster.wait_step_gone(result) == [], "a process of the step is still running"
    assert slurm_cluster.wait_jobs_gone() == []

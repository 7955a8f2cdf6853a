"""`rigcheck fleet`: the same verdict over many nodes, one process per GPU under torchrun or srun
(rigcheck.bench.fleet.run), or from saved per-node documents with ``--from DIR`` (nothing runs).

Live, every rank runs this command: the launcher's variables say where it stands (rigcheck.bench.fleet.env),
each node's local rank 0 inspects its node (probe, doctor checks, and with ``--verify`` the `verify`
measurements), rank 0 prints the document; the other ranks print nothing on stdout. Exit code, the same on
every rank (rank 0 sends the fleet's verdict to the others): 0 pass, 1 fail or incomplete, 2 bad usage or input,
130/143 interrupted.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from rigcheck.cli.common import (
    HtmlFileOption,
    IndentOption,
    JsonOption,
    MarkdownFileOption,
    RecordOption,
    emit,
    interrupted_by,
    json_indent,
    write_pages,
)
from rigcheck.cli.exits import EXIT_PROBLEMS, exit_code_for_burn, exit_code_for_signal, exit_code_for_verdict
from rigcheck.cli.progress import progress_line
from rigcheck.cli.streams import note
from rigcheck.report.render import Format, RenderOptions

if TYPE_CHECKING:
    from rigcheck.model.finding import Finding
    from rigcheck.model.fleet import FleetDocument, NodeReport
    from rigcheck.model.snapshot import Snapshot
    from rigcheck.model.verify import Verdict, VerifyDocument

VERIFY_LEVELS = ("none", "quick", "full", "prolog")
# The launcher's variables, hidden from `verify` run inside a rank: its benchmarks would otherwise take this
# process for one rank of their own job (bench/launcher.py runs inline then) instead of starting their workers.
JOB_VARIABLES = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "MASTER_ADDR", "MASTER_PORT")
INSPECT_MARGIN_S = 60.0  # probing and the doctor checks, beside verify's own budget


def fleet(
    cpu: Annotated[
        bool, typer.Option("--cpu", help="Measure on CPU processes with gloo (a node without GPU is fine).")
    ] = False,
    verify: Annotated[
        str, typer.Option("--verify", help="Each node also runs `verify` at this level: quick, full, prolog or none.")
    ] = "none",
    deadline: Annotated[
        float, typer.Option("--deadline", min=1.0, help="Seconds each phase may take before a rank is named.")
    ] = 120.0,
    source: Annotated[
        Path | None,
        typer.Option("--from", help="Compare the per-node documents saved in this directory; run nothing."),
    ] = None,
    key_file: Annotated[
        Path | None,
        typer.Option(
            "--key-file",
            help="A secret shared by every rank (16 bytes at least) that seals the ranks' messages; default "
            "RIGCHECK_FLEET_KEY, else MUNGE under Slurm.",
        ),
    ] = None,
    insecure: Annotated[
        bool,
        typer.Option("--insecure", help="Run with unauthenticated messages where the store is reachable off-host."),
    ] = False,
    as_json: JsonOption = False,
    indent: IndentOption = None,
    html_file: HtmlFileOption = None,
    markdown_file: MarkdownFileOption = None,
    ledger: RecordOption = None,
) -> None:
    """Compare many nodes — consistency, outliers, inter-node bandwidth, the slow node — under torchrun or srun; `--from DIR` compares saved per-node documents.

    Run one process per GPU: `torchrun --nnodes N --nproc-per-node G --rdzv-backend c10d --rdzv-endpoint HOST:PORT
    -m rigcheck fleet`, or `srun --ntasks-per-node G rigcheck fleet`. Exit code: 0 pass, 1 fail or incomplete,
    2 bad usage or input, 3 internal error, 130/143 interrupted.
    """  # noqa: E501 - the first line is the command's one-line summary, as the command table shows it
    from rigcheck.errors import UsageError

    if verify not in VERIFY_LEVELS:
        raise UsageError(f"--verify is quick, full, prolog or none, not {verify!r}")
    if source is not None:
        if cpu or verify != "none" or key_file is not None or insecure:
            raise UsageError(
                "--from compares saved documents and runs nothing: "
                "it takes no --cpu, --verify, --key-file or --insecure"
            )
        saved = _from_files(source)
        _finish(saved, as_json=as_json, indent=indent, html_file=html_file, markdown_file=markdown_file, ledger=ledger)
        return
    verdicts: list[str] = []
    doc = _live(
        cpu=cpu, level=verify, deadline_s=deadline, on_verdict=verdicts.append, key_file=key_file, insecure=insecure
    )
    if doc is None:  # not rank 0: rank 0 prints for the fleet; every rank exits with the fleet's code
        raise typer.Exit(exit_code_for_verdict(verdicts[0]) if verdicts else EXIT_PROBLEMS)
    _finish(doc, as_json=as_json, indent=indent, html_file=html_file, markdown_file=markdown_file, ledger=ledger)


def _from_files(directory: Path) -> FleetDocument:
    from rigcheck.checks.doctor import run_checks
    from rigcheck.checks.fleet.collectives import fleet_rows, hosts_notes
    from rigcheck.checks.fleet.judge import fleet_document
    from rigcheck.readers.fleet_saved import load_fleet_dir

    started = time.monotonic()
    saved = load_fleet_dir(directory)
    nodes = [
        node.model_copy(update={"findings": run_checks(node.snapshot)}) if node.snapshot is not None else node
        for node in saved.nodes
    ]
    names = [node.name for node in nodes]
    return fleet_document(
        nodes=nodes,
        collectives=[row for held in saved.collectives for row in fleet_rows(held.document, nodes)],
        source="files",
        launcher=None,
        backend="nccl" if saved.collectives else None,
        world_size=None,
        elapsed_s=time.monotonic() - started,
        notes=[note for held in saved.collectives for note in hosts_notes(held.document, held.file, names)],
    )


@contextlib.contextmanager
def _outside_the_job() -> Iterator[None]:
    """Hide the launcher's variables while `verify` runs (see JOB_VARIABLES), and put them back."""
    saved = {name: os.environ.pop(name) for name in JOB_VARIABLES if name in os.environ}
    try:
        yield
    finally:
        os.environ.update(saved)


def _inspector(*, cpu: bool, level: str, host: str) -> Callable[[], NodeReport]:
    """What each node's local rank 0 runs: this node probed, checked, and verified when asked."""

    def inspect() -> NodeReport:
        from rigcheck.bench.env import software_versions
        from rigcheck.checks.doctor import run_checks
        from rigcheck.cli.common import load_snapshot
        from rigcheck.model.fleet import NodeReport

        note(f"fleet: inspecting {host}")
        snap = load_snapshot(None, announce_absent=False)
        findings = run_checks(snap)
        if cpu:  # --cpu measures CPU processes: a node without GPU is what it is asked to be
            findings = [f for f in findings if f.id != "health.no-gpu"]
        verified = None
        if level != "none":
            verified = _verify(snap, findings, cpu=cpu, level=level, host=host)
        versions = software_versions()
        return NodeReport(
            name=host,
            node_rank=None,
            ranks=[],
            snapshot=snap,
            findings=findings,
            verify=verified,
            versions={"torch": versions.torch, "nccl": versions.nccl, "python": versions.python},
            source="live",
        )

    return inspect


def _verify(snap: Snapshot, findings: list[Finding], *, cpu: bool, level: str, host: str) -> VerifyDocument:
    from rigcheck.bench.verify.run import run_verify

    poller = None
    if not cpu:
        from rigcheck.cli.monitor import open_poller

        poller = open_poller(None)
    try:
        with _outside_the_job(), progress_line(tty=False) as progress:
            return run_verify(
                snapshot=snap,
                findings=findings,
                level="full" if level == "full" else "prolog" if level == "prolog" else "quick",
                cpu=cpu,
                host=host,
                burn_poller=poller,
                burn_exit_code=exit_code_for_burn,
                on_progress=progress,
            )
    finally:
        if poller is not None:
            poller.close()


def _live(
    *,
    cpu: bool,
    level: str,
    deadline_s: float,
    on_verdict: Callable[[Verdict], None],
    key_file: Path | None,
    insecure: bool,
) -> FleetDocument | None:
    from rigcheck.bench.fleet.auth import find_munge, plan_key
    from rigcheck.bench.fleet.env import parse_fleet_env
    from rigcheck.bench.fleet.run import run_fleet
    from rigcheck.bench.verify.run import level_budget

    env = parse_fleet_env(os.environ)
    munge = find_munge(os.environ) if env.launcher == "slurm" else None
    key = plan_key(env, os.environ, key_file=key_file, insecure=insecure, munge=munge)
    if not cpu:
        from rigcheck.cli.bench_common import machine

        machine(cpu=False)  # no usable GPU here: the no-GPU rule's one line and exit 1, before any rendezvous
    budget = 0.0 if level == "none" else level_budget(level, cpu=cpu)
    with progress_line(tty=False) as progress:
        return run_fleet(
            env=env,
            inspect=_inspector(cpu=cpu, level=level, host=socket.gethostname()),
            cpu=cpu,
            deadline_s=deadline_s,
            inspect_s=budget + INSPECT_MARGIN_S,
            on_progress=progress if env.rank == 0 else None,
            on_verdict=on_verdict,
            key=key,
        )


def _finish(
    doc: FleetDocument,
    *,
    as_json: bool,
    indent: int | None,
    html_file: Path | None,
    markdown_file: Path | None,
    ledger: Path | None,
) -> None:
    write_pages(doc, html_file, markdown_file)
    emit(doc, Format.JSON if as_json else Format.TERMINAL, RenderOptions(indent=json_indent(indent)))
    if ledger is not None:  # rank 0's document: the fleet's, recorded once
        from rigcheck.cli.record import record

        record(doc, ledger, "fleet")
    signum = interrupted_by()  # rank 0 cut short: the partial document is out, the exit says which signal
    raise typer.Exit(exit_code_for_verdict(doc.verdict) if signum is None else exit_code_for_signal(signum))


if __name__ == "__main__":  # `python -m rigcheck.cli.fleet ...`: this command alone, as `rigcheck fleet ...`
    from rigcheck.cli.app import main

    main(["fleet", *sys.argv[1:]])

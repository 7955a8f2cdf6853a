"""`rigcheck verify`: a pass/fail verdict per GPU and for the node, judged against what each GPU should reach.

Three ways in, one document out (``rigcheck.verify/1``): measured live in a time budget (rigcheck.bench.verify),
on CPU processes with ``--cpu``, or judged from saved documents with ``--from DIR`` (nothing runs). ``--explain``
prints the bands instead (``rigcheck.verify-bands/1``). Exit code: 0 pass, 1 fail or incomplete (a node that
could not be verified is not passed), 2 bad usage or input, 130/143 interrupted.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from rigcheck.cli.common import (
    HtmlFileOption,
    JsonOption,
    MarkdownFileOption,
    emit,
    interrupted_by,
    read_site_config,
    write_pages,
)
from rigcheck.cli.exits import exit_code_for_signal, exit_code_for_verdict
from rigcheck.cli.progress import progress_line
from rigcheck.report.render import Format

if TYPE_CHECKING:
    from rigcheck.model.site_config import SiteConfig
    from rigcheck.model.verify import VerifyDocument

LevelOption = Annotated[
    str, typer.Option("--level", help="quick (≤ 3 min on 8 GPUs) or full (≤ 15 min): the time budget and depth.")
]


def _explain(names: list[str] | None, site: SiteConfig | None, config: Path | None, as_json: bool) -> None:
    from rigcheck.checks.verify_bands import explain_bands

    emit(explain_bands(names, site, str(config) if config else None), Format.JSON if as_json else Format.TERMINAL)


def verify(
    level: LevelOption = "quick",
    gpus_text: Annotated[str | None, typer.Option("--gpus", help="Only these GPUs, e.g. 0,1 (default: all).")] = None,
    baseline: Annotated[
        Path | None,
        typer.Option("--baseline", help="An earlier `verify --json` of this node: fail regressions."),
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option("--config", help="A site file whose [bands] replace the catalogue's floors."),
    ] = None,
    source: Annotated[
        Path | None,
        typer.Option("--from", help="Judge the documents saved in this directory; run nothing."),
    ] = None,
    cpu: Annotated[
        bool, typer.Option("--cpu", help="Run the pipeline on CPU processes (gloo); figures are not judged.")
    ] = False,
    budget: Annotated[
        float | None, typer.Option("--budget", min=1.0, help="Seconds for the whole run (default: the level's).")
    ] = None,
    explain: Annotated[
        bool, typer.Option("--explain", help="Print the bands each GPU is judged against, with their sources.")
    ] = False,
    gpu_names: Annotated[
        list[str] | None, typer.Option("--gpu", help="With --explain: only this GPU model; repeatable.")
    ] = None,
    slurm: Annotated[
        bool,
        typer.Option("--slurm", help="Print only the one-line drain reason (nothing on pass), for a Slurm prolog."),
    ] = False,
    as_json: JsonOption = False,
    html_file: HtmlFileOption = None,
    markdown_file: MarkdownFileOption = None,
) -> None:
    """Judge every GPU and the node — pass, fail or incomplete — against what each GPU should reach.

    Exit code: 0 pass, 1 fail or incomplete, 2 bad usage or input, 130/143 interrupted.
    """
    from rigcheck.errors import UsageError

    if level not in ("quick", "full"):
        raise UsageError(f"--level is quick or full, not {level!r}")
    if gpu_names and not explain:
        raise UsageError("--gpu NAME goes with --explain (to verify some GPUs only, use --gpus 0,1)")
    if source is not None and cpu:
        raise UsageError("--from judges saved documents and runs nothing: it takes no --cpu")
    site = read_site_config(config) if config is not None else None
    if explain:
        _explain(gpu_names, site, config, as_json)
        return
    from rigcheck.cli.common import parse_gpus
    from rigcheck.probe.saved import load_baseline

    chosen = parse_gpus(gpus_text)
    base = load_baseline(baseline) if baseline is not None else None
    names = (str(baseline) if baseline else None, str(config) if config else None)
    doc = (
        _from_files(source, chosen, site, base, names)
        if source
        else _live(level, cpu, chosen, budget, site, base, names)
    )
    _finish(doc, as_json=as_json, slurm=slurm, html_file=html_file, markdown_file=markdown_file)


def _from_files(
    directory: Path,
    gpus: list[int] | None,
    site: SiteConfig | None,
    baseline: VerifyDocument | None,
    names: tuple[str | None, str | None],
) -> VerifyDocument:
    from rigcheck.checks.verify_saved import verify_saved
    from rigcheck.probe.saved import load_saved

    started = time.monotonic()
    inputs = load_saved(directory)
    return verify_saved(
        inputs,
        site=site,
        baseline=baseline,
        gpus=gpus,
        baseline_name=names[0],
        site_name=names[1],
        clock=time.monotonic,
        started=started,
    )


def _live(
    level: str,
    cpu: bool,
    gpus: list[int] | None,
    budget: float | None,
    site: SiteConfig | None,
    baseline: VerifyDocument | None,
    names: tuple[str | None, str | None],
) -> VerifyDocument:
    import socket

    from rigcheck.bench.verify import run_verify
    from rigcheck.checks import run_checks
    from rigcheck.cli.bench_common import machine

    snap = machine(cpu=cpu)  # no GPU and no --cpu: the no-GPU rule's one line, exit 1
    findings = run_checks(snap, config=site)
    poller = None
    if not cpu:
        from rigcheck.cli.monitor_cmd import open_poller

        poller = open_poller(gpus)
    try:
        with progress_line() as progress:
            return run_verify(
                snapshot=snap,
                findings=findings,
                level="full" if level == "full" else "quick",
                cpu=cpu,
                gpus=gpus,
                budget_s=budget,
                site=site,
                baseline=baseline,
                baseline_name=names[0],
                site_name=names[1],
                host=socket.gethostname(),
                burn_poller=poller,
                on_progress=progress,
            )
    finally:
        if poller is not None:
            poller.close()


def _finish(
    doc: VerifyDocument, *, as_json: bool, slurm: bool, html_file: Path | None, markdown_file: Path | None
) -> None:
    write_pages(doc, html_file, markdown_file)
    if slurm:
        if doc.drain_reason:
            typer.echo(doc.drain_reason)
    else:
        emit(doc, Format.JSON if as_json else Format.TERMINAL)
    signum = interrupted_by()
    if signum is not None:
        raise typer.Exit(exit_code_for_signal(signum))
    raise typer.Exit(exit_code_for_verdict(doc.verdict))

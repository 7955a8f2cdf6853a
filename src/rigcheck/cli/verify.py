"""`rigcheck verify`: a pass/fail verdict per GPU and for the node, judged against what each GPU should reach.

Three ways in, one document out (``rigcheck.verify/1``): measured live in a time budget (rigcheck.bench.verify.run),
on CPU processes with ``--cpu``, or judged from saved documents with ``--from DIR`` (nothing runs). ``--explain``
prints the bands instead (``rigcheck.verify-bands/1``). ``--only`` scopes the run to some stages. Exit code (the
contract of docs/verdicts.md, rigcheck.checks.verdicts): 0 pass or unjudged (a CPU run), 1 fail or incomplete (a
node that could not be verified is not passed: no GPU visible too, still with its document and a drain reason),
2 bad usage or input, 130/143 interrupted.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NamedTuple

import typer

from rigcheck.cli.common import (
    HtmlFileOption,
    IdOption,
    IndentOption,
    JsonOption,
    MarkdownFileOption,
    ModelsAliasOption,
    RecordOption,
    emit,
    interrupted_by,
    json_indent,
    model_named,
    read_site_config,
    write_pages,
    write_stdout,
)
from rigcheck.cli.exits import exit_code_for_burn, exit_code_for_signal, exit_code_for_verdict
from rigcheck.cli.progress import progress_line
from rigcheck.cli.terminal_safe import terminal_text
from rigcheck.report.render import Format, RenderOptions

if TYPE_CHECKING:
    from collections.abc import Callable

    from rigcheck.model.site_config import SiteConfig
    from rigcheck.model.snapshot import Snapshot
    from rigcheck.model.telemetry import Sample
    from rigcheck.model.verify import Level, VerifyDocument
    from rigcheck.probe.nvml import NvmlPoller

LevelOption = Annotated[
    str,
    typer.Option(
        "--level",
        help="quick (≤ 3 min on 8 GPUs), full (≤ 15 min) or prolog (10 s at a job's start: the passive checks, "
        "a short matmul and memory bracket, one small all-reduce): the time budget and depth.",
    ),
]


def _explain(
    names: list[str] | None, site: SiteConfig | None, config: Path | None, as_json: bool, indent: int | None
) -> None:
    from rigcheck.checks.verify.bands import explain_bands

    emit(
        explain_bands(names, site, str(config) if config else None),
        Format.JSON if as_json else Format.TERMINAL,
        RenderOptions(indent=json_indent(indent)),
    )


def verify(
    level: LevelOption = "quick",
    gpus_text: Annotated[str | None, typer.Option("--gpus", help="Only these GPUs, e.g. 0,1 (default: all).")] = None,
    gpu_ids: IdOption = None,
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
        list[str] | None, typer.Option("--model", help="With --explain: only this GPU model; repeatable.")
    ] = None,
    former_gpu: ModelsAliasOption = None,
    slurm: Annotated[
        bool,
        typer.Option("--slurm", help="Print only the one-line drain reason (nothing on exit 0), for a Slurm prolog."),
    ] = False,
    only_text: Annotated[
        str | None,
        typer.Option(
            "--only",
            help="Only these stages, e.g. matmul,membw (of matmul, membw, fingerprint, hostlink, p2p, allreduce, "
            "burn; with --from also dcgm): the others are left out and do not make the node incomplete.",
        ),
    ] = None,
    as_json: JsonOption = False,
    indent: IndentOption = None,
    html_file: HtmlFileOption = None,
    markdown_file: MarkdownFileOption = None,
    ledger: RecordOption = None,
) -> None:
    """Judge every GPU and the node — pass, fail or incomplete — against what each GPU should reach.

    Exit code: 0 pass (or unjudged: a CPU run), 1 fail or incomplete, 2 bad usage or input, 3 internal error,
    130/143 interrupted.
    """
    from rigcheck.bench.verify.steps import MEASURED_STEPS, parse_only
    from rigcheck.errors import UsageError

    if level not in ("quick", "full", "prolog"):
        raise UsageError(f"--level is quick, full or prolog, not {level!r}")
    gpu_names = model_named(gpu_names, former_gpu)
    if gpu_names and not explain:
        raise UsageError("--model NAME goes with --explain (to verify some GPUs only, use -i 0,1 or --gpus 0,1)")
    if source is not None and cpu:
        raise UsageError("--from judges saved documents and runs nothing: it takes no --cpu")
    only = parse_only(only_text, (*MEASURED_STEPS, "dcgm") if source is not None else MEASURED_STEPS)
    if only is not None and explain:
        raise UsageError("--only scopes a run; --explain runs nothing")
    site = read_site_config(config) if config is not None else None
    if explain:
        _explain(gpu_names, site, config, as_json, indent)
        return
    from rigcheck.cli.common import one_selection, parse_gpus
    from rigcheck.readers.saved import load_baseline

    one_selection(gpus_text, gpu_ids)
    chosen = Chosen(parse_gpus(gpus_text), gpu_ids)
    base = load_baseline(baseline) if baseline is not None else None
    names = (str(baseline) if baseline else None, str(config) if config else None)
    doc = (
        _from_files(source, chosen, site, base, names, only)
        if source
        else _live(level, cpu, chosen, budget, site, base, names, only)
    )
    if not source:  # a run's document says when it ended (the ledger dates it by that); a --from judgement does not
        from rigcheck.model.document import utc_now

        doc = doc.model_copy(update={"created_at": utc_now()})
    _finish(
        doc,
        as_json=as_json,
        indent=indent,
        slurm=slurm,
        html_file=html_file,
        markdown_file=markdown_file,
        ledger=ledger,
    )


class Chosen(NamedTuple):
    """The GPUs asked for: --gpus as indices, or -i as given (resolved once the snapshot is read)."""

    indices: list[int] | None
    ids: str | None

    def of(self, snap: Snapshot) -> list[int] | None:
        """The indices to judge on ``snap``: -i resolved as doctor resolves it (model/selection.resolve_ids); on a
        snapshot with no GPU, none (the no-GPU rule decides, as load_snapshot leaves such a snapshot whole)."""
        if self.ids is None:
            return self.indices
        from rigcheck.model.selection import gpu_indices, resolve_ids

        return resolve_ids(snap, self.ids) if gpu_indices(snap) else None


def _from_files(
    directory: Path,
    chosen: Chosen,
    site: SiteConfig | None,
    baseline: VerifyDocument | None,
    names: tuple[str | None, str | None],
    only: tuple[str, ...] | None,
) -> VerifyDocument:
    from rigcheck.checks.verify.saved import verify_saved
    from rigcheck.readers.saved import load_saved

    started = time.monotonic()
    inputs = load_saved(directory)
    return verify_saved(
        inputs,
        site=site,
        baseline=baseline,
        gpus=chosen.of(inputs.snapshot),
        baseline_name=names[0],
        site_name=names[1],
        clock=time.monotonic,
        started=started,
        only=only,
    )


def _live(
    level: str,
    cpu: bool,
    chosen: Chosen,
    budget: float | None,
    site: SiteConfig | None,
    baseline: VerifyDocument | None,
    names: tuple[str | None, str | None],
    only: tuple[str, ...] | None,
) -> VerifyDocument:
    import socket

    from rigcheck.bench.verify.run import level_budget, run_verify
    from rigcheck.checks.doctor import run_checks
    from rigcheck.cli.common import load_snapshot
    from rigcheck.cli.nogpu import VERDICT_WITHOUT_GPU, absence
    from rigcheck.cli.streams import note
    from rigcheck.probe.deadline import PROBE_DEADLINE_S, NotAnswering, within

    lvl: Level = "full" if level == "full" else "prolog" if level == "prolog" else "quick"
    wanted = budget if budget is not None else level_budget(lvl, cpu=cpu)
    try:
        snap = within(PROBE_DEADLINE_S, lambda: load_snapshot(None, announce_absent=False), "the machine's probe")
    except NotAnswering as exc:  # a wedged driver: a verdict in seconds, never a hang on the fault itself
        from rigcheck.checks.verify.saved import verify_unmeasured
        from rigcheck.model.snapshot import Snapshot

        reason = f"driver not responding: {exc}"
        note(reason)
        return verify_unmeasured(
            Snapshot(gpu_absent_reason=reason),
            [],
            reason=reason,
            level=lvl,
            host=socket.gethostname(),
            budget_s=wanted,
            only=only,
            stuck=[str(exc)],
        )
    gpus = chosen.of(snap)
    findings = run_checks(snap, config=site)
    missing = None if cpu else absence(snap)
    if missing is not None:
        # No GPU and no --cpu: the no-GPU rule's one line on stderr, and still the document (fail, exit 1), so
        # --json always gives one and --slurm a reason.
        from rigcheck.checks.verify.saved import verify_unmeasured

        note(f"{missing}; {VERDICT_WITHOUT_GPU}")
        host = socket.gethostname()
        return verify_unmeasured(snap, findings, reason=missing, level=lvl, host=host, budget_s=wanted, only=only)
    poller = None
    blocked: list[str] = []  # what did not answer within its deadline
    # the burn's telemetry; the prolog's error counters, read around its measurements
    if not cpu and (lvl == "prolog" or only is None or "burn" in only):
        from rigcheck.cli import monitor as monitor_cmd
        from rigcheck.errors import ProbeError

        poller = monitor_cmd.make_poller(gpus)
        opening = poller
        try:
            within(PROBE_DEADLINE_S, opening.open, "NVML's telemetry")
        except NotAnswering as exc:  # a wedged driver: named by the node check driver, never waited on
            blocked.append(str(exc))
            poller = None
        except ProbeError as exc:  # the burn is skipped (incomplete, exit 1); the other stages and the document stay
            note(f"the burn's telemetry (NVML) did not start: {' '.join(str(exc).split())}")
            poller = None
    from rigcheck.probe.stuck import stuck_on_nvidia

    scan = stuck_on_nvidia()  # a wedged driver first: every measurement would block behind it
    try:
        with progress_line() as progress:
            doc = run_verify(
                snapshot=snap,
                findings=findings,
                level=lvl,
                cpu=cpu,
                gpus=gpus,
                budget_s=budget,
                site=site,
                baseline=baseline,
                baseline_name=names[0],
                site_name=names[1],
                host=socket.gethostname(),
                burn_poller=poller,
                burn_exit_code=exit_code_for_burn,
                on_progress=progress,
                only=only,
                stuck=[*scan.stuck, *blocked],
                read_counters=_counter_reader(poller) if lvl == "prolog" and poller is not None else None,
            )
    finally:
        if poller is not None:
            poller.close()
    if scan.unreadable:
        unknown = (
            f"{scan.unreadable} process(es) in D state whose open files could not be read (not root): whether they "
            "hold an NVIDIA device is not known"
        )
        doc = doc.model_copy(update={"notes": [*doc.notes, unknown]})
    return doc


def _counter_reader(poller: NvmlPoller) -> Callable[[], list[Sample]]:
    """One reading of every GPU's counters through the open poller (its NVLink counters on their own cadence),
    under the probe's deadline: a reading that does not return raises NotAnswering (run_verify names it)."""
    import time

    from rigcheck.probe.deadline import PROBE_DEADLINE_S, within

    return lambda: within(PROBE_DEADLINE_S, lambda: poller.poll(time.monotonic()), "NVML's counter reading")


def _finish(
    doc: VerifyDocument,
    *,
    as_json: bool,
    indent: int | None,
    slurm: bool,
    html_file: Path | None,
    markdown_file: Path | None,
    ledger: Path | None = None,
) -> None:
    from rigcheck.checks.verdicts import slurm_line

    write_pages(doc, html_file, markdown_file)
    if slurm:
        line = slurm_line(doc.verdict, doc.drain_reason)  # never an empty line where the exit code is 1
        if line is not None:  # it quotes findings, so inputs: as the terminal may be given it (cli/terminal_safe.py)
            write_stdout(terminal_text(line) + "\n")
    else:
        emit(doc, Format.JSON if as_json else Format.TERMINAL, RenderOptions(indent=json_indent(indent)))
    if ledger is not None:
        from rigcheck.cli.record import record

        record(doc, ledger, "verify")
    signum = interrupted_by()
    if signum is not None:
        raise typer.Exit(exit_code_for_signal(signum))
    raise typer.Exit(exit_code_for_verdict(doc.verdict))

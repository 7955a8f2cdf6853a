"""What every `rigcheck bench` command shares: options, the machine it measures, printing, the exit code.

The commands hand the benchmark this machine's snapshot (:func:`machine`: rigcheck.bench does not probe) and
print its document through rigcheck.report.bench.render (:func:`finish`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer

from rigcheck.cli.common import emit, interrupted_by, json_indent, load_snapshot, write_pages
from rigcheck.cli.exits import EXIT_OK, EXIT_PROBLEMS, exit_code_for_signal
from rigcheck.cli.nogpu import NO_GPU_BENCH, refuse
from rigcheck.cli.streams import note
from rigcheck.errors import InputError, UsageError
from rigcheck.report.render import Format, RenderOptions

if TYPE_CHECKING:
    from rigcheck.bench.gpu_select import GpuPlacement
    from rigcheck.model.snapshot import Snapshot
    from rigcheck.report.bench.render import BenchDoc

CpuOption = Annotated[bool, typer.Option("--cpu", help="Run on CPU processes with gloo (no GPU needed; what CI runs).")]
WorldSizeOption = Annotated[
    int | None,
    typer.Option("--world-size", "-n", min=1, max=512, help="Processes to start (default: every GPU; 2 with --cpu)."),
]
TimeoutOption = Annotated[
    float, typer.Option("--timeout", min=1.0, help="Give up after this many seconds; partial results are kept.")
]
JsonOut = Annotated[bool, typer.Option("--json", help="Print the result document (rigcheck.bench/1) as JSON.")]
BenchGpusOption = Annotated[
    str | None,
    typer.Option(
        "--gpus",
        help="Only these GPUs, by nvidia-smi index (e.g. 0,2): one worker each, in this order; rows use that index.",
        show_default=False,
    ),
]


def machine(*, cpu: bool) -> Snapshot:
    """This machine, probed live: the snapshot a bench document carries and its theoretical figures come from.

    A run on GPUs (``cpu`` False) on a machine with no usable NVIDIA GPU stops here: one line, exit 1
    (cli/nogpu.py), before torch is asked anything.
    """
    snap = load_snapshot(None, announce_absent=False)
    if not cpu:
        refuse(snap, NO_GPU_BENCH)
    return snap


def placed_machine(
    *, cpu: bool, gpus: str | None, world_size: int | None = None, spawns: bool = True, ids: str | None = None
) -> tuple[Snapshot, GpuPlacement | None]:
    """:func:`machine`, and with --gpus or -i the run's placement (rigcheck.bench.gpu_select) and the snapshot
    narrowed to those GPUs. A malformed or repeated index, both options, either with --cpu, with a different
    --world-size or (a run that ``spawns`` workers) inside a torchrun/srun job is a usage error before anything is
    probed; an index this machine lacks is one after (the message every --gpus gives), as is an id naming no GPU
    or several (-i resolved against this machine as doctor resolves it: model/selection.resolve_ids, the indices
    in their order)."""
    from rigcheck.cli.common import one_selection, parse_gpus

    one_selection(gpus, ids)
    chosen = parse_gpus(gpus)
    if chosen is None and ids is None:
        return machine(cpu=cpu), None
    option = "--gpus" if ids is None else "-i/--id"
    if cpu:
        raise UsageError(f"{option} picks GPUs and a --cpu run has none (it measures CPU processes): drop one of them")
    from rigcheck.bench.gpu_select import place_gpus, workers_for

    if chosen is not None:
        workers_for(chosen, world_size)
    if spawns:
        from rigcheck.bench.launcher import in_launched_job

        if in_launched_job():
            raise UsageError(
                f"{option} places the workers rigcheck starts; inside a torchrun/srun job the job places its ranks "
                "(set CUDA_VISIBLE_DEVICES there)"
            )
    snapshot = machine(cpu=False)
    if chosen is None:
        from rigcheck.model.selection import resolve_ids

        chosen = resolve_ids(snapshot, ids or "")
        if world_size is not None and world_size != len(chosen):
            raise UsageError(
                f"--world-size {world_size} and -i {ids} disagree: -i starts one worker per GPU ({len(chosen)}); "
                "drop --world-size"
            )
    placement = place_gpus(snapshot, chosen)
    return placement.snapshot, placement


def run_failed(doc: BenchDoc) -> bool:
    """A run failed when it is partial, errored, or any row says its data was wrong; an imported output (--from)
    also when its tool counted wrong values (nccl-tests' out-of-bounds footer) or its band's verdict is fail."""
    source, judgement = getattr(doc, "source", None), getattr(doc, "judgement", None)
    # p2p, membw, hostlink --from: a list of figures judged, each with its verdict
    judged = judgement if isinstance(judgement, list) else [judgement] if judgement is not None else []
    imported = (source is not None and (source.out_of_bounds or 0) > 0) or any(j.verdict == "fail" for j in judged)
    return (
        imported
        or doc.partial
        or doc.error is not None
        or any(getattr(r, "correct", True) is False for r in doc.results)
    )


def finish(
    doc: BenchDoc,
    *,
    as_json: bool,
    indent: int | None = None,
    html_file: Path | None = None,
    markdown_file: Path | None = None,
) -> NoReturn:
    """Write the pages asked for, print the document (JSON or the report), and exit: 0, or 1 when the run
    failed or, for a --compare-p2p comparison of two runs, when it has a warning (the comparison is not one);
    130 or 143 when SIGINT or SIGTERM cut the run short (the document then says ``"partial": true`` and
    ``"error": "interrupted (SIGINT)"``, and holds the rows measured before)."""
    from rigcheck.model.bench import CompareBaseDocument

    write_pages(doc, html_file, markdown_file)
    emit(doc, Format.JSON if as_json else Format.TERMINAL, RenderOptions(indent=json_indent(indent)))
    compared = isinstance(doc, CompareBaseDocument)
    if compared:
        from rigcheck.bench.compare import inherited_p2p_note

        # The document notes it too; a note on stderr is what a user reading the table would otherwise miss.
        inherited = inherited_p2p_note()
        if inherited:
            note(f"warning: {inherited}")
    if doc.error:
        note(f"error: {doc.error}" + (" (partial results kept)" if doc.results and not compared else ""))
    warned = isinstance(doc, CompareBaseDocument) and bool(doc.warnings)
    signum = interrupted_by()
    if signum is not None:
        raise typer.Exit(exit_code_for_signal(signum))
    raise typer.Exit(EXIT_PROBLEMS if run_failed(doc) or warned else EXIT_OK)


def refuse_given(given: Sequence[str]) -> None:
    """A live-run option beside --from: one usage line naming them."""
    if given:
        raise UsageError(f"{', '.join(given)} only apply to a run; with --from nothing is run (drop them)")


def described_machine(parts: list[tuple[str, str]]) -> Snapshot | None:
    """The machine files given beside a reference tool's output (`bench … --from`) as one snapshot (None: none
    given); what the merge noticed is one stderr line each."""
    if not parts:
        return None
    from rigcheck.readers.from_file import load_text

    if len(parts) == 1:
        path, text = parts[0]
        if not text.strip():
            raise InputError(
                "empty file: expected a machine description (nvidia-smi -q, topo -m, a snapshot)", path=path
            )
        return load_text(text, path)
    from rigcheck.readers.merge import Part, merge_snapshots
    from rigcheck.readers.merge_fields import MERGE_SOURCE

    snap = merge_snapshots([Part(path, load_text(text, path) if text.strip() else None) for path, text in parts])
    for diagnostic in snap.diagnostics:
        if diagnostic.source == MERGE_SOURCE:
            note(diagnostic.message)
    return snap

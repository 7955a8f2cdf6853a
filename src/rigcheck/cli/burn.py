"""`rigcheck burn`: load the GPUs with sustained matmuls, record telemetry, say whether, when and why they slowed.

``--analyze FILE`` judges a recorded trace instead (rigcheck.cli.burn_analyze). The JSON (``rigcheck.burn/2``,
rigcheck.model.burn.BurnDocument) is the analysis document of ``--analyze`` plus, per GPU, ``tflops_sustained``,
``tflops_first_10s`` and ``errors`` (products that came out wrong), and ``workload`` / ``sampler`` /
``partial`` / ``interrupted``; ``fingerprint`` (the cross-GPU fingerprint run before the load, unless
``--no-fingerprint``) and ``kernel_log`` with each GPU's ``kernel_events`` (the kernel log's lines new during the run,
read with dmesg, else ``journalctl -k``).

Exit codes: 0 nothing wrong; 1 a wrong result, a GPU whose load failed, or a problem by
rigcheck.checks.burn.judge.is_problem (thermal throttling, lost GPU, HW power brake, a fingerprint apart from its
peers', a fatal Xid during the run), or no GPU; 2 bad usage; 130 Ctrl-C (what was measured is still printed, marked
partial).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from rigcheck.cli.common import (
    HtmlFileOption,
    IdOption,
    IndentOption,
    emit,
    interrupted_by,
    interruptible,
    json_indent,
    write_pages,
)
from rigcheck.cli.exits import EXIT_PROBLEMS, exit_code_for_burn
from rigcheck.cli.progress import progress_line
from rigcheck.cli.streams import note
from rigcheck.errors import BenchError, OutputError
from rigcheck.report.render import Format, RenderOptions

if TYPE_CHECKING:
    from rigcheck.model.burn import BurnDocument, BurnRun
    from rigcheck.monitor.sampler import TraceFile


def burn_exit_code(run: BurnRun) -> int:
    """The exit code of the run's outcome (bench/burn.burn_outcome): 130 when Ctrl-C cut it short (143 for
    SIGTERM); 1 for a wrong result, a failed load or a problem by is_problem; else 0."""
    from rigcheck.bench.burn import burn_outcome

    return exit_code_for_burn(burn_outcome(run), interrupted_by() if run.interrupted else None)


def burn_document(run: BurnRun, exit_code: int) -> BurnDocument:
    from rigcheck.model.burn import BurnDocument

    return BurnDocument.of_run(run, exit_code)


def burn(
    *,
    minutes: Annotated[float, typer.Option("--minutes", min=0.05, max=24 * 60, help="Minutes of load.")] = 5.0,
    gpus_text: Annotated[str | None, typer.Option("--gpus", help="Only these GPUs, e.g. 0,1 (default: all).")] = None,
    gpu_ids: IdOption = None,
    dtype: Annotated[
        str, typer.Option("--dtype", help="bf16 | fp16 | tf32 | fp32 (tensor cores for all but fp32).")
    ] = "bf16",
    csv: Annotated[
        Path | None, typer.Option("--csv", help="Also log the telemetry to this CSV file.", dir_okay=False)
    ] = None,
    jsonl: Annotated[
        Path | None, typer.Option("--jsonl", help="Also log the telemetry to this JSONL file.", dir_okay=False)
    ] = None,
    analyze: Annotated[
        Path | None,
        typer.Option("--analyze", help="Analyse a recorded trace (rigcheck CSV/JSONL, nvidia-smi CSV) instead."),
    ] = None,
    interval: Annotated[float, typer.Option("--interval", min=0.01, max=10.0, help="Seconds between polls.")] = 0.1,
    no_fingerprint: Annotated[
        bool,
        typer.Option(
            "--no-fingerprint",
            help="Skip the cross-GPU fingerprint before the load (identical GPUs must compute bit-identical results).",
        ),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result (rigcheck.burn/2) as JSON.")] = False,
    indent: IndentOption = None,
    html_file: HtmlFileOption = None,
) -> None:
    """Load the GPUs with sustained matmuls while recording power, temperature, clocks and throttle reasons."""
    if analyze is not None:
        from rigcheck.cli.burn_analyze import burn_analyze

        burn_analyze(analyze, as_json, html_file, indent)
        return
    # Here, not at the top: `--analyze` needs none of the live poller's machinery (start-up time, issue #13).
    from rigcheck.bench.burn import DTYPES, run_burn
    from rigcheck.bench.progress import PROGRESS_TICK_S
    from rigcheck.cli import monitor as monitor_cmd
    from rigcheck.model.burn import BurnFingerprint
    from rigcheck.monitor.sampler import TraceFile
    from rigcheck.probe.kernel_log import read_live

    if dtype not in DTYPES:
        raise typer.BadParameter(f"one of {', '.join(DTYPES)}", param_hint="--dtype")

    target = monitor_cmd.trace_target(csv, jsonl)
    poller = monitor_cmd.open_chosen_poller(gpus_text, gpu_ids)
    sink: TraceFile | None = None
    try:
        sink = TraceFile(target[0], target[1]) if target is not None else None
        with progress_line() as progress:
            run = run_burn(
                poller,
                minutes=minutes,
                dtype=dtype,
                sink=sink,
                interval_s=interval,
                on_progress=progress,
                progress_every_s=PROGRESS_TICK_S,  # the CLI shows one at most every 1.5 s: a line within 2 s
                uuids=dict(poller.uuids),
                fingerprint=not no_fingerprint,
                kernel_log=read_live,
            )
            if no_fingerprint:
                run.fingerprint = BurnFingerprint(
                    method=None, skipped="--no-fingerprint", error=None, rerun=[], gpus=[]
                )
    except BenchError as exc:
        note(f"no usable NVIDIA GPU: {exc}")
        raise typer.Exit(EXIT_PROBLEMS) from None
    finally:
        if sink is not None:
            sink.close()  # the sampler closed it, unless the run failed before it started
        identities = (dict(poller.uuids), dict(poller.bus_ids))
        poller.close()
    if sink is not None and sink.error is None:
        note(f"{sink.rows} samples written to {sink.path}")
    doc = placed(burn_document(run, burn_exit_code(run)), identities)
    write_pages(doc, html_file)
    emit(doc, Format.JSON if as_json else Format.TERMINAL, RenderOptions(indent=json_indent(indent)))
    if sink is not None and sink.error is not None:  # the trace could not be written to its end: exit 2
        raise OutputError(sink.error)
    raise typer.Exit(doc.exit_code)


def placed(doc: BurnDocument, identities: tuple[dict[int, str], dict[int, str]]) -> BurnDocument:
    """The run's document with where and when it ran, and each GPU's UUID and bus id (NVML's): what places its
    rates in the ledger (`rigcheck history`), as verify's are."""
    import socket

    from rigcheck.model.document import utc_now

    uuids, buses = identities
    gpus = [a.model_copy(update={"uuid": uuids.get(a.index), "pci_bus_id": buses.get(a.index)}) for a in doc.gpus]
    return doc.model_copy(update={"gpus": gpus, "host": socket.gethostname(), "created_at": utc_now()})


def register(app: typer.Typer) -> None:
    """Add `burn` to a typer app (cli/app.py mounts it on `rigcheck`)."""
    app.command("burn")(interruptible(burn))

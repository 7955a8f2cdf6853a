"""`rigcheck bench matmul --from FILE`: a mamf-finder output (ml-engineering's maximum-achievable-matmul
finder, or a fork of it) read, nothing run (no GPU needed), its best figure judged against verify's matmul band.

The first ``--from`` file that is a mamf-finder output is the measurement; the others describe the machine
(`nvidia-smi -q`, a snapshot...), which names the GPU where the output does not. ``--model NAME`` names it instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from rigcheck.errors import InputError, UsageError

if TYPE_CHECKING:
    from rigcheck.checks.reference.mamf import MatmulFigure
    from rigcheck.model.bench import MatmulDocument
    from rigcheck.readers.reference.mamf import MamfRun

MamfFromOption = Annotated[
    list[Path] | None,
    typer.Option(
        "--from",
        help="Read a mamf-finder output (ml-engineering's maximum-achievable-matmul finder) instead of measuring; "
        "'-' is stdin. Repeat it to add the machine (nvidia-smi -q, a snapshot) that names the GPU.",
        show_default=False,
    ),
]
MEASUREMENT = "a mamf-finder output, or a machine description"


def mamf_document(files: Sequence[Path], *, gpu: str | None) -> MatmulDocument:
    """The matmul document of the mamf-finder output among ``files``, judged on the GPU ``gpu`` names (else the
    machine the other files describe, else the device the output prints)."""
    from rigcheck.checks.reference.mamf import judge_mamf
    from rigcheck.checks.verify.bands import resolve_gpu
    from rigcheck.cli.bench_common import described_machine
    from rigcheck.inputs import read_input_text
    from rigcheck.readers.reference.mamf import looks_like_mamf, parse_mamf
    from rigcheck.readers.reference.mamf_doc import mamf_document as document

    named = resolve_gpu(gpu, "--model") if gpu is not None else None  # a bad name is refused before any file is read
    paths = [str(f) for f in files]
    if paths.count("-") > 1:
        raise UsageError("standard input can be read only once ('-' is given more than once)")
    texts = [(path, read_input_text(path, MEASUREMENT, allow_empty=i > 0)) for i, path in enumerate(paths)]
    measured = [i for i, (_, text) in enumerate(texts) if text and looks_like_mamf(text)]
    if not measured:
        path, text = texts[0]
        raise _not_mamf(path, text)
    if len(measured) > 1:
        first, second = (texts[i][0] for i in measured[:2])
        raise UsageError(f"two mamf-finder outputs ({first} and {second}): give one, then the machine's files")
    at = measured[0]
    path, text = texts[at]
    run = parse_mamf(text, path)
    snapshot = described_machine([part for i, part in enumerate(texts) if i != at])
    return judge_mamf(document(run), figure_of(run), named, snapshot)


def figure_of(run: MamfRun) -> MatmulFigure | None:
    """The judge's view of a run: its best figure, dtype and device as printed."""
    from rigcheck.checks.reference.mamf import MatmulFigure
    from rigcheck.readers.reference.mamf_doc import judged_best, statistic_of

    best = judged_best(run)
    if best is None:
        return None
    shape = f" @ {'x'.join(map(str, best.shape))}" if best.shape is not None else ""
    msmf = run.bests.get("MSMF")
    return MatmulFigure(
        what=f"{statistic_of(best)} {best.tflops:g} TFLOPS{shape}",
        tflops=best.tflops,
        dtype=run.dtype,
        dtype_name=run.dtype_name,
        dtype_assumed=run.dtype_from == "default",
        complete=run.complete,
        device_index=run.device_index,
        device_name=run.device_name,
        sustained=msmf.tflops if msmf is not None else None,
    )


def _not_mamf(path: str, text: str) -> InputError:
    """The one line for a first file that is no mamf-finder output, naming the command that reads it."""
    from rigcheck.readers.reference.bandwidth_test import looks_like_bandwidth_test
    from rigcheck.readers.reference.nccl_tests import looks_like_nccl_tests
    from rigcheck.readers.reference.reference_import import detect_tool

    tool = detect_tool(text)
    if tool is not None or looks_like_bandwidth_test(text):
        command = "p2p" if tool == "p2pBandwidthLatencyTest" else "hostlink, membw or p2p"
        return InputError(
            f"holds {tool or 'bandwidthTest'} output, not matmul figures: read it with "
            f"`rigcheck bench {command} --from`",
            path=path,
        )
    if looks_like_nccl_tests(text):
        return InputError("holds nccl-tests output: read it with `rigcheck bench allreduce --from`", path=path)
    return InputError(
        "not a mamf-finder output (no progress line, no 'best outcome' summary, no MAMF headline): "
        "`rigcheck bench matmul --from` reads those (the first --from file is the measurement, the others "
        "describe the machine)",
        path=path,
    )

"""`rigcheck bench p2p | membw | hostlink --from FILE`: an nvbandwidth or p2pBandwidthLatencyTest output read,
nothing run (no GPU needed), each figure beside its link's ceiling and judged against verify's band.

The first ``--from`` file that is one of these tools' output is the measurement; the others describe the machine
(`nvidia-smi -q`, `topo -m`, a snapshot...), read with every command's ``--from`` machinery and combined as
`doctor --from A --from B` combines them. ``--model NAME`` names the GPU model instead (``--gpu``, its former
name, still works).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from rigcheck.cli.bench_common import described_machine, refuse_given
from rigcheck.errors import InputError, UsageError

if TYPE_CHECKING:
    from rigcheck.readers.reference.reference_import import Command
    from rigcheck.report.bench.render import BenchDoc

FromOption = Annotated[
    list[Path] | None,
    typer.Option(
        "--from",
        help="Read nvbandwidth (text or -j JSON) or p2pBandwidthLatencyTest output instead of measuring; '-' is "
        "stdin. Repeat it to add the machine (nvidia-smi -q, topo -m, a snapshot) for the links' ceilings.",
        show_default=False,
    ),
]
GpuModelOption = Annotated[
    str | None, typer.Option("--model", help='With --from: the GPU model, a catalog name ("H100 SXM5").')
]
MEASUREMENT = "nvbandwidth, p2pBandwidthLatencyTest or bandwidthTest output, or a machine description"


def given_options(ctx: typer.Context, *names: str) -> list[str]:
    """The options among ``names`` (parameter names) that the command line or the environment set, each by its
    first name ("-i/--id" where that is a short one)."""
    given = []
    for param in ctx.command.params:
        if param.name in names and param.name is not None:
            source = ctx.get_parameter_source(param.name)
            if source is not None and source.name in {"COMMANDLINE", "ENVIRONMENT"}:
                short = bool(param.opts) and not param.opts[0].startswith("--")
                given.append("/".join(param.opts) if short else param.opts[0] if param.opts else param.name)
    return given


def refuse_live_options(ctx: typer.Context, *names: str) -> None:
    """A live-run option beside --from: one usage line naming them."""
    refuse_given(given_options(ctx, *names))


def _not_a_measurement(path: str, text: str, command: Command) -> InputError:
    from rigcheck.readers.reference.nccl_tests import looks_like_nccl_tests

    if looks_like_nccl_tests(text):
        return InputError(
            "holds nccl-tests output: read it with `rigcheck bench allreduce --from` (or its collective)", path=path
        )
    from rigcheck.readers.reference.reference_import import other_reader

    if (reader := other_reader(text)) is not None:
        return InputError(f"holds {reader}", path=path)
    return InputError(
        f"not nvbandwidth, p2pBandwidthLatencyTest or bandwidthTest output: `rigcheck bench {command} --from` reads "
        "those (the "
        "first --from file is the measurement, the others describe the machine)",
        path=path,
    )


def imported_document(command: Command, files: Sequence[Path], *, gpu: str | None) -> BenchDoc:
    """The document of the tool output among ``files``, its ceilings and judgement from the machine the others
    describe (and ``gpu``)."""
    from rigcheck.checks.reference.judge import Machine, judge
    from rigcheck.checks.verify.bands import resolve_gpu
    from rigcheck.inputs import read_input_text
    from rigcheck.readers.reference.reference_import import detect_tool, read_tool_output, wrong_tool

    named = resolve_gpu(gpu, "--model") if gpu is not None else None  # a bad name is refused before any file is read
    paths = [str(f) for f in files]
    if paths.count("-") > 1:
        raise UsageError("standard input can be read only once ('-' is given more than once)")
    texts = [(path, read_input_text(path, MEASUREMENT, allow_empty=i > 0)) for i, path in enumerate(paths)]
    from rigcheck.readers.reference.bandwidth_test import looks_like_bandwidth_test

    def is_measurement(text: str) -> bool:
        return detect_tool(text) is not None or looks_like_bandwidth_test(text)

    measured = [i for i, (_, text) in enumerate(texts) if text and is_measurement(text)]
    if not measured:
        path, text = texts[0]
        raise _not_a_measurement(path, text, command)
    if len(measured) > 1:
        first, second = (texts[i][0] for i in measured[:2])
        raise UsageError(f"two tool outputs ({first} and {second}): give one per command, then the machine's files")
    at = measured[0]
    path, text = texts[at]
    if detect_tool(text) is None:  # the CUDA sample bandwidthTest
        from rigcheck.model.bench import MembwDocument
        from rigcheck.readers.reference.bandwidth_test import parse_bandwidth_test
        from rigcheck.readers.reference.bandwidth_test_doc import bandwidth_test_document

        run = parse_bandwidth_test(text, path)
        sample = bandwidth_test_document(command, run, path)
        machine = described_machine([part for i, part in enumerate(texts) if i != at])
        judged = judge(sample, Machine(machine, named, {d.index: (d.name, d.bus_id) for d in run.devices}))
        if isinstance(judged, MembwDocument):
            from rigcheck.readers.reference.bandwidth_test_doc import unjudge_device_copies

            return unjudge_device_copies(judged)
        return judged
    output = read_tool_output(text, path)
    assert output is not None
    error = wrong_tool(output, command)
    if error is not None:
        raise error
    snapshot = described_machine([part for i, part in enumerate(texts) if i != at])
    from rigcheck.readers.reference import reference_import as ri

    doc: BenchDoc
    if command == "membw":
        doc = ri.membw_document(output)
    elif command == "hostlink":
        doc = ri.hostlink_document(output)
    else:
        doc = ri.p2p_document(output)
    devices: dict[int, tuple[str | None, str | None]] = {d.index: (d.name, d.bus_id) for d in output.run.devices}
    return judge(doc, Machine(snapshot, named, devices))

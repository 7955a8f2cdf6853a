"""`rigcheck bench allreduce | allgather | reducescatter | broadcast --from FILE`: nccl-tests output read, nothing run.

The first ``--from`` file that is nccl-tests output is the measurement; the others describe the machine
(`nvidia-smi topo -m`, `-q`, a snapshot...), read with every command's ``--from`` machinery and combined as
`doctor --from A --from B` combines them. ``--link``, ``--pcie`` and ``--model`` name the link instead; ``--nics``
each node's NICs, which a run across hosts is judged against.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, cast, get_args

import typer

from rigcheck.cli.bench_common import described_machine
from rigcheck.errors import UsageError

if TYPE_CHECKING:
    from rigcheck.model.bench import CollectiveDocument

FromOption = Annotated[
    list[Path] | None,
    typer.Option(
        "--from",
        help="Read nccl-tests output (all_reduce_perf ...) instead of running; '-' is stdin. Repeat it to add the "
        "machine (nvidia-smi topo -m, -q, a snapshot): each figure is then shown beside its link's ceiling.",
        metavar="FILE",
        show_default=False,
    ),
]
LinkOption = Annotated[
    str | None,
    typer.Option("--link", help="With --from: the link the ranks ran over, as topo -m names it (NV18, PIX, SYS...)."),
]
PcieOption = Annotated[
    str | None, typer.Option("--pcie", help="With --from: the GPUs' PCIe link, gen<N>x<width> (gen4x16).")
]
ModelOption = Annotated[
    str | None, typer.Option("--model", help='With --from: the GPU model, a catalog name ("H100 SXM5").')
]
NicsOption = Annotated[
    str | None,
    typer.Option(
        "--nics",
        help="With --from: each node's RDMA NICs as N x Gb/s (8x400); a run across hosts is judged against their "
        "aggregate (default: the machine description's active ports, else the smallest published fabric of the "
        "GPUs' node class, 4x200 for 8x H100; 1x100 for a GPU not known).",
        metavar="NxRATE",
    ),
]
MEASUREMENT = "nccl-tests output (all_reduce_perf ...) or a machine description"


def imported_document(
    op: str,
    files: Sequence[Path],
    *,
    link: str | None,
    pcie: str | None,
    gpu: str | None,
    nics: str | None = None,
) -> CollectiveDocument:
    """The document of the nccl-tests output among ``files``, with the machine the others describe."""
    from rigcheck.inputs import read_input_text
    from rigcheck.model.bench import CollectiveOp
    from rigcheck.readers.reference.nccl_tests import (
        add_log_evidence,
        looks_like_nccl_log,
        looks_like_nccl_tests,
        parse_nccl_tests,
    )
    from rigcheck.readers.reference.nccl_tests_doc import collective_document, parse_link

    if op not in get_args(CollectiveOp):
        raise UsageError(f"unknown collective {op!r}")
    choice = parse_link(link, pcie, gpu, nics)  # a bad option is refused before any file is read
    paths = [str(f) for f in files]
    if paths.count("-") > 1:
        raise UsageError("standard input can be read only once ('-' is given more than once)")
    texts = [(path, read_input_text(path, MEASUREMENT, allow_empty=i > 0)) for i, path in enumerate(paths)]
    measured = [i for i, (_, text) in enumerate(texts) if text and looks_like_nccl_tests(text)]
    if len(measured) > 1:
        first, second = (texts[i][0] for i in measured[:2])
        raise UsageError(f"two nccl-tests outputs ({first} and {second}): give one per command")
    at = measured[0] if measured else 0  # none: the first file is read as one, and its error says what it lacks
    path, text = texts[at]
    run = parse_nccl_tests(text, path)
    # An NCCL_DEBUG=INFO log of the run given beside it says whether NVLS ran; the rest describe the machine.
    logs = [i for i, (_, body) in enumerate(texts) if i != at and body and looks_like_nccl_log(body)]
    for i in logs:
        add_log_evidence(run, texts[i][1])
        run.notes.append(f"{texts[i][0]}: read as the run's NCCL log (NVLS state, NCCL version)")
    snapshot = described_machine([part for i, part in enumerate(texts) if i != at and i not in logs])
    return collective_document(run, op=cast("CollectiveOp", op), path=path, snapshot=snapshot, choice=choice)

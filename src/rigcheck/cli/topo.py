"""`rigcheck topo`: the GPU interconnect matrix, explained pair by pair."""

from __future__ import annotations

from typing import Annotated

import typer

from rigcheck.cli.common import (
    FromOption,
    GpusOption,
    IdOption,
    IndentOption,
    JsonOption,
    emit,
    json_indent,
    load_snapshot,
)
from rigcheck.cli.nogpu import NO_TOPOLOGY, stop
from rigcheck.errors import InputError
from rigcheck.model.topo import snapshot_topo_document
from rigcheck.report.render import Format, RenderOptions


def topo(
    source: FromOption = None,
    as_json: JsonOption = False,
    indent: IndentOption = None,
    matrix: Annotated[
        bool, typer.Option("--matrix", help="Show the full GPU matrix above 16 GPUs (else a summary).")
    ] = False,
    gpus_text: GpusOption = None,
    gpu_ids: IdOption = None,
) -> None:
    """Show how the GPUs are connected (NVLink, PCIe switch, host bridge, NUMA) and what it means.

    FILE for --from is a saved `nvidia-smi topo -m` or a rigcheck snapshot (repeat --from to combine outputs).
    """
    snap = load_snapshot(source, announce_absent=False, gpus=gpus_text, ids=gpu_ids)
    doc = snapshot_topo_document(snap)
    if doc is None:  # neither a `topo -m` table nor a GPU
        if not source:
            stop(snap, NO_TOPOLOGY)  # the no-GPU rule (cli/nogpu.py)
        raise InputError("no GPUs in this input, so no topology to show", path=", ".join(map(str, source)))
    emit(
        doc, Format.JSON if as_json else Format.TERMINAL, RenderOptions(full_matrix=matrix, indent=json_indent(indent))
    )

"""`rigcheck topo`: the GPU interconnect matrix, explained pair by pair."""

from __future__ import annotations

import typer

from rigcheck.cli.common import FromOption, JsonOption, emit, load_snapshot, note
from rigcheck.cli.exits import EXIT_PROBLEMS
from rigcheck.errors import InputError
from rigcheck.model.topo import snapshot_matrix, topo_document
from rigcheck.report.render import Format


def topo(source: FromOption = None, as_json: JsonOption = False) -> None:
    """Show how the GPUs are connected (NVLink, PCIe switch, host bridge, NUMA) and what it means.

    FILE for --from is a saved `nvidia-smi topo -m` or a rigcheck snapshot.
    """
    snap = load_snapshot(source, announce_absent=False)
    matrix = snapshot_matrix(snap)
    if matrix is None:  # neither a `topo -m` table nor a GPU
        if source is None:
            note(
                f"no NVIDIA GPU visible: {snap.gpu_absent_reason or 'NVML lists none'}; no topology to show "
                "(read a saved one with --from FILE)"
            )
            raise typer.Exit(EXIT_PROBLEMS)
        raise InputError("no GPUs in this input, so no topology to show", path=str(source))
    emit(topo_document(matrix, snap.pairs), Format.JSON if as_json else Format.TERMINAL)

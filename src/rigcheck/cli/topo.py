"""`rigcheck topo`: the GPU interconnect matrix, explained pair by pair."""

from __future__ import annotations

import typer

from rigcheck.cli.common import FromOption, JsonOption, load_snapshot, note, out_console, print_json
from rigcheck.errors import InputError
from rigcheck.model import TopoGpu
from rigcheck.report.topology import render_topology, topology_from_pairs, topology_to_dict


def topo(source: FromOption = None, as_json: JsonOption = False) -> None:
    """Show how the GPUs are connected (NVLink, PCIe switch, host bridge, NUMA) and what it means.

    FILE for --from is a saved `nvidia-smi topo -m` or a rigcheck snapshot.
    """
    snap = load_snapshot(source, announce_absent=False)
    topo_matrix = snap.topology
    if topo_matrix is None:
        if source is None and not snap.gpus:
            note(
                f"no NVIDIA GPU visible: {snap.gpu_absent_reason or 'NVML lists none'}; no topology to show "
                "(read a saved one with --from FILE)"
            )
            raise typer.Exit(1)
        if not snap.gpus:
            raise InputError("no GPUs in this input, so no topology to show", path=str(source))
        gpus = [
            TopoGpu(
                index=g.index,
                cpu_affinity=g.cpu_affinity,
                numa_affinity=str(g.numa_node) if g.numa_node is not None else None,
            )
            for g in snap.gpus
        ]
        topo_matrix = topology_from_pairs(len(snap.gpus), snap.pairs, gpus)
    if as_json:
        print_json(topology_to_dict(topo_matrix, snap.pairs))
    else:
        out_console().print(render_topology(topo_matrix, snap.pairs))

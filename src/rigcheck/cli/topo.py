"""`rigcheck topo`: the GPU interconnect matrix, explained pair by pair."""

from __future__ import annotations

from rigcheck.cli.common import FromOption, JsonOption, load_snapshot, out_console, print_json
from rigcheck.errors import InputError
from rigcheck.model import TopoGpu
from rigcheck.report.topology import render_topology, topology_from_pairs, topology_to_dict


def topo(source: FromOption = None, as_json: JsonOption = False) -> None:
    """Show how the GPUs are connected (NVLink, PCIe switch, host bridge, NUMA) and what it means.

    FILE for --from is a saved `nvidia-smi topo -m` or a rigcheck snapshot.
    """
    snap = load_snapshot(source)
    topo_matrix = snap.topology
    if topo_matrix is None:
        if not snap.gpus:
            where = str(source) if source is not None else "this machine"
            raise InputError("no GPU topology to show", path=where)
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

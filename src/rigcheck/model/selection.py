"""``--gpus 0,2``: a snapshot narrowed to some of its GPUs, so checks and reports see only those.

Per-GPU facts (records, pairs, matrix rows and columns, PCIe paths, diagnostics, kernel-log lines naming a GPU)
of the GPUs left out are dropped; node facts (host, software, driver, NICs, switches, kernel lines naming no
GPU) stay. A GPU keeps its own NVLink records even where the far end was left out: they are its hardware; the
NVLink pairs drawn from them (model/links.py) join selected GPUs only, since a pair needs both GPUs present.
"""

from __future__ import annotations

from collections.abc import Sequence

from rigcheck.errors import UsageError
from rigcheck.facts.xid import bus_key
from rigcheck.model.snapshot import Snapshot, TopoMatrix


def gpu_indices(snap: Snapshot) -> list[int]:
    """The GPU indices a snapshot knows: its GPU records, else the rows of its `topo -m` table."""
    known = {g.index for g in snap.gpus}
    if snap.topology is not None:
        known.update(g.index for g in snap.topology.gpus)
        known.update(int(label[3:]) for label in snap.topology.labels if _gpu_label(label))
    return sorted(known)


def _gpu_label(label: str) -> bool:
    return label.startswith("GPU") and label[3:].isdigit()


def _narrow_matrix(topology: TopoMatrix, keep: set[int]) -> TopoMatrix:
    rows = [i for i, label in enumerate(topology.labels) if not _gpu_label(label) or int(label[3:]) in keep]
    return topology.model_copy(
        update={
            "labels": [topology.labels[i] for i in rows],
            "matrix": [[topology.matrix[i][j] for j in rows if j < len(topology.matrix[i])] for i in rows],
            "gpus": [g for g in topology.gpus if g.index in keep],
        }
    )


def select_gpus(snap: Snapshot, indices: Sequence[int]) -> Snapshot:
    """A copy of ``snap`` holding only the GPUs ``indices`` (and the pairs among them), with
    ``gpu_selection`` set; an index the snapshot lacks is a UsageError naming the GPUs there are."""
    present = gpu_indices(snap)
    absent = [i for i in indices if i not in present]
    if absent:
        there = ", ".join(map(str, present)) if present else "none"
        raise UsageError(f"--gpus: no GPU {', '.join(map(str, absent))} in this snapshot; the GPUs here are {there}")
    keep = set(indices)
    gpus = [g for g in snap.gpus if g.index in keep]
    dropped_buses = {k for g in snap.gpus if g.index not in keep and g.pci_bus_id and (k := bus_key(g.pci_bus_id))}
    system = snap.system.model_copy(
        update={
            "pcie_paths": {
                bus: path for bus, path in snap.system.pcie_paths.items() if bus_key(bus) not in dropped_buses
            }
        }
    )
    update: dict[str, object] = {
        "gpus": gpus,
        "pairs": [p for p in snap.pairs if p.a in keep and p.b in keep],
        "topology": None if snap.topology is None else _narrow_matrix(snap.topology, keep),
        "system": system,
        "diagnostics": [d for d in snap.diagnostics if d.gpu is None or d.gpu in keep],
        "kernel_events": [
            e for e in snap.kernel_events if e.pci_bus_id is None or bus_key(e.pci_bus_id) not in dropped_buses
        ],
        "gpu_selection": sorted(keep),
    }
    return snap.model_copy(update=update)

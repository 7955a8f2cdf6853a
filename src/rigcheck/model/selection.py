"""``--gpus 0,2`` and ``-i`` (nvidia-smi's GPU ids): a snapshot narrowed to some of its GPUs, so checks and reports
see only those.

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


# How many GPUs an -i error lists before it stops: the line stays one line on a 512-GPU snapshot.
_LISTED = 4


def resolve_ids(snap: Snapshot, text: str) -> list[int]:
    """``-i/--id`` as nvidia-smi reads it, resolved against ``snap``: a comma list of GPU indices, UUIDs
    (``GPU-…``, or a prefix of one that only one GPU has) and PCI bus ids (``00000000:3B:00.0``, ``0000:3b:00.0``,
    ``3b:00.0``). The indices, sorted; an id that names no GPU or several is a UsageError naming it and the GPUs
    there are."""
    ids = [part.strip() for part in text.split(",") if part.strip()]
    if not ids:
        raise UsageError(f"-i/--id takes a GPU index, UUID or PCI bus id (a comma list of them), not {text!r}")
    chosen: set[int] = set()
    for gpu_id in ids:
        matches = _matches(snap, gpu_id)
        if len(matches) != 1:
            raise UsageError(_unresolved(snap, gpu_id, matches))
        chosen.add(matches[0])
    return sorted(chosen)


def _matches(snap: Snapshot, gpu_id: str) -> list[int]:
    if gpu_id.isdigit():
        return [int(gpu_id)] if int(gpu_id) in gpu_indices(snap) else []
    if gpu_id.upper().startswith("GPU-"):
        prefix = gpu_id.lower()
        return sorted({g.index for g in snap.gpus if g.uuid and g.uuid.lower().startswith(prefix)})
    key = _bus_of(gpu_id)
    if key is None:
        return []
    return sorted({g.index for g in snap.gpus if g.pci_bus_id and bus_key(g.pci_bus_id) == key})


def _bus_of(gpu_id: str) -> str | None:
    """The sysfs spelling of a bus id in any of nvidia-smi's forms ("3b:00.0" has no domain: domain 0)."""
    if gpu_id.count(":") == 1:
        gpu_id = "0000:" + gpu_id
    return bus_key(gpu_id) if ":" in gpu_id else None


def _unresolved(snap: Snapshot, gpu_id: str, matches: list[int]) -> str:
    if len(matches) > 1:
        return f"-i: {gpu_id!r} matches GPUs {', '.join(map(str, matches))}; give more of the UUID"
    if gpu_id.isdigit() or gpu_id.upper().startswith("GPU-") or _bus_of(gpu_id) is not None:
        return f"-i: no GPU here has the id {gpu_id!r}; the GPUs here are {_listing(snap)}"
    return (
        f"-i: {gpu_id!r} is not a GPU index, UUID (GPU-...) or PCI bus id (00000000:3B:00.0); "
        f"the GPUs here are {_listing(snap)}"
    )


def _listing(snap: Snapshot) -> str:
    records = {g.index: g for g in snap.gpus}
    indices = gpu_indices(snap)
    if not indices:
        return "none"
    shown = []
    for index in indices[:_LISTED]:
        gpu = records.get(index)
        names = [n for n in (gpu.uuid, gpu.pci_bus_id) if n] if gpu is not None else []
        shown.append(f"{index} ({', '.join(names)})" if names else str(index))
    more = len(indices) - _LISTED
    return "; ".join(shown) + (f"; and {more} more" if more > 0 else "")

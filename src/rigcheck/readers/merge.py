"""`--from A --from B …`: several saved outputs of one machine as one snapshot.

Each output holds part of the picture: `nvidia-smi -q -x` the power, temperatures and PCIe links, `topo -m`
the GPU-to-GPU links, `nvlink -s` the NVLink speeds, `topo -p2p` the P2P status. GPUs are matched by PCI bus
id where both files have one, else by UUID, else by index (nvidia-smi numbers GPUs alike in all its
outputs); pairs by their two GPUs, NVLinks by link number, NICs by label. Field by field, merge_fields.py
decides: the first file's value wins and a disagreement is a Diagnostic naming both files.

Nothing is dropped silently: an empty file, a file that adds nothing, a GPU only some files list and a GPU
that cannot be placed each get a Diagnostic. Outputs of two machines (host names differ, or no GPU in common
by bus id or UUID) are refused with one InputError naming both files.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rigcheck.errors import InputError
from rigcheck.model.snapshot import Diagnostic, Gpu, Nic, Record, Snapshot, Source
from rigcheck.readers.merge_fields import Merger, best_reason, bus_id_key


@dataclass(frozen=True)
class Part:
    """One --from file: its path as given and what was read from it (None: the file was empty)."""

    path: str
    snapshot: Snapshot | None


def merge_snapshots(parts: Sequence[Part]) -> Snapshot:
    """One snapshot from several files of one machine; InputError when they are of different machines."""
    read = [p for p in parts if p.snapshot is not None]
    if not read:
        raise InputError("every file is empty: " + ", ".join(p.path for p in parts))
    first = read[0]
    assert first.snapshot is not None
    merged = first.snapshot.model_copy(deep=True)
    merger = Merger(first.path)
    merged.diagnostics = _tagged(first.path, first.snapshot.diagnostics, {})
    placed: dict[str, set[int]] = {first.path: {g.index for g in merged.gpus}}
    seen = {first.path}
    for part in read[1:]:
        if part.path in seen:
            merger.note(f"{part.path} is given twice; read once")
            continue
        seen.add(part.path)
        assert part.snapshot is not None
        _refuse_other_machine(merged, merger, part.path, part.snapshot)
        _refuse_other_bus(merged, merger, part.path, part.snapshot)
        index_map = _merge_gpus(merged, merger, part.path, part.snapshot)
        placed[part.path] = {i for i in index_map.values() if i is not None}
        _merge_pairs(merged, merger, part.path, part.snapshot, index_map)
        _merge_tables(merged, merger, part.path, part.snapshot, index_map)
        _merge_rest(merged, merger, part.path, part.snapshot)
        merged.diagnostics += _tagged(part.path, part.snapshot.diagnostics, index_map)
    for part in parts:
        if part.snapshot is None:
            merger.note(
                f"{part.path} is empty: nothing read from it (`nvidia-smi nvlink -s` prints nothing on a machine "
                "without NVLink; a failed capture is empty too)"
            )
    _absent_gpus(merged, merger, read)
    _coverage(merged, merger, read, placed)
    for path in sorted(seen - merger.contributed, key=[p.path for p in read].index):
        merger.note(f"{path} adds nothing: what it holds was already read from the files before it")
    merged.source = Source(kind="combined", parts=[_source(p) for p in parts])
    merged.diagnostics += merger.diagnostics
    return merged


def _source(part: Part) -> Source:
    if part.snapshot is None:
        return Source(kind="none", path=part.path)  # an empty file: no kind to tell
    return part.snapshot.source.model_copy(deep=True)


def _bus_id(gpu: Gpu) -> str | None:
    return bus_id_key(gpu.pci_bus_id) if gpu.pci_bus_id else None


def _uuid(gpu: Gpu) -> str | None:
    return gpu.uuid.strip().lower() if gpu.uuid else None


_KEYS: tuple[tuple[str, str, Callable[[Gpu], str | None]], ...] = (
    ("PCI bus id", "pci_bus_id", _bus_id),
    ("UUID", "uuid", _uuid),
)


def _identity(gpu: Gpu) -> str:
    return gpu.pci_bus_id or gpu.uuid or gpu.name or "no bus id"


def _short_host(name: str) -> str:
    return name.split(".", maxsplit=1)[0].lower()


def _refuse_other_machine(merged: Snapshot, merger: Merger, path: str, other: Snapshot) -> None:
    ours, theirs = merged.host.hostname, other.host.hostname
    if ours and theirs and _short_host(ours) != _short_host(theirs):
        origin = merger.origin("host", "hostname")
        raise InputError(
            f"{origin} is from host {ours!r} and {path} from host {theirs!r}: outputs of different machines "
            "are not combined"
        )
    compared: tuple[str, str] | None = None
    for label, field, key in _KEYS:
        mine = {k: g for g in merged.gpus if (k := key(g)) is not None}
        yours = {k for g in other.gpus if (k := key(g)) is not None}
        if mine and yours:
            if mine.keys() & yours:
                return
            held_by = next(iter(mine.values()))
            compared = compared or (label, merger.origin(f"GPU{held_by.index}", field))
    if compared is not None:
        label, origin = compared
        raise InputError(
            f"{origin} and {path} have no GPU in common (by {label}): outputs of different machines are not combined"
        )


# Outputs whose GPUs are NVML's listing (nvidia-smi's), each of which is on the PCI bus lspci shows.
_NVML_LISTINGS = frozenset({"nvml", "nvidia-smi-q", "nvidia-smi-xml", "nvidia-smi-table"})


def _refuse_other_bus(merged: Snapshot, merger: Merger, path: str, other: Snapshot) -> None:
    """`lspci` beside nvidia-smi's listing: a GPU NVML lists is a GPU of the bus, so an lspci naming none of them
    (by bus id) is of another machine, and would fail GPUs of that one here."""
    sides = ((merged, other, merger.first_path, path), (other, merged, path, merger.first_path))
    for listing, bus, listing_path, bus_path in sides:
        if listing.source.kind not in _NVML_LISTINGS or bus.source.kind != "lspci" or bus.driver is None:
            continue
        listed = {k for g in listing.gpus if (k := _bus_id(g)) is not None}
        on_bus = {bus_id_key(p.bdf) for p in bus.driver.pci_gpus or []}
        if listed and on_bus and not listed & on_bus:
            raise InputError(
                f"{listing_path} and {bus_path} have no GPU in common (by PCI bus id): outputs of different "
                "machines are not combined"
            )


def _match(gpus: list[Gpu], gpu: Gpu) -> Gpu | None:
    """The GPU already read that ``gpu`` is: same bus id, else same UUID, else same index unless they differ."""
    for _, _, key in _KEYS:
        k = key(gpu)
        if k is not None:
            found = next((g for g in gpus if key(g) == k), None)
            if found is not None:
                return found
    same_index = next((g for g in gpus if g.index == gpu.index), None)
    if same_index is None:
        return None
    for _, _, key in _KEYS:
        mine, yours = key(same_index), key(gpu)
        if mine is not None and yours is not None and mine != yours:
            return None
    return same_index


def _merge_gpus(merged: Snapshot, merger: Merger, path: str, other: Snapshot) -> dict[int, int | None]:
    """Merge ``other``'s GPUs in; its GPU index -> the merged one (None: left out, with a Diagnostic)."""
    index_map: dict[int, int | None] = {}
    for gpu in other.gpus:
        target = _match(merged.gpus, gpu)
        if target is None:
            holder = merged.gpu(gpu.index)
            if holder is not None:
                merger.note(
                    f"GPU{gpu.index} of {path} ({_identity(gpu)}) is not GPU{gpu.index} of "
                    f"{merger.origin(f'GPU{gpu.index}')} ({_identity(holder)}): left out",
                    gpu.index,
                )
                index_map[gpu.index] = None
                continue
            merged.gpus.append(gpu.model_copy(deep=True))
            merger.adopt(f"GPU{gpu.index}", path)
            for link in gpu.nvlinks or []:
                merger.adopt(f"GPU{gpu.index} link {link.link}", path)
            index_map[gpu.index] = gpu.index
            continue
        scope = f"GPU{target.index}"
        index_map[gpu.index] = target.index
        if gpu.index != target.index:
            merger.note(
                f"{scope} ({_identity(target)}) is GPU{gpu.index} in {path}; numbered as in {merger.origin(scope)}",
                target.index,
            )
        merger.merge(target, gpu, scope=scope, path=path, gpu=target.index, skip=("index", "nvlinks"))
        _merge_links(target, gpu, merger, scope, path)
    merged.gpus.sort(key=lambda g: g.index)
    return index_map


def _merge_links(target: Gpu, gpu: Gpu, merger: Merger, scope: str, path: str) -> None:
    if gpu.nvlinks is None:
        if target.nvlinks is None:
            reason = best_reason(target.missing.get("nvlinks"), gpu.missing.get("nvlinks"))
            if reason is not None and reason != target.missing.get("nvlinks"):
                target.missing["nvlinks"] = reason
                merger.contributed.add(path)
        return
    if target.nvlinks is None:
        merger.take(target, "nvlinks", gpu.nvlinks, scope, path)
        for link in gpu.nvlinks:
            merger.adopt(f"{scope} link {link.link}", path)
        return
    by_number = {link.link: link for link in target.nvlinks}
    for link in gpu.nvlinks:
        link_scope = f"{scope} link {link.link}"
        if link.link in by_number:
            merger.merge(by_number[link.link], link, scope=link_scope, path=path, gpu=target.index, skip=("link",))
        else:
            target.nvlinks.append(link.model_copy(deep=True))
            merger.adopt(link_scope, path)
    target.nvlinks.sort(key=lambda link: link.link)


def _merge_pairs(
    merged: Snapshot, merger: Merger, path: str, other: Snapshot, index_map: dict[int, int | None]
) -> None:
    for pair in other.pairs:
        a, b = index_map.get(pair.a, pair.a), index_map.get(pair.b, pair.b)
        if a is None or b is None:
            continue  # a GPU left out: its Diagnostic says so
        lo, hi = min(a, b), max(a, b)
        scope = f"GPU{lo}-GPU{hi}"
        kept = merged.pair(lo, hi)
        if kept is None:
            merged.pairs.append(pair.model_copy(deep=True, update={"a": lo, "b": hi}))
            merger.adopt(scope, path)
        else:
            merger.merge(kept, pair, scope=scope, path=path, skip=("a", "b"))
    merged.pairs.sort(key=lambda p: (p.a, p.b))


# Snapshot fields merged by their own rule; every other field by _merge_rest's generic one.
_OWN_RULE = frozenset(
    {"schema_", "source", "gpus", "pairs", "topology", "nics", "system", "diagnostics", "gpu_absent_reason"}
)


def _merge_tables(
    merged: Snapshot, merger: Merger, path: str, other: Snapshot, index_map: dict[int, int | None]
) -> None:
    """The topology matrix, NICs and the host's PCIe facts."""
    if other.topology is not None:
        if merged.topology is None:
            merged.topology = other.topology.model_copy(deep=True)
            merger.adopt("topology", path)
            if any(k != v for k, v in index_map.items()):
                merger.note(f"{path} numbers its GPUs unlike the files before it; its `topo -m` matrix is as printed")
        elif merged.topology != other.topology:
            origin = merger.origin("topology")
            merger.note(f"the `topo -m` matrices of {origin} and {path} differ; kept {origin}'s")
    _merge_nics(merged.nics, other.nics, merger, path)
    system, theirs = merged.system, other.system
    if theirs.iommu != "unknown":
        if system.iommu == "unknown":
            merger.take(system, "iommu", theirs.iommu, "system", path)
        elif system.iommu != theirs.iommu:
            origin = merger.origin("system", "iommu")
            merger.note(f"system iommu: {system.iommu} in {origin}, {theirs.iommu} in {path}; kept {origin}'s")
    merger.merge(system, theirs, scope="system", path=path, skip=("iommu", "pcie_paths"))
    for bus_id, hops in theirs.pcie_paths.items():
        if bus_id not in system.pcie_paths:
            system.pcie_paths[bus_id] = copy.deepcopy(hops)
            merger.contributed.add(path)


def _merge_rest(merged: Snapshot, merger: Merger, path: str, other: Snapshot) -> None:
    """Every other field (host, software, missing_functions, and any added later): records field by field, lists
    as their union, anything else from the first file that has it."""
    for name in type(merged).model_fields:
        mine, yours = getattr(merged, name), getattr(other, name)
        if name in _OWN_RULE or yours is None or (isinstance(yours, list | dict) and not yours):
            continue
        if mine is None:
            merger.take(merged, name, yours, name, path)
            merger.adopt(name, path)
        elif isinstance(mine, Record) and isinstance(yours, Record):
            merger.merge(mine, yours, scope=name, path=path)
        elif isinstance(mine, list) and isinstance(yours, list):
            new = [copy.deepcopy(item) for item in yours if item not in mine]
            if new:
                mine += new
                merger.contributed.add(path)
        elif isinstance(mine, dict) and isinstance(yours, dict):
            for key, value in yours.items():
                if key not in mine:
                    mine[key] = copy.deepcopy(value)
                    merger.contributed.add(path)
        elif name != "created_at" and mine != yours:  # outputs are taken at different times: not a conflict
            origin = merger.origin(name)
            merger.note(f"{name}: {mine} in {origin}, {yours} in {path}; kept {origin}'s")


def _merge_nics(nics: list[Nic], other: list[Nic], merger: Merger, path: str) -> None:
    for nic in other:
        kept = next((n for n in nics if n.label == nic.label), None)
        if kept is None:
            nics.append(nic.model_copy(deep=True))
            merger.adopt(nic.label, path)
        else:
            merger.merge(kept, nic, scope=nic.label, path=path, skip=("label",))


def _absent_gpus(merged: Snapshot, merger: Merger, read: Sequence[Part]) -> None:
    """A file that says "no GPU" beside files that list GPUs: a Diagnostic, since the two cannot both be now."""
    reasons = [(p.path, p.snapshot.gpu_absent_reason) for p in read if p.snapshot and p.snapshot.gpu_absent_reason]
    if not merged.gpus:
        merged.gpu_absent_reason = reasons[0][1] if reasons else None
        return
    merged.gpu_absent_reason = None
    for path, reason in reasons:
        merger.note(f"{path} says no GPU is visible ({reason}) while the other files list GPUs")


def _coverage(merged: Snapshot, merger: Merger, read: Sequence[Part], placed: dict[str, set[int]]) -> None:
    """A file that lists GPUs but not all of them: say which, so that their gaps are not a surprise."""
    everyone = {g.index for g in merged.gpus}
    for part in read:
        held = placed.get(part.path)
        if not held:
            continue
        lacking = sorted(everyone - held)
        if lacking:
            names = ", ".join(f"GPU{i}" for i in lacking)
            merger.note(
                f"{part.path} holds no {names}: what is known of {'it' if len(lacking) == 1 else 'them'} "
                "comes from the other files"
            )


def _tagged(path: str, diagnostics: list[Diagnostic], index_map: dict[int, int | None]) -> list[Diagnostic]:
    """A file's own diagnostics, prefixed with its name and numbered as the merged GPUs."""
    return [
        Diagnostic(
            source=d.source,
            message=f"{path}: {d.message}",
            gpu=index_map.get(d.gpu, d.gpu) if d.gpu is not None else None,
        )
        for d in diagnostics
    ]

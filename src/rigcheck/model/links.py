"""What the GPUs' own NVLink state says about the pairs, for inputs without a topology matrix, and whether the
NVLink pairs close a ring through every GPU (what NCCL needs to keep a collective on NVLink).

`nvidia-smi nvlink -s` lists each GPU's links and their speed but not where they go; NVML adds each link's
remote PCI address and device type. A pair is counted as NVLink from link state only where that is certain:
- a link whose remote end is another GPU's PCI address joins those two GPUs;
- GPUs whose active links all end at NVSwitches reach each other through the switches (design.md: such a pair
  gets the smaller of the two GPUs' switch-link counts, as `topo -m` prints it);
- on cards whose NVLink is a bridge between two cards (the catalog's ``nvlink_bridge``), when exactly two GPUs
  have active links, the bridge joins those two.
Anything else (an SXM mesh read from `nvlink -s`, several bridged pairs) stays unknown: which GPUs the links
join is not in the input.
"""

from __future__ import annotations

from collections.abc import Iterable

from rigcheck.facts import catalog
from rigcheck.facts.legend import nvlink_count
from rigcheck.facts.pcie import normalize_bdf
from rigcheck.model.snapshot import Gpu, GpuPair

Pair = tuple[int, int]


def _bdf(bus_id: str | None) -> str | None:
    if bus_id is None:
        return None
    try:
        return normalize_bdf(bus_id)
    except ValueError:
        return None


def active_links(gpu: Gpu) -> int:
    return sum(1 for link in gpu.nvlinks or () if link.active)


def _readable(gpus: Iterable[Gpu]) -> list[Gpu]:
    return [g for g in gpus if g.read_error is None]


def _by_remote_gpu(gpus: list[Gpu]) -> dict[Pair, int]:
    by_bus = {b: g.index for g in gpus if (b := _bdf(g.pci_bus_id)) is not None}
    seen: dict[tuple[int, Pair], int] = {}  # (side, pair) -> links counted from that side
    for g in gpus:
        for link in g.nvlinks or ():
            other = by_bus.get(_bdf(link.remote_pci_bus_id) or "")
            if not link.active or other is None or other == g.index:
                continue
            pair = (min(g.index, other), max(g.index, other))
            seen[(g.index, pair)] = seen.get((g.index, pair), 0) + 1
    out: dict[Pair, int] = {}
    for (_, pair), n in seen.items():
        out[pair] = max(out.get(pair, 0), n)  # both ends list the same links; one side may be unreadable
    return out


def _through_switches(gpus: list[Gpu]) -> dict[Pair, int]:
    counts = {}
    for g in gpus:
        active = [link for link in g.nvlinks or () if link.active]
        if active and all(link.remote_device_type == "switch" for link in active):
            counts[g.index] = len(active)
    idx = sorted(counts)
    return {(a, b): min(counts[a], counts[b]) for i, a in enumerate(idx) for b in idx[i + 1 :]}


def _bridged_pair(gpus: list[Gpu]) -> dict[Pair, int]:
    with_links = [g for g in gpus if active_links(g) > 0]
    if len(with_links) != 2:
        return {}
    specs = [catalog.lookup(g.name) if g.name else None for g in with_links]
    if not all(s is not None and s.nvlink_bridge for s in specs):
        return {}
    a, b = with_links
    return {(min(a.index, b.index), max(a.index, b.index)): min(active_links(a), active_links(b))}


def nvlink_pairs_from_state(gpus: Iterable[Gpu]) -> dict[Pair, int]:
    """GPU pairs (lower index first) that the GPUs' link state shows joined by NVLink, with the link count."""
    readable = _readable(gpus)
    for rule in (_by_remote_gpu, _through_switches, _bridged_pair):
        found = rule(readable)
        if found:
            return found
    return {}


def pairs_with_link_state(gpus: list[Gpu], pairs: list[GpuPair]) -> tuple[list[GpuPair], set[Pair]]:
    """The snapshot's pairs with a link, plus the NVLink pairs link state adds where no pair record gives a
    link; and which pairs came from link state."""
    known = {(p.a, p.b): p for p in pairs if p.link is not None}
    inferred = {pair: n for pair, n in nvlink_pairs_from_state(gpus).items() if pair not in known}
    added = [GpuPair(a=a, b=b, link=f"NV{n}", kind="nvlink", nvlinks=n) for (a, b), n in sorted(inferred.items())]
    kept = [p for p in pairs if (p.a, p.b) not in inferred]
    merged = sorted([*kept, *added], key=lambda p: (p.a, p.b))
    return merged, set(inferred)


def link_state_text(gpus: Iterable[Gpu]) -> str | None:
    """``"NVLink state: 6 of 6 links active on each of 8 GPUs"``; None when no GPU reports its links."""
    reported = [g for g in _readable(gpus) if g.nvlinks]
    if not reported:
        return None
    shapes = {(active_links(g), len(g.nvlinks or ())) for g in reported}
    if len(shapes) == 1:
        active, total = next(iter(shapes))
        where = "on each of" if len(reported) > 1 else "on"
        return f"NVLink state: {active} of {total} links active {where} {len(reported)} GPU" + (
            "s" if len(reported) > 1 else ""
        )
    per = ", ".join(f"GPU{g.index} {active_links(g)}/{len(g.nvlinks or ())}" for g in reported)
    return f"NVLink state (active/reported links): {per}"


def nvlink_ring(indices: list[int], nvlink_pairs: Iterable[Pair]) -> bool:
    """Whether NVLink pairs alone close a ring through every GPU in ``indices`` (a Hamiltonian cycle).

    NCCL builds its rings from the fastest paths it finds (NVIDIA/nccl issues #299, #301); where the NVLink
    pairs close such a ring, a collective over all the GPUs never leaves NVLink. Up to 16 GPUs (a box).
    """
    n = len(indices)
    if n < 2 or n > 16:
        return False
    pos = {g: i for i, g in enumerate(indices)}
    adj = [0] * n
    for a, b in nvlink_pairs:
        if a in pos and b in pos and a != b:
            adj[pos[a]] |= 1 << pos[b]
            adj[pos[b]] |= 1 << pos[a]
    if n == 2:
        return bool(adj[0] & 1 << 1)
    # Held-Karp over subsets that contain GPU 0: reach[mask] = the GPUs a path 0 -> ... can end at.
    full = (1 << n) - 1
    reach = [0] * (1 << n)
    reach[1] = 1
    for mask in range(1, full + 1, 2):
        ends = reach[mask]
        if not ends:
            continue
        for v in range(n):
            if ends >> v & 1:
                nxt = adj[v] & ~mask
                while nxt:
                    w = nxt & -nxt
                    reach[mask | w] |= w
                    nxt ^= w
    return any(reach[full] >> v & 1 and adj[v] & 1 for v in range(1, n))


def nvlink_pairs_of(pairs: Iterable[GpuPair]) -> set[Pair]:
    """The pairs whose link is NVLink."""
    return {
        (p.a, p.b)
        for p in pairs
        if p.kind == "nvlink" or (p.link is not None and nvlink_count(p.link)) or (p.nvlinks or 0) > 0
    }

"""`rigcheck bench p2p`: the GPU×GPU copy bandwidth matrix (unidirectional and bidirectional) and latency,
with peer access on and with the copy staged through host memory, beside NVML's P2P status and the link's
theoretical bandwidth.

Modes
- ``peer``: ``dst.copy_(src)`` between two devices of this process; torch enables CUDA peer access for the
  pair when the driver allows it (``torch.cuda.can_device_access_peer``), and the copy then goes GPU to GPU
  (NVLink or PCIe). Where peer access is impossible the driver stages the same copy through the host itself,
  and the row says ``peer_access: false``.
- ``staged``: what a copy costs with peer access off: the data goes GPU→pinned host buffer→GPU, in 16 MiB
  chunks double-buffered so the two hops overlap, as the driver's own staging does.

Timing (p2pBandwidthLatencyTest / nvbandwidth counting: bytes copied once, GB/s = 1e9 bytes per second):
- unidirectional: ``iters`` copies of ``size`` bytes src→dst per round; bidirectional: the same both ways at
  once (each direction on its own streams, so torch's cross-device stream barriers do not serialise them),
  bytes of both directions over the time. Rounds are timed on the host clock between synchronizations of both
  devices (a round lasts milliseconds; events cannot span two devices); median of ``repeats`` rounds.
- latency: ``latency_iters`` copies of 4 bytes; ``peer``: between CUDA events on the copy stream, the stream
  held by a spin kernel while the copies are queued (p2pBandwidthLatencyTest's method, so the host's launch
  time is not counted); ``staged``: host clock over synchronous round trips through the host.

GPUs: every GPU torch sees, rows and matrices named by CUDA index; with --gpus (a ``GpuPlacement``) the GPUs
given, in that order, each found among CUDA's devices by UUID (:func:`cuda_ordinals`), rows named by nvidia-smi
index and ``matrix_gpus`` saying which GPU each matrix row and column is.

The matrix assembly and the table are pure functions over a ``measure(src, dst, mode)`` callback, tested on
CPU with fake measurements; the CUDA measurement needs two GPUs.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from rigcheck.bench.compare import SPEEDUP_FORMULA, speedup_and_ratio
from rigcheck.bench.device.common import MIB, pci_bdf, require_gpus, snapshot_gpu
from rigcheck.bench.env import require_torch, software_versions
from rigcheck.bench.gpu_select import GpuPlacement, cuda_index, same_index_note
from rigcheck.errors import BenchError, UsageError
from rigcheck.facts.nvlink import nvlink_pair_bandwidth_gbps, variant_for
from rigcheck.facts.pcie import PCIE_SOURCE, gpu_pcie_link
from rigcheck.model.bench import (
    Method,
    P2PDocument,
    P2PRow,
    PairComparison,
    PairRow,
    PairsComparison,
    YesNo,
    row_head,
)
from rigcheck.model.snapshot import Gpu, Snapshot

METHOD_VERSION = "p2p-1"
MODES = ("peer", "staged")
DEFAULT_SIZE = 512 * MIB
DEFAULT_ITERS = 5
LATENCY_BYTES = 4
LATENCY_ITERS = 100
STAGING_CHUNK = 16 * MIB
SPIN_CYCLES = 20_000_000  # ~10 ms at 2 GHz: longer than queueing LATENCY_ITERS copies takes the host
CHECK_BYTES = 1 << 16


@dataclass(frozen=True)
class PairMeasurement:
    """Seconds, as measured for one ordered pair and mode."""

    unidirectional_s: list[float]  # per copy of size_bytes, src -> dst
    bidirectional_s: list[float]  # per pair of simultaneous copies (size_bytes each way)
    latency_s: list[float]  # per small copy
    peer_access: bool | None  # whether the pair could use CUDA peer access (None: not asked)
    correct: bool


Measure = Callable[[int, int, str], PairMeasurement]


@dataclass(frozen=True)
class PairFacts:
    """What the snapshot and facts/ say about a pair of GPUs."""

    link: str | None = None  # topo code: NV4, PIX, SYS...
    nvlinks: int | None = None
    nvml_p2p_read: str | None = None
    nvml_p2p_write: str | None = None
    peer_theoretical_gbps: float | None = None  # NVLink where there is NVLink, else PCIe
    peer_theoretical_source: str | None = None
    pcie_theoretical_gbps: float | None = None  # the slower of the two GPUs' PCIe links
    pcie_source: str | None = None


def pair_facts(a: Gpu | None, b: Gpu | None, snap: Snapshot, name: str) -> PairFacts:
    """Link, NVML P2P status and theoretical bandwidths for two GPUs (snapshot records; None when unknown)."""
    links = [gpu_pcie_link(g) for g in (a, b)]
    pcie = [link.gbps if link is not None else None for link in links]
    pcie_gbps = min(x for x in pcie if x is not None) if any(x is not None for x in pcie) else None
    pcie_src = PCIE_SOURCE if pcie_gbps is not None else None
    pair = snap.pair(a.index, b.index) if (a is not None and b is not None) else None
    if pair is None:
        return PairFacts(
            peer_theoretical_gbps=pcie_gbps,
            peer_theoretical_source=pcie_src,
            pcie_theoretical_gbps=pcie_gbps,
            pcie_source=pcie_src,
        )
    peer, peer_src = pcie_gbps, pcie_src
    if pair.nvlinks:
        key = (a.architecture if a is not None and a.architecture else None) or name
        nvl = nvlink_pair_bandwidth_gbps(name, pair.nvlinks) or nvlink_pair_bandwidth_gbps(key, pair.nvlinks)
        variant = variant_for(name) or variant_for(key)
        if nvl is not None and variant is not None:
            peer, peer_src = nvl, variant.source
    return PairFacts(
        link=pair.link,
        nvlinks=pair.nvlinks,
        nvml_p2p_read=pair.p2p_read.value if pair.p2p_read is not None else None,
        nvml_p2p_write=pair.p2p_write.value if pair.p2p_write is not None else None,
        peer_theoretical_gbps=peer,
        peer_theoretical_source=peer_src,
        pcie_theoretical_gbps=pcie_gbps,
        pcie_source=pcie_src,
    )


def gpu_labels(n: int, labels: Sequence[int] | None) -> list[int]:
    """How rows name the n GPUs: ``labels`` (--gpus: nvidia-smi indices), else their positions 0..n-1."""
    if labels is None:
        return list(range(n))
    if len(labels) != n or len(set(labels)) != n:
        raise ValueError(f"{n} GPUs need {n} distinct labels, not {list(labels)}")
    return list(labels)


def build_rows(
    n: int,
    measure: Measure,
    facts: Callable[[int, int], PairFacts],
    *,
    size_bytes: int,
    method: Method,
    modes: Sequence[str] = MODES,
    on_progress: Callable[[str], None] | None = None,
    labels: Sequence[int] | None = None,
) -> list[P2PRow]:
    """One row per ordered pair (src != dst) and mode, from ``measure``'s seconds.

    ``measure`` and ``facts`` take the GPUs' positions 0..n-1; the rows' ``src`` and ``dst`` are their
    ``labels`` (--gpus: nvidia-smi indices; default: the positions)."""
    names = gpu_labels(n, labels)
    rows: list[P2PRow] = []
    for mode in modes:
        for a in range(n):
            for b in range(n):
                if a == b:
                    continue
                src, dst = names[a], names[b]
                if on_progress is not None:
                    on_progress(f"GPU {src} -> GPU {dst} ({mode})")
                got = measure(a, b, mode)
                f = facts(a, b)
                theoretical = f.peer_theoretical_gbps if mode == "peer" else f.pcie_theoretical_gbps
                source = f.peer_theoretical_source if mode == "peer" else f.pcie_source
                head = row_head(
                    name=f"GPU {src} -> GPU {dst} {mode}",
                    unit="GB/s",
                    samples=[size_bytes / t / 1e9 for t in got.unidirectional_s],
                    method=method,
                    backend="cuda",
                    world_size=1,
                    sizes=[size_bytes],
                )
                bidirectional = (
                    statistics.median(2 * size_bytes / t / 1e9 for t in got.bidirectional_s)
                    if got.bidirectional_s
                    else None
                )
                rows.append(
                    P2PRow(
                        **head,
                        src=src,
                        dst=dst,
                        mode=mode,
                        peer_access=got.peer_access,
                        size_bytes=size_bytes,
                        link=f.link,
                        nvlinks=f.nvlinks,
                        nvml_p2p_read=f.nvml_p2p_read,
                        nvml_p2p_write=f.nvml_p2p_write,
                        correct=got.correct,
                        unidirectional_gbps=head["median"],
                        bidirectional_gbps=bidirectional,
                        latency_us=statistics.median(t * 1e6 for t in got.latency_s) if got.latency_s else None,
                        theoretical_gbps=theoretical,
                        theoretical_source=source,
                        fraction_of_theoretical=head["median"] / theoretical if theoretical else None,
                    )
                )
    return rows


PEER_TRANSPORT = "CUDA peer copy (NVLink or PCIe P2P)"
STAGED_TRANSPORT = "staged through pinned host memory"
NO_PEER_TRANSPORT = "through the host, by the driver (no peer access between these GPUs)"
COMPARE_NOTE = (
    "bench p2p copies with CUDA directly, not through NCCL, so NCCL_P2P_DISABLE has no effect on it: P2P=N is "
    "the staged mode, the path NCCL itself takes with NCCL_P2P_DISABLE=1 (through host memory); for NCCL's own "
    "transports run `rigcheck bench allreduce --compare-p2p` or `bench train --compare-p2p`"
)


def p2p_comparison(rows: Sequence[P2PRow]) -> PairsComparison:
    """The guide's table for each ordered pair measured in both modes: peer (P2P=Y) against staged (P2P=N).

    ``time_s`` is one copy of the row's size at its median unidirectional rate; the speed-up counts as the
    guide does (time saved over the no-P2P time). A pair whose peer copy had no peer access is flagged: its
    "P2P" row went through the host too, so the comparison is not one. Pairs come in the rows' order (the
    GPUs' order: CUDA's, or the one --gpus gave).
    """
    by_pair: dict[tuple[int, int], dict[str, P2PRow]] = {}
    for r in rows:
        by_pair.setdefault((r.src, r.dst), {})[r.mode] = r
    pairs: list[PairComparison] = []
    warnings: list[str] = []
    sides: tuple[tuple[YesNo, str, str], ...] = (("Y", "peer", PEER_TRANSPORT), ("N", "staged", STAGED_TRANSPORT))
    for (src, dst), modes in by_pair.items():
        if "peer" not in modes or "staged" not in modes:
            continue
        no_peer = modes["peer"].peer_access is False
        if no_peer:
            warnings.append(
                f"GPU {src} -> GPU {dst}: no CUDA peer access, so its P2P=Y copy went through the host as well"
            )
        table: list[PairRow] = []
        for yn, mode, path in sides:
            r = modes[mode]
            gbps = r.unidirectional_gbps
            table.append(
                PairRow(
                    p2p=yn,
                    mode=mode,
                    time_s=r.size_bytes / (gbps * 1e9) if gbps > 0 and r.size_bytes is not None else None,
                    gbps=gbps,
                    transport=NO_PEER_TRANSPORT if mode == "peer" and no_peer else path,
                )
            )
        speedup, ratio = speedup_and_ratio(table[0].time_s, table[1].time_s)
        pairs.append(PairComparison(src=src, dst=dst, rows=table, speedup_percent=speedup, time_ratio=ratio))
    return PairsComparison(pairs=pairs, speedup_formula=SPEEDUP_FORMULA, warnings=warnings, note=COMPARE_NOTE)


def matrix(
    rows: Sequence[P2PRow], n: int, key: str, mode: str, labels: Sequence[int] | None = None
) -> list[list[float | None]]:
    """rows -> an n×n matrix of ``key`` for ``mode`` (row = source GPU, column = destination; row and column i
    is the GPU the rows call ``labels[i]``, default i); None on the diagonal and where a pair was not measured."""
    position = {label: i for i, label in enumerate(gpu_labels(n, labels))}
    out: list[list[float | None]] = [[None] * n for _ in range(n)]
    for r in rows:
        if r.mode == mode and r.src in position and r.dst in position:
            value = getattr(r, key)
            out[position[r.src]][position[r.dst]] = float(value) if value is not None else None
    return out


def matrices(
    rows: Sequence[P2PRow], n: int, modes: Sequence[str] = MODES, labels: Sequence[int] | None = None
) -> dict[str, list[list[float | None]]]:
    return {
        f"{key}_{mode}": matrix(rows, n, key, mode, labels)
        for mode in modes
        for key in ("unidirectional_gbps", "bidirectional_gbps", "latency_us")
    }


def matrix_text(m: Sequence[Sequence[float | None]], digits: int = 1, labels: Sequence[int] | None = None) -> list[str]:
    """A matrix as aligned lines, p2pBandwidthLatencyTest-style: header of destinations, a row per source,
    each GPU named by its label (``matrix_gpus`` with --gpus), else by its position."""
    n = len(m)
    names = gpu_labels(n, labels)
    cells = [[("-" if v is None else f"{v:.{digits}f}") for v in r] for r in m]
    width = max([5, *(len(c) for r in cells for c in r)])
    lines = ["src\\dst " + " ".join(f"{j:>{width}}" for j in names)]
    lines += [f"{names[i]:>7} " + " ".join(f"{c:>{width}}" for c in cells[i]) for i in range(n)]
    return lines


# --- --gpus: which CUDA devices, named how ---------------------------------------------------------------


def require_pair(indices: Sequence[int]) -> None:
    """--gpus of a p2p run: at least two GPUs (a one-line UsageError, before anything is probed)."""
    if len(indices) < 2:
        chosen = ",".join(map(str, indices))
        raise UsageError(f"--gpus {chosen}: bench p2p needs at least two GPUs (a GPU-to-GPU copy needs a pair)")


def cuda_ordinals(torch: Any, placement: GpuPlacement) -> list[int]:
    """CUDA's ordinal of each GPU --gpus names, in the order given: found by the snapshot's UUID (CUDA orders
    GPUs its own way), else the same index (:func:`rigcheck.bench.gpu_select.cuda_index`)."""
    require_pair(placement.indices)
    ordinals = [cuda_index(torch, i, placement.uuids.get(i)) for i in placement.indices]
    if len(set(ordinals)) != len(ordinals):
        # a GPU without a UUID fell back to the index of another one found by UUID: not a pair of two GPUs
        pairs = ", ".join(f"GPU {i} -> CUDA {c}" for i, c in zip(placement.indices, ordinals, strict=True))
        raise BenchError(f"--gpus: two GPUs map to the same CUDA device ({pairs}); give the snapshot their UUIDs")
    return ordinals


# --- the CUDA measurement ------------------------------------------------------------------------------


class _Direction:
    """One direction of a pair with its own streams: src buffer -> dst buffer, peer or staged."""

    def __init__(self, torch: Any, src: Any, dst: Any, mode: str) -> None:
        self.torch = torch
        self.src, self.dst = src, dst
        self.mode = mode
        self.src_stream = torch.cuda.Stream(device=src.device)
        self.dst_stream = torch.cuda.Stream(device=dst.device)
        if mode == "staged":
            chunk = min(STAGING_CHUNK, src.numel())
            self.bufs = [torch.empty(chunk, dtype=torch.uint8, pin_memory=True) for _ in range(2)]
            self.d2h_done = [torch.cuda.Event() for _ in range(2)]
            self.h2d_done = [torch.cuda.Event() for _ in range(2)]
            self.used = [False, False]

    def enqueue(self) -> None:
        torch = self.torch
        if self.mode == "peer":
            # the copy runs on the source's current stream; the destination's current stream is this
            # direction's own, so the barriers torch adds never wait on the other direction
            with torch.cuda.stream(self.src_stream), torch.cuda.stream(self.dst_stream):
                self.dst.copy_(self.src, non_blocking=True)
            return
        chunk = self.bufs[0].numel()
        total = self.src.numel()
        for i, off in enumerate(range(0, total, chunk)):
            k = i % 2
            end = min(off + chunk, total)
            buf = self.bufs[k][: end - off]
            if self.used[k]:
                self.src_stream.wait_event(self.h2d_done[k])  # the buffer's previous chunk has left it
            with torch.cuda.stream(self.src_stream):
                buf.copy_(self.src[off:end], non_blocking=True)
            self.d2h_done[k].record(self.src_stream)
            self.dst_stream.wait_event(self.d2h_done[k])
            with torch.cuda.stream(self.dst_stream):
                self.dst[off:end].copy_(buf, non_blocking=True)
            self.h2d_done[k].record(self.dst_stream)
            self.used[k] = True


def _sync(torch: Any, *devices: Any) -> None:
    for d in devices:
        torch.cuda.synchronize(d)


def _host_timed(
    torch: Any, devices: Sequence[Any], enqueue: Callable[[], None], *, warmup: int, repeats: int, iters: int
) -> list[float]:
    for _ in range(warmup):
        for _ in range(iters):
            enqueue()
    _sync(torch, *devices)
    times = []
    for _ in range(repeats):
        _sync(torch, *devices)
        start = time.perf_counter()
        for _ in range(iters):
            enqueue()
        _sync(torch, *devices)
        times.append((time.perf_counter() - start) / iters)
    return times


def cuda_measure(
    torch: Any, *, size_bytes: int, warmup: int, repeats: int, iters: int, latency_iters: int = LATENCY_ITERS
) -> Measure:
    """The real ``measure`` callback over this process's CUDA devices (buffers made on first use)."""
    send: dict[int, Any] = {}
    recv: dict[int, Any] = {}
    small: dict[int, tuple[Any, Any]] = {}

    def buffers(i: int) -> None:
        if i not in send:
            dev = torch.device("cuda", i)
            send[i] = torch.full((size_bytes,), (i % 250) + 1, dtype=torch.uint8, device=dev)
            recv[i] = torch.zeros(size_bytes, dtype=torch.uint8, device=dev)
            small[i] = (
                torch.full((LATENCY_BYTES,), 7, dtype=torch.uint8, device=dev),
                torch.zeros(LATENCY_BYTES, dtype=torch.uint8, device=dev),
            )

    def latency(a: int, b: int, mode: str) -> list[float]:
        da, db = torch.device("cuda", a), torch.device("cuda", b)
        src, dst = small[a][0], small[b][1]
        samples = []
        if mode == "peer":
            s_src, s_dst = torch.cuda.Stream(device=da), torch.cuda.Stream(device=db)
            for rep in range(repeats + 1):  # the first round is a warm-up
                begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                # the source's stream entered last: it is the current one, where the spin kernel must run
                with torch.cuda.stream(s_dst), torch.cuda.stream(s_src):
                    if hasattr(torch.cuda, "_sleep"):
                        torch.cuda._sleep(SPIN_CYCLES)  # hold the stream while the copies are queued
                    begin.record(s_src)
                    for _ in range(latency_iters):
                        dst.copy_(src, non_blocking=True)
                    end.record(s_src)
                _sync(torch, da, db)
                if rep:
                    samples.append(begin.elapsed_time(end) / 1e3 / latency_iters)
            return samples
        host = torch.empty(LATENCY_BYTES, dtype=torch.uint8, pin_memory=True)
        for rep in range(repeats + 1):
            _sync(torch, da, db)
            start = time.perf_counter()
            for _ in range(latency_iters):
                host.copy_(src)  # synchronous: the data is on the host when it returns
                dst.copy_(host)
            _sync(torch, db)
            if rep:
                samples.append((time.perf_counter() - start) / latency_iters)
        return samples

    def measure(a: int, b: int, mode: str) -> PairMeasurement:
        buffers(a)
        buffers(b)
        da, db = torch.device("cuda", a), torch.device("cuda", b)
        peer = bool(torch.cuda.can_device_access_peer(a, b)) if mode == "peer" else False
        recv[a].zero_()
        recv[b].zero_()
        forward = _Direction(torch, send[a], recv[b], mode)
        backward = _Direction(torch, send[b], recv[a], mode)
        uni = _host_timed(torch, (da, db), forward.enqueue, warmup=warmup, repeats=repeats, iters=iters)

        def both() -> None:
            forward.enqueue()
            backward.enqueue()

        bi = _host_timed(torch, (da, db), both, warmup=warmup, repeats=repeats, iters=iters)
        _sync(torch, da, db)
        correct = all(
            bool(torch.equal(dst[s].cpu(), src[s].cpu()))
            for src, dst in ((send[a], recv[b]), (send[b], recv[a]))
            for s in (slice(0, CHECK_BYTES), slice(-CHECK_BYTES, None))
        )
        return PairMeasurement(uni, bi, latency(a, b, mode), peer, correct)

    return measure


def run_p2p(
    *,
    size_bytes: int = DEFAULT_SIZE,
    warmup: int = 1,
    repeats: int = 5,
    iters: int = DEFAULT_ITERS,
    modes: Sequence[str] = MODES,
    compare: bool = False,
    snapshot: Snapshot,
    on_progress: Callable[[str], None] | None = None,
    placement: GpuPlacement | None = None,
) -> P2PDocument:
    """The P2P matrix over every GPU torch sees (at least two), in this process; with ``compare`` the guide's
    table per pair (--compare-p2p: :func:`p2p_comparison`).

    ``snapshot``: the machine, as the caller probed it (each pair's link, NVML P2P status and PCIe links).
    ``placement`` (--gpus): only those GPUs (at least two), in the order given, found among CUDA's devices by
    UUID; the rows name them by nvidia-smi index and ``matrix_gpus`` lists them."""
    torch: Any = require_torch()
    count = require_gpus(torch, "p2p", count=2, hint="; a GPU-to-GPU copy needs a pair")
    if size_bytes < 2 * CHECK_BYTES:
        raise UsageError(f"p2p size must be at least {2 * CHECK_BYTES} bytes")
    bad_modes = [m for m in modes if m not in MODES]
    if bad_modes:
        raise UsageError(f"unknown p2p mode {bad_modes[0]!r}: choose from {', '.join(MODES)}")
    # position i: CUDA device ordinals[i], named labels[i] in the rows (without --gpus: i and i, as before)
    ordinals = cuda_ordinals(torch, placement) if placement is not None else list(range(count))
    labels = list(placement.indices) if placement is not None else None
    n = len(ordinals)
    names = gpu_labels(n, labels)
    records = [snapshot_gpu(snapshot, pci_bdf(torch, c), name) for c, name in zip(ordinals, names, strict=True)]
    device_names = [str(torch.cuda.get_device_name(c)) for c in ordinals]

    def facts(a: int, b: int) -> PairFacts:
        return pair_facts(records[a], records[b], snapshot, device_names[a])

    method = Method(method_version=METHOD_VERSION, warmup=warmup, repeats=repeats, timer="perf_counter")
    cuda = cuda_measure(torch, size_bytes=size_bytes, warmup=warmup, repeats=repeats, iters=iters)

    def measure(a: int, b: int, mode: str) -> PairMeasurement:
        return cuda(ordinals[a], ordinals[b], mode)

    rows = build_rows(
        n, measure, facts, size_bytes=size_bytes, method=method, modes=modes, on_progress=on_progress, labels=labels
    )
    comparison = p2p_comparison(rows) if compare else None
    uuid_note = same_index_note(placement)
    return p2p_document(
        rows,
        n,
        method=method,
        size_bytes=size_bytes,
        iters=iters,
        snap=snapshot,
        modes=modes,
        comparison=comparison,
        matrix_gpus=labels,
        extra_notes=[uuid_note] if uuid_note is not None else [],
    )


def p2p_document(
    rows: list[P2PRow],
    n: int,
    *,
    method: Method,
    size_bytes: int,
    iters: int,
    snap: Snapshot | None,
    modes: Sequence[str] = MODES,
    comparison: PairsComparison | None = None,
    matrix_gpus: Sequence[int] | None = None,
    extra_notes: Sequence[str] = (),
) -> P2PDocument:
    """The document of a p2p run; with ``comparison`` (--compare-p2p) the guide's table and its warnings;
    with ``matrix_gpus`` (--gpus) the rows' labels of the matrices' rows and columns, in order."""
    notes = [
        f"{size_bytes} bytes per copy, {iters} copies per round, host clock between synchronizations of both "
        f"GPUs, median of {method.repeats} rounds; GB/s counts the bytes copied once (bidirectional: both "
        "directions' bytes over the time)",
        "peer: dst.copy_(src) with CUDA peer access (torch enables it where the driver allows); staged: through "
        f"pinned host memory in {STAGING_CHUNK // MIB} MiB double-buffered chunks, what a copy costs with P2P off",
        f"latency: {LATENCY_BYTES}-byte copies; peer between CUDA events with the stream held while they are "
        "queued; staged: synchronous round trips through the host on the host clock",
        "theoretical (per direction): NVLink links × the generation's per-link rate where NVLink joins the pair "
        "(rigcheck.facts.nvlink), else the slower GPU's PCIe link (rigcheck.facts.pcie); staged copies are held "
        "against PCIe; nvml_p2p_*: NVML's P2P status for the pair from the snapshot",
        *extra_notes,
    ]
    return P2PDocument(
        partial=False,
        error=None,
        method=method,
        backend="cuda",
        world_size=1,
        versions=software_versions(),
        snapshot=snap,
        results=rows,
        notes=notes,
        gpus=n,
        matrices=matrices(rows, n, modes, matrix_gpus),
        matrix_gpus=list(matrix_gpus) if matrix_gpus is not None else None,
        comparison=comparison,
        warnings=list(comparison.warnings) if comparison is not None else None,
    )

"""The figures `rigcheck verify` judges, read out of the measurement documents, and the rules that judge one
figure (pure).

One :class:`Figure` per check: the number, the unit, the spread of the repeats behind it (the noise a
baseline comparison allows for), what went wrong with its results, and one line saying what was measured.
Which row gives the figure:

- matmul: the ``best`` row (highest median among correct products) of the judged dtype of each GPU;
- membw: the largest buffer's ``read_write_gbps`` (the read and the write the memory sees);
- hostlink: the fastest pinned row per GPU and direction, over sizes and NUMA bindings;
- p2p: the fastest peer-mode row per ordered pair (``unidirectional_gbps``);
- allreduce: the bus bandwidth at the largest buffer;
- burn: the sustained TFLOPS of the load where it ran, else the median power reached under load.

A figure is keyed by GPU index; on a CPU run (rows with ``gpu`` null) by rank.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from pydantic import Field

from rigcheck.checks.burn.problems import load_problems
from rigcheck.checks.verify.bands import effective_band, with_site_floor
from rigcheck.facts.bands import HOSTLINK, PCIE_LINKS, BandFact, band_for, hostlink_band, older_hostlink_band
from rigcheck.facts.catalog import GpuSpec
from rigcheck.facts.pcie import SlotReadings, slot_pcie_link
from rigcheck.model.bench import (
    BenchRow,
    CollectiveDocument,
    HostlinkDocument,
    HostlinkRow,
    MatmulDocument,
    MatmulRow,
    MembwDocument,
    MembwRow,
    P2PDocument,
    P2PRow,
)
from rigcheck.model.burn import BurnDocument, GpuBurnAnalysis, GpuLoadSummary
from rigcheck.model.site_config import SiteConfig
from rigcheck.model.verify import Band, Judgement, RuleVerdict, Verdict
from rigcheck.units import exact_size, percent

# Without the SKU's own (bf16 where it has it), the dtype judged is the first of these that ran (fp8: only in a
# saved mamf-finder document, `bench matmul --from`; no band holds it).
MATMUL_PREFERENCE = ("bf16", "fp16", "tf32", "fp32", "fp8")
PEER_MARGIN: Final = 0.10  # a GPU more than 10% under the median of its identical peers fails (gpu-fryer's 10%)
BASELINE_TOLERANCE: Final = 0.05  # the least regression a baseline comparison forgives


@dataclass(frozen=True)
class Figure:
    """One measured figure of one check."""

    check_id: str
    step: str  # the verify step that measured it: matmul, membw, hostlink, p2p, allreduce, burn
    key: int | None  # GPU index (CPU rank on a CPU run); None for a node figure
    value: float | None
    unit: str
    spread: float  # (max - min) / median of the repeats behind it; 0 when unknown
    problems: tuple[str, ...]  # wrong results, a lost GPU...: the "result" rule fails on any
    measured: str  # one phrase: what was measured and how
    device_name: str | None = None
    pair: tuple[int, int] | None = None  # p2p: (src, dst)
    link: str | None = None  # p2p: the pair's topo code (NV18, PIX, SYS...)
    nvlinks: int | None = None  # p2p: NVLinks between the pair
    ranks: int | None = None  # allreduce: how many ranks took part


def row_key(gpu: int | None, rank: int) -> int:
    """A row's GPU index; its rank on a CPU run (no GPU)."""
    return rank if gpu is None else gpu


def size_text(size_bytes: int | None) -> str:
    """1 << 30 -> "1 GiB"; None (an nvbandwidth figure read with --from, its size not printed) -> "unknown size"."""
    return "unknown size" if size_bytes is None else exact_size(size_bytes)


def spread_of(row: BenchRow) -> float:
    """The relative spread of a row's repeats, (max - min) / median."""
    return (row.max - row.min) / row.median if row.median > 0 else 0.0


def _wrong(rows: Sequence[BenchRow], what: str) -> tuple[str, ...]:
    bad = [r for r in rows if not getattr(r, "correct", True)]
    if not bad:
        return ()
    return (f"wrong results in {len(bad)} of {len(rows)} {what}",)


def matmul_check_id(dtype: str) -> str:
    return f"matmul_{dtype}"


def matmul_figures(doc: MatmulDocument, judged: Mapping[int, str | None]) -> list[Figure]:
    """One figure per GPU (rank on CPU): the best row of ``judged[key]`` ("matmul_bf16"...) where that dtype
    ran, else of the first dtype of MATMUL_PREFERENCE that ran."""
    by_key: dict[int, list[MatmulRow]] = {}
    for r in doc.results:
        by_key.setdefault(row_key(r.gpu, r.rank), []).append(r)
    figures: list[Figure] = []
    for key, rows in sorted(by_key.items()):
        ran = {r.dtype for r in rows}
        wanted = judged.get(key)
        dtype = next(
            (d for d in MATMUL_PREFERENCE if wanted == matmul_check_id(d) and d in ran),
            next(d for d in MATMUL_PREFERENCE if d in ran),
        )
        of_dtype = [r for r in rows if r.dtype == dtype]
        best = next((r for r in of_dtype if r.best), None)
        shown = best if best is not None else max(of_dtype, key=lambda r: r.tflops_median)
        problems = _wrong(of_dtype, f"{dtype} products (against a float64 reference)")
        if best is None and not problems:
            problems = (f"no {dtype} row is marked best",)
        shapes = f"best of {len(of_dtype)} shapes" if len(of_dtype) > 1 else "one shape"
        figures.append(
            Figure(
                check_id=matmul_check_id(dtype),
                step="matmul",
                key=key,
                value=shown.tflops_median,
                unit="TFLOPS",
                spread=spread_of(shown),
                problems=problems,
                measured=f"{dtype} matmul {shown.m}x{shown.n}x{shown.k} ({shapes}), median of {shown.repeats}",
                device_name=shown.device_name,
            )
        )
    return figures


def membw_figures(doc: MembwDocument) -> list[Figure]:
    """One figure per GPU (rank on CPU): the largest buffer's read + write bandwidth."""
    by_key: dict[int, list[MembwRow]] = {}
    for r in doc.results:
        by_key.setdefault(row_key(r.gpu, r.rank), []).append(r)
    figures: list[Figure] = []
    for key, rows in sorted(by_key.items()):
        largest = max(rows, key=lambda r: r.size_bytes or 0)
        figures.append(
            Figure(
                check_id="membw",
                step="membw",
                key=key,
                value=largest.read_write_gbps,
                unit="GB/s",
                spread=spread_of(largest),
                problems=_wrong(rows, "copies (the copied data differed)"),
                measured=f"device-local copy of {size_text(largest.size_bytes)}, read + write, "
                f"median of {largest.repeats}",
                device_name=largest.device_name,
            )
        )
    return figures


def hostlink_figures(doc: HostlinkDocument) -> list[Figure]:
    """Per GPU, "hostlink_h2d" and "hostlink_d2h": the fastest pinned row over sizes and NUMA bindings."""
    by_key: dict[tuple[int, str], list[HostlinkRow]] = {}
    for r in doc.results:
        if r.memory == "pinned":
            by_key.setdefault((r.gpu, r.direction), []).append(r)
    figures: list[Figure] = []
    for (gpu, direction), rows in sorted(by_key.items(), key=lambda item: (item[0][0], item[0][1] != "h2d")):
        best = max(rows, key=lambda r: r.gbps)
        bound = ", NUMA-bound" if best.numa_bound else ""
        figures.append(
            Figure(
                check_id=f"hostlink_{direction}",
                step="hostlink",
                key=gpu,
                value=best.gbps,
                unit="GB/s",
                spread=spread_of(best),
                problems=_wrong(rows, f"pinned {direction} copies (the copied data differed)"),
                measured=f"pinned {direction} copy of {size_text(best.size_bytes)}{bound} "
                f"(best of {len(rows)}), median of {best.repeats}",
                device_name=best.device_name,
            )
        )
    return figures


def p2p_figures(doc: P2PDocument) -> list[Figure]:
    """One node figure per ordered pair: the fastest peer-mode copy, one direction."""
    by_pair: dict[tuple[int, int], list[P2PRow]] = {}
    for r in doc.results:
        if r.mode == "peer":
            by_pair.setdefault((r.src, r.dst), []).append(r)
    figures: list[Figure] = []
    for (src, dst), rows in sorted(by_pair.items()):
        best = max(rows, key=lambda r: r.unidirectional_gbps)
        over = f" over {best.link}" if best.link else ""
        figures.append(
            Figure(
                check_id=f"p2p_{src}_{dst}",
                step="p2p",
                key=None,
                value=best.unidirectional_gbps,
                unit="GB/s",
                spread=spread_of(best),
                problems=_wrong(rows, "peer copies (the copied data differed)"),
                measured=f"peer copy GPU{src}->GPU{dst} of {size_text(best.size_bytes)}{over}, "
                f"median of {best.repeats}",
                pair=(src, dst),
                link=best.link,
                nvlinks=best.nvlinks,
            )
        )
    return figures


def allreduce_figure(doc: CollectiveDocument) -> Figure | None:
    """The bus bandwidth at the largest buffer; None when the document has no row."""
    if not doc.results:
        return None
    largest = max(doc.results, key=lambda r: r.size_bytes)
    return Figure(
        check_id="allreduce",
        step="allreduce",
        key=None,
        value=largest.busbw_gbps,
        unit="GB/s",
        spread=spread_of(largest),
        problems=_wrong(doc.results, "buffer sizes (the reduced data differed)"),
        measured=f"all-reduce of {size_text(largest.size_bytes)} across {doc.world_size} ranks ({doc.backend}), "
        f"bus bandwidth, {doc.method.statistic} of {largest.repeats}"
        + (f" (read from {doc.source.tool} output)" if doc.source is not None else ""),
        ranks=doc.world_size,
    )


def _burn_problems(analysis: GpuBurnAnalysis, load: GpuLoadSummary | None) -> tuple[str, ...]:
    problems: list[str] = []
    errors = max(analysis.errors or 0, load.errors if load is not None else 0)
    if errors:
        problems.append(f"{errors} wrong results under load")
    if load is not None and load.error is not None:
        problems.append(f"the load failed: {load.error}")
    problems += load_problems(analysis)  # the one rule for burn and burn --analyze: heat, brake, a lost GPU
    return tuple(problems)


def burn_figures(burn: BurnDocument) -> list[Figure]:
    """One figure per GPU of the burn: sustained TFLOPS where the load measured them, else power reached
    (the limiter a power cap names is healthy: a datacenter card under full load sits at its cap)."""
    loads = {g.index: g for g in burn.workload.gpus} if burn.workload is not None else {}
    figures: list[Figure] = []
    for analysis in burn.gpus:
        load = loads.get(analysis.index)
        tflops = analysis.tflops_sustained
        if tflops is None and load is not None:
            tflops = load.tflops_sustained
        value, unit = (tflops, "TFLOPS") if tflops is not None else (analysis.power_draw_w_median_loaded, "W")
        parts = [analysis.verdict]
        if analysis.power_draw_w_median_loaded is not None:
            cap = analysis.power_enforced_limit_w
            limit = f" of {cap:.0f} W" if cap is not None else ""
            parts.append(f"{analysis.power_draw_w_median_loaded:.0f} W{limit}")
        if analysis.temp_c_max is not None:
            parts.append(f"max {analysis.temp_c_max:.0f} C")
        if analysis.sm_clock_mhz_median_loaded is not None:
            parts.append(f"SM {analysis.sm_clock_mhz_median_loaded:.0f} MHz")
        figures.append(
            Figure(
                check_id="burn",
                step="burn",
                key=analysis.index,
                value=value,
                unit=unit,
                spread=0.0,
                problems=_burn_problems(analysis, load),
                measured=f"burn for {analysis.loaded_s:.0f} s under load: {', '.join(parts)}",
            )
        )
    return figures


@dataclass(frozen=True)
class HostlinkFloor:
    """A GPU's host-copy band, and where the slot's generation is not known the band of the card's own width one
    generation older (facts/bands.py older_hostlink_band): a figure between the two floors is not judged."""

    band: BandFact | None
    older: BandFact | None = None
    own: tuple[int, int] | None = None  # the card's own (generation, width), where ``older`` is set

    def slot_explains(self, value: float) -> bool:
        """Under the card's own floor but at or over the older generation's: a slot limit would explain it."""
        if self.band is None or self.older is None:
            return False
        return self.older.expected_min <= value < self.band.expected_min


def hostlink_floor(check: str, gpu: SlotReadings | None, spec: GpuSpec | None) -> HostlinkFloor:
    """A GPU's host-copy floor: on the link its slot allows where the machine description reads the max
    generation (a card in an older host is held to the host's generation: a platform limit, see
    :func:`slot_notes`), else on the SKU's own link as built, with the older generation's band beside it unless
    the link reads the card's own generation now (the slot allows it, then)."""
    slot = slot_pcie_link(gpu)
    if slot is not None and (spec is None or (gpu is not None and gpu.pcie_gen_max is not None)):
        card = f"; the card can do Gen{slot.card_gen}" if slot.slot_limits else ""
        link = f"the link the slot allows{card}"
        return HostlinkFloor(hostlink_band(check, slot.allowed.gen, slot.allowed.width, link=link))
    if spec is None:
        return HostlinkFloor(None)
    band, own = band_for(spec, check), PCIE_LINKS.get(spec.name)
    now = gpu.pcie_gen_current if gpu is not None else None
    if band is None or own is None or (now is not None and now >= own[0]):
        return HostlinkFloor(band)
    return HostlinkFloor(band, older_hostlink_band(check, *own), own)


def slot_unknown_text(value: float, unit: str, floors: tuple[float, float], own: tuple[int, int], ask: str) -> str:
    """Why a host copy under the card's own floor but over the floor of the same width one generation older
    (``floors``: the two) is not judged, and what decides. ``own``: the card's (generation, width)."""
    gen, width = own
    return (
        f"{num(value)} {unit}, under the floor {num(floors[0])} of the card's own link Gen{gen} x{width} "
        f"({margin_text(margin_pct(value, floors[0]))}), over {num(floors[1])} of Gen{gen - 1} x{width}: not "
        f"judged: the slot likely allows only Gen{gen - 1} (an older host, or a VM's passthrough), a platform "
        f"limit and not a GPU fault; a link trained down to Gen{gen - 1} in a Gen{gen} slot reads the same, so "
        f"this is no pass: {ask}"
    )


# What decides a host copy the slot may explain, in verify (the snapshot) and bench hostlink --from (a file).
VERIFY_SLOT_ASK = 'a snapshot that reads the PCIe max generation (NVML; `nvidia-smi -q` "Max") decides'
BENCH_SLOT_ASK = "add the machine's `nvidia-smi -q` with a second --from and the slot's link decides"


class NoSlotBand(Band):
    """A host-copy band on the card's own link where the slot's generation is not known, with the older
    generation's floor (:class:`HostlinkFloor`): :func:`band_judgement` does not judge a figure between the two.
    The extra fields never reach a document."""

    older_floor: float = Field(exclude=True)
    own: tuple[int, int] = Field(exclude=True)  # the card's (generation, width)


def gpu_band(
    check: str, spec: GpuSpec | None, name: str, gpu: SlotReadings | None, site: SiteConfig | None
) -> tuple[Band | None, str]:
    """The band of one GPU's check (the site's floor laid over the catalogue's), or why there is none. Host
    copies are held to the link the slot allows (``gpu``: the machine description's GPU; None on a CPU run);
    where the slot is not known, a figure the older generation's slot would explain is not judged (a site floor
    is the site's word: judged as set)."""
    if check in HOSTLINK and gpu is not None:
        floor = hostlink_floor(check, gpu, spec)
        band = with_site_floor(floor.band, check, site, gpu_name=name)
        own = site is None or site.band_floor(name, check) is None
        if band is not None and floor.older is not None and floor.own is not None and own:
            band = NoSlotBand(**band.model_dump(), older_floor=floor.older.expected_min, own=floor.own)
    else:
        band = effective_band(spec, check, site, gpu_name=name)
    if band is not None:
        return band, band.source
    if spec is None:
        return None, f"no band: {name} is not in rigcheck's catalog"
    return None, f"no band: rigcheck has no {check} figure for the {spec.name}"


def trained_below(gpu: SlotReadings | None) -> str | None:
    """Why host copies under the slot's floor may be: the link read narrower or at an older generation than
    the slot allows (a generation read at idle may be power saving; a width is not); None when it is not."""
    slot = slot_pcie_link(gpu)
    if slot is None:
        return None
    gen, width = slot.now
    if (gen or slot.allowed.gen) >= slot.allowed.gen and (width or slot.allowed.width) >= slot.allowed.width:
        return None
    read = f"Gen{gen or '?'} x{width or '?'}"
    return (
        f"the link reads {read}, below the {slot.allowed.label} its slot allows: trained down (reseat the card, "
        "drop risers, check the slot's link setting in the BIOS)"
    )


def slot_notes(gpus: Iterable[tuple[int, SlotReadings]]) -> list[str]:
    """One platform note per slot limit: GPUs whose slot allows an older PCIe generation than the card runs."""
    limited: dict[tuple[str, int | None], list[str]] = {}
    for index, gpu in gpus:
        slot = slot_pcie_link(gpu)
        if slot is not None and slot.slot_limits:
            limited.setdefault((slot.allowed.label, slot.card_gen), []).append(str(index))
    return [
        f"GPU {', '.join(indices)}: the slot allows PCIe {label}, the card Gen{card}: a platform limit, not a GPU "
        f"fault; host copies are judged against {label}"
        for (label, card), indices in limited.items()
    ]


# --- numbers in words -------------------------------------------------------------------------------------


def num(value: float) -> str:
    """A figure as a line shows it: 771, 55.1, 2.35."""
    if abs(value) >= 100:
        return f"{value:.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def margin_pct(value: float, reference: float) -> float | None:
    """How far ``value`` is from ``reference``, in percent of it (+ above, - below); None for a zero reference."""
    return round((value / reference - 1) * 100, 1) if reference else None


def margin_text(margin: float | None) -> str:
    """+21.2 -> "21% above", -3.24 -> "3.2% below": whole percents from 10%, a decimal under it."""
    if margin is None:
        return "margin unknown"
    size = f"{abs(margin):.0f}%" if abs(margin) >= 10 else f"{abs(margin):.1f}%"
    return f"{size} {'above' if margin >= 0 else 'below'}"


# --- the four rules ---------------------------------------------------------------------------------------


def band_judgement(value: float, unit: str, band: Band | None, why: str) -> Judgement:
    """The SKU band: at or over ``expected_min`` passes; the line names what the floor assumes (the band's
    basis: the peak, the link, the condition) and how far over or under it the figure is."""
    if band is None:
        return Judgement(rule="band", verdict="not_judged", text=why)
    if isinstance(band, NoSlotBand) and band.older_floor <= value < band.expected_min:
        floors = (band.expected_min, band.older_floor)
        text = slot_unknown_text(value, unit, floors, band.own, VERIFY_SLOT_ASK)
        return Judgement(rule="band", verdict="not_judged", text=text)
    margin = margin_pct(value, band.expected_min)
    text = f"{num(value)} {unit}, floor {num(band.expected_min)} ({band.basis}), {margin_text(margin)}"
    verdict: RuleVerdict = "pass" if value >= band.expected_min else "fail"
    return Judgement(rule="band", verdict=verdict, text=text, reference=band.expected_min, margin_pct=margin)


def median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def peer_judgement(
    value: float, unit: str, others: Sequence[float], what: str, *, remeasured: bool = False
) -> tuple[Judgement, float | None]:
    """A figure against its identical peers (``others``: theirs, not its own); returns the judgement and the
    best of the peers.

    Three or more alike (itself and at least two peers): more than PEER_MARGIN under the median of them all
    fails, so one card reading high moves no one (gpu-fryer's rule held to the best of the box failed seven
    healthy H100s beside one at 870 TFLOPS). Two alike: they must agree within PEER_MARGIN; when they do not,
    neither can be called the slow one, so both fail naming each other (after ``remeasured``, once measured
    again: :func:`pair_apart` asks for that first)."""
    if not others:
        return Judgement(rule="peers", verdict="not_judged", text=f"no {what} measured beside it"), None
    best = max(others)
    if len(others) == 1:
        other = others[0]
        apart = pair_apart(value, other)
        margin = margin_pct(value, other)
        words = f"{num(value)} {unit} vs {num(other)} of its one {what.removesuffix('s')}, {margin_text(margin)}"
        if apart:
            again = "re-measured and still apart" if remeasured else "apart"
            text = f"{words}: {again} by more than 10%, and two cannot tell which is slow (both flagged)"
            return Judgement(rule="peers", verdict="fail", text=text, reference=other, margin_pct=margin), best
        text = f"{words}: the two agree within 10%"
        return Judgement(rule="peers", verdict="pass", text=text, reference=other, margin_pct=margin), best
    middle = median([value, *others])
    margin = margin_pct(value, middle)
    words = f"{num(value)} {unit}, median {num(middle)} of it and {len(others)} {what}, {margin_text(margin)}"
    if value < middle * (1 - PEER_MARGIN):
        text = f"{words}: more than 10% under"
        return Judgement(rule="peers", verdict="fail", text=text, reference=middle, margin_pct=margin), best
    return Judgement(rule="peers", verdict="pass", text=words, reference=middle, margin_pct=margin), best


def pair_apart(a: float, b: float) -> bool:
    """Two identical GPUs' figures more than PEER_MARGIN apart (the lower under the higher by more)."""
    high, low = max(a, b), min(a, b)
    return low < high * (1 - PEER_MARGIN)


def baseline_judgement(value: float, unit: str, base: float | None, spread: float) -> Judgement:
    """A regression beyond the noise fails: under ``base`` x (1 - max(5%, the measured spread))."""
    if base is None:
        return Judgement(rule="baseline", verdict="not_judged", text="not in the baseline")
    tolerance = max(BASELINE_TOLERANCE, spread)
    margin = margin_pct(value, base)
    words = f"{num(value)} {unit}, baseline {num(base)}, {margin_text(margin)}"
    verdict: RuleVerdict = "fail" if value < base * (1 - tolerance) else "pass"
    text = f"{words} ({'beyond' if verdict == 'fail' else 'within'} the {percent(tolerance)} noise)"
    return Judgement(rule="baseline", verdict=verdict, text=text, reference=base, margin_pct=margin)


def result_judgement(problems: Sequence[str]) -> Judgement:
    if problems:
        return Judgement(rule="result", verdict="fail", text="; ".join(problems))
    return Judgement(rule="result", verdict="pass", text="every result checked correct")


def check_verdict(value: float | None, judgements: Iterable[Judgement]) -> Verdict:
    """fail when any judgement fails, incomplete without a figure, pass otherwise."""
    if any(j.verdict == "fail" for j in judgements):
        return "fail"
    return "incomplete" if value is None else "pass"

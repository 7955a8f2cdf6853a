"""The bands `rigcheck verify` judges against: the catalogue's (facts/bands.py) with a site file's floors laid
over them, and `verify --explain`'s document of them. Pure: no I/O.

A site floor replaces the catalogue's floor and keeps its peak; its source names the site file's key first and
the catalogue's source after it, so a verdict always says whose number it was held to. A site floor also
applies to a GPU the catalogue does not know (peak None).

`--explain` puts beside each band the lowest figure a published healthy machine reached against it
(facts/published_figures.py, generated from tests/calibration) and the floor's margin under it; a floor within
NEAR_PERCENT of that figure, or above it, is marked: an ordinary bad day on a healthy machine fails there.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from rigcheck.errors import UsageError
from rigcheck.facts import catalog, published_figures
from rigcheck.facts.allreduce_bands import (
    A100_TIERS,
    CLOSE,
    DEFAULT_NICS,
    HOPPER_NVLS_OFF,
    HOPPER_NVLS_ON,
    HOPPER_RING_MAX,
    NETWORK_FRACTION,
    NETWORK_LOWEST_FRACTION,
    PCIE_FRACTION,
    PCIE_LOWEST_FRACTION,
    PCIE_MIN_BYTES,
    SMALLEST_FABRIC,
    Tier,
    node_condition,
    nvls_state,
    size_text,
)
from rigcheck.facts.bands import CHECKS, BandFact, allreduce_band, band_for, spec_p2p_band
from rigcheck.facts.catalog import GpuSpec
from rigcheck.model.site_config import SiteConfig
from rigcheck.model.verify import Band, GpuBands, VerifyBandsDocument

UNITS: dict[str, str] = {
    "matmul_bf16": "TFLOPS",
    "matmul_fp16": "TFLOPS",
    "matmul_tf32": "TFLOPS",
    "membw": "GB/s",
    "hostlink_h2d": "GB/s",
    "hostlink_d2h": "GB/s",
    "p2p": "GB/s",
    "allreduce": "GB/s",
}
# The node size the allreduce band of --explain is shown for: the only one public figures exist for.
EXPLAIN_ALLREDUCE_GPUS = 8
# A floor less than this far (in percent of the floor) under a published healthy figure is marked (docs/bands.md).
NEAR_PERCENT: Final = 5.0


def _band(fact: BandFact) -> Band:
    return Band(
        check=fact.check,
        unit=fact.unit,
        expected_min=fact.expected_min,
        peak=fact.peak,
        source=fact.source,
        basis=fact.basis,
    )


def with_site_floor(fact: BandFact | None, check: str, site: SiteConfig | None, *, gpu_name: str) -> Band | None:
    """A catalogue band (or none) with the site's floor for ``check`` on ``gpu_name`` laid over it: for the
    bands that depend on how GPUs are joined (a pair's p2p, the node's all-reduce), which the caller builds."""
    floor = site.band_floor(gpu_name, check) if site is not None else None
    if floor is None:
        return _band(fact) if fact is not None else None
    value, text = floor
    if fact is None:
        return Band(
            check=check,
            unit=UNITS.get(check, ""),
            expected_min=value,
            peak=None,
            source=text,
            basis="site floor (no catalogue band for this GPU and check)",
        )
    return Band(
        check=check,
        unit=fact.unit,
        expected_min=value,
        peak=fact.peak,
        source=f"{text}; catalogue band {fact.expected_min:g} {fact.unit}: {fact.source}",
        basis=fact.basis,
    )


def node_allreduce_fact(
    spec: GpuSpec, *, ranks: int, size: int, busbw: float | None, nccl: str | None
) -> tuple[BandFact | None, str]:
    """(the all-reduce band of one NVSwitch node's condition, or why none): NVLS on or off as the NCCL version
    and the figure show it (unknown: the NVLS-off floor), at the largest size measured."""
    nvls, why = nvls_state(
        env={},
        support=None,
        channels=None,
        nccl_version=nccl,
        busbw=busbw,
        ring_max=HOPPER_RING_MAX if spec.chip == "GH100" else None,
    )
    found = node_condition(spec.chip, gpus=ranks, nvswitch=True, size=size, nvls=nvls, nvls_why=why)
    if found.floor is None or found.source is None:
        return None, f"no band: {found.condition}"
    basis = f"{ranks} GPUs on NVSwitch, {found.condition}"
    return BandFact("allreduce", "GB/s", found.floor, None, found.source, basis), ""


def effective_band(spec: GpuSpec | None, check: str, site: SiteConfig | None, *, gpu_name: str) -> Band | None:
    """The band a GPU's ``check`` is judged against: the SKU's (facts/bands.py), its floor replaced by the site
    file's where set; a site floor alone where the SKU is unknown or has no band. ``p2p`` is the SKU's pair as
    built (its NVLinks, else its PCIe link); ``allreduce`` has no per-GPU catalogue band (it depends on the
    node: use :func:`with_site_floor` with ``facts.bands.allreduce_band``)."""
    fact: BandFact | None = None
    if spec is not None:
        if check == "p2p":
            fact = spec_p2p_band(spec)
        elif check != "allreduce":
            fact = band_for(spec, check)
    return with_site_floor(fact, check, site, gpu_name=gpu_name)


def _gpu_bands(spec: GpuSpec, site: SiteConfig | None) -> list[Band]:
    bands: list[Band] = []
    for check in CHECKS:
        if check == "allreduce":
            fact = allreduce_band(spec, gpus=EXPLAIN_ALLREDUCE_GPUS, nvswitch=spec.form_factor == "sxm")
            band = with_site_floor(fact, check, site, gpu_name=spec.name)
        else:
            band = effective_band(spec, check, site, gpu_name=spec.name)
        if band is not None:
            bands.append(band)
    return bands


def allreduce_conditions() -> list[str]:
    """Each all-reduce condition's floor beside the lowest published healthy figure and the margin, a floor
    within 5% of it marked: what `verify --explain` says of the all-reduce."""

    def tier(what: str, t: Tier) -> str:
        close = " (CLOSE: within 5%)" if t.margin < CLOSE else ""
        return (
            f"{what} >= {size_text(t.min_bytes)} floor {t.floor:g} GB/s, lowest published healthy "
            f"{t.lowest_healthy:g}, margin {t.margin:.0%}{close}"
        )

    rows = [tier("8 H100/H200 NVLS on", t) for t in HOPPER_NVLS_ON]
    rows += [tier("8 H100/H200 NVLS off or not shown", t) for t in HOPPER_NVLS_OFF]
    rows += [tier("8 A100 SXM (ring)", t) for t in A100_TIERS]
    count, gbit = DEFAULT_NICS
    classes = {f.nodes: f for f in SMALLEST_FABRIC.values()}
    fabrics = ", ".join(f"{name}: {f.nics[0]}x{f.nics[1]:g}G" for name, f in classes.items())
    rows.append(
        f"across nodes {NETWORK_FRACTION:.0%} of the NICs' aggregate (--nics, the snapshot's ports, else the "
        f"node class's smallest published fabric ({fabrics}), else {count}x{gbit:g}G), lowest published healthy "
        f"{NETWORK_LOWEST_FRACTION:.0%}"
    )
    rows.append(
        f"PCIe cards {PCIE_FRACTION:.0%} of the narrowest link's rate from {size_text(PCIE_MIN_BYTES)}, lowest "
        f"published healthy {PCIE_LOWEST_FRACTION:.1%}; NVLS is read from NCCL_NVLS_ENABLE/NCCL_ALGO, NCCL's "
        "'NVLS multicast support' lines, the NCCL version (< 2.17: off) or a busbw only NVLS reaches"
    )
    return rows


def published_mark(margin_pct: float | None) -> str | None:
    """The mark of a floor that a published healthy figure is near or under; None for a safe margin or none."""
    if margin_pct is None:
        return None
    if margin_pct < 0:
        return "above a published healthy figure: the floor fails it"
    if margin_pct < NEAR_PERCENT:
        return f"within {NEAR_PERCENT:g}% of a published healthy figure"
    return None


def with_published(gpu_name: str, band: Band) -> Band:
    """The band with the lowest published healthy figure of (GPU, check) beside it and the floor's margin under it
    (against the floor in force: a site's where set, so a site floor set too high is marked too)."""
    found = published_figures.LOWEST_HEALTHY.get((gpu_name, band.check))
    if found is None or band.expected_min <= 0:
        return band
    margin = round((found.value - band.expected_min) / band.expected_min * 100, 1)
    return band.model_copy(
        update={
            "lowest_healthy": found.value,
            "lowest_healthy_case": found.case,
            "lowest_healthy_source": found.source,
            "lowest_healthy_on": found.hardware,
            "margin_pct": margin,
        }
    )


def _published_notes(gpus: list[GpuBands]) -> list[str]:
    """One line on what the published figures are when any band has one, and one per marked floor."""
    marked = [
        f"{gpu.name} {band.check}: floor {band.expected_min:g} {band.unit} is {mark} ({band.lowest_healthy:g} "
        f"{band.unit} on {band.lowest_healthy_on}, margin {band.margin_pct:+.1f}%, calibration case "
        f"{band.lowest_healthy_case}: {band.lowest_healthy_source})."
        for gpu in gpus
        for band in gpu.bands
        if (mark := published_mark(band.margin_pct)) is not None
    ]
    if not any(band.lowest_healthy is not None for gpu in gpus for band in gpu.bands):
        return marked
    intro = (
        "lowest healthy: the lowest figure a published output of a machine its source calls healthy reached "
        "against the floor (rigcheck's calibration cases; docs/bands.md lists them all), with the floor's margin "
        f"under it; a floor within {NEAR_PERCENT:g}% of it or above it is marked: an ordinary bad day on a "
        "healthy machine fails there."
    )
    return [intro, *marked]


def resolve_gpu(name: str, option: str = "--model") -> GpuSpec:
    """NAME, given with ``option`` (--model, or --gpu its former name), as a catalog SKU; an unknown name is a
    UsageError naming the option and close candidates."""
    spec = catalog.lookup(name)
    if spec is None:
        near = catalog.candidates(name)
        hint = f"; did you mean {', '.join(repr(n) for n in near)}?" if near else ""
        raise UsageError(f"{option} {name!r}: not a GPU rigcheck knows{hint}")
    return spec


NOTES = (
    "matmul: verify measures matmul_bf16 where the SKU has BF16, else matmul_fp16; each floor is a cited fraction "
    "of the catalogue's dense tensor peak (GeForce figures are FP32-accumulate, which torch reaches in full). "
    "The floors hold for a burst of seconds: under a sustained load a card at its power cap settles lower (an "
    "H100 SXM5 at 700 W: 663 of 989 TFLOPS after 60 s), which the burn step judges.",
    "membw: a device-to-device copy counted read + write (2 x bytes copied / time), against the memory spec.",
    "hostlink_h2d / hostlink_d2h: pinned copies each way against the PCIe link the slot allows (the snapshot's "
    "system-limited max generation and width; listed here: the SKU's own link as built), a floor per generation "
    "under the lowest published healthy copy, scaled by lanes; a card trained to a lower generation or fewer "
    "lanes than its slot allows falls under the floor, a card in an older host is held to the host's link.",
    "p2p: one direction between each pair of GPUs, judged on the link the pair has (its NVLinks, else PCIe); "
    "the band listed is two GPUs of the SKU joined as built.",
    "allreduce: NCCL bus bandwidth at the largest size measured, held to the band of its condition "
    "(listed for 8 GPUs, NVLS on, 8 GiB): " + "; ".join(allreduce_conditions()) + ".",
    "Each figure is also held against its identical peers in the box (more than 10% under their median fails; "
    "two alike must agree within 10%) and, with --baseline, against an earlier run of the node.",
)


def explain_bands(names: Sequence[str] | None, site: SiteConfig | None, site_name: str | None) -> VerifyBandsDocument:
    """`verify --explain`: every catalogue SKU with a band (``names`` None), or the named GPUs (an unknown name
    is a UsageError naming close candidates), each with its bands in CHECKS order."""
    specs = [s for s in catalog.GPUS if _gpu_bands(s, None)] if names is None else [resolve_gpu(n) for n in names]
    seen: set[str] = set()
    gpus: list[GpuBands] = []
    notes = list(NOTES)
    for spec in specs:
        if spec.name in seen:
            continue
        seen.add(spec.name)
        bands = [with_published(spec.name, band) for band in _gpu_bands(spec, site)]
        if not bands:
            notes.append(f"{spec.name}: the catalogue has no peak for any check (no band): {spec.notes or spec.source}")
        gpus.append(GpuBands(name=spec.name, bands=bands))
    notes += _published_notes(gpus)
    if site is not None:
        notes.append(
            f"site file {site_name or site.origin}: its [bands] floors replace the catalogue's where set "
            "(source names the key; a margin is the floor in force's)."
        )
    return VerifyBandsDocument(gpus=gpus, site_config=site_name, notes=notes)

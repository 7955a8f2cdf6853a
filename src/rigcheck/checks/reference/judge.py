"""Imported measurements (nvbandwidth, p2pBandwidthLatencyTest, read by rigcheck.readers.reference.reference_import) put
beside the ceiling of the link each ran on and judged against the band `rigcheck verify` holds that check to
(rigcheck.facts.bands): the rows' ceiling keys filled, and the document's ``judgement`` list.

What the machine is comes from, first to last: ``--model NAME`` (a catalog SKU, for every GPU of the file), the
machine description given with it (a snapshot: `nvidia-smi -q`, `topo -m`...; its GPUs matched by bus id, else
index), the device names the tool printed (matched to the catalog as nvidia-smi's names are). The PCIe link is
the snapshot's (as trained) where it has one, else the SKU's as built (facts/bands.py PCIE_LINKS); host copies
are judged against the link the slot allows (checks/verify/figures.py hostlink_floor): a card in an older host
is a platform note, a link trained below its slot fails; without the slot a figure one generation under the
card's own link is not judged (the slot may explain it), under that it fails; a pair's link
is the snapshot's topology, else what the SKU is built with (SXM: its NVLinks; no NVLink: PCIe); a pair that
cannot use peer access copies over PCIe through the host whatever joins it.
"""

from __future__ import annotations

import contextlib
from dataclasses import replace

from rigcheck.checks.reference.p2p import slower_than_staged
from rigcheck.checks.verify.figures import (
    BENCH_SLOT_ASK,
    hostlink_floor,
    margin_pct,
    margin_text,
    slot_notes,
    slot_unknown_text,
    trained_below,
)
from rigcheck.facts import catalog
from rigcheck.facts.bands import PCIE_LINKS, BandFact, band_for, p2p_band, pcie_p2p_band
from rigcheck.facts.catalog import GpuSpec
from rigcheck.facts.pcie import PCIE_SOURCE, gpu_pcie_link, normalize_bdf, pcie_bandwidth_gbps
from rigcheck.model.bench import HostlinkDocument, MembwDocument, P2PDocument, P2PRow
from rigcheck.model.bench_judgement import FigureJudgement
from rigcheck.model.snapshot import Gpu, Snapshot

Imported = HostlinkDocument | MembwDocument | P2PDocument

ADD_MACHINE = (
    'name the GPU with --model "H100 SXM5", or add the machine\'s `nvidia-smi -q` (its PCIe link) with a second --from'
)
ADD_TOPOLOGY = "add the machine's `nvidia-smi topo -m` output with a second --from (or name an SXM GPU with --model)"
# The testcases whose figure a band is about: copy-engine copies, as the bands were measured (facts/bands.py).
HOSTLINK_CHECKS = {
    "host_to_device_memcpy_ce": "hostlink_h2d",
    "device_to_host_memcpy_ce": "hostlink_d2h",
    # bandwidthTest's pinned copies: cudaMemcpyAsync on a copy engine, as the CE testcases (probe/bandwidth_test_doc)
    "bandwidthTest_h2d_pinned": "hostlink_h2d",
    "bandwidthTest_d2h_pinned": "hostlink_d2h",
}
# The peer copies judged against the p2p band: p2pBandwidthLatencyTest's P2P=Enabled matrix and nvbandwidth's
# copy-engine testcases, one node's or across an NVLink domain's nodes (multinode nvbandwidth on GB200/GB300 NVL72).
P2P_JUDGED = (
    "p2pBandwidthLatencyTest",
    "device_to_device_memcpy_read_ce",
    "device_to_device_memcpy_write_ce",
    "multinode_device_to_device_memcpy_read_ce",
    "multinode_device_to_device_memcpy_write_ce",
)


class Machine:
    """What is known of the machine a file was measured on: --model, the snapshot, the tool's device list."""

    def __init__(
        self, snapshot: Snapshot | None, named: GpuSpec | None, devices: dict[int, tuple[str | None, str | None]]
    ):
        self.snapshot = snapshot
        self.named = named
        self.devices = devices  # index -> (name, bus id) as the tool printed them

    def gpu(self, index: int) -> Gpu | None:
        """The snapshot's record of the tool's GPU ``index``: by bus id where both have one, else by index."""
        if self.snapshot is None:
            return None
        bus = self.devices.get(index, (None, None))[1]
        if bus:
            wanted = _bus_key(bus)
            for g in self.snapshot.gpus:
                if g.pci_bus_id and _bus_key(g.pci_bus_id) == wanted:
                    return g
        return self.snapshot.gpu(index)

    def spec(self, index: int) -> GpuSpec | None:
        if self.named is not None:
            return self.named
        gpu = self.gpu(index)
        for name in (gpu.name if gpu else None, self.devices.get(index, (None, None))[0]):
            if name and (found := catalog.lookup(name)) is not None:
                return found
        return None

    def pcie(self, index: int) -> tuple[int, int, str] | None:
        """(generation, width, where it comes from) of GPU ``index``'s PCIe link."""
        link = gpu_pcie_link(self.gpu(index))
        if link is not None:
            return link.gen, link.width, "as the machine description reports it"
        spec = self.spec(index)
        if spec is not None and spec.name in PCIE_LINKS:
            gen, width = PCIE_LINKS[spec.name]
            return gen, width, f"{spec.name} as built (its datasheet); the link as trained is not known"
        return None


def _bus_key(bus_id: str) -> str:
    """A bus id reduced to bus:device, as nvbandwidth ("00000000:00:06") and NVML ("00000000:00:06.0") print it."""
    text = bus_id.strip().lower()
    with contextlib.suppress(ValueError):  # nvbandwidth prints no function: "00000000:00:06" stays as it is
        text = normalize_bdf(text)
    parts = text.split(".")[0].split(":")
    return ":".join(p.zfill(2) for p in parts[-2:])


def _judge(check: str, subject: str, value: float, band: BandFact | None, why_not: str) -> FigureJudgement:
    if band is None:
        return FigureJudgement(
            check=check, subject=subject, value=value, floor=None, verdict="unjudged", reason=why_not, source=None
        )
    verdict = "pass" if value >= band.expected_min else "fail"
    margin = margin_pct(value, band.expected_min)
    fraction = f", {value / band.peak:.0%} of {band.peak:g}" if band.peak else ""
    reason = f"{value:g} GB/s, floor {band.expected_min:g} ({band.basis}), {margin_text(margin)}{fraction}"
    return FigureJudgement(
        check=check,
        subject=subject,
        value=value,
        floor=band.expected_min,
        verdict=verdict,
        reason=reason,
        source=band.source,
        margin_pct=margin,
    )


# --- membw and hostlink -------------------------------------------------------------------------------------


def judge_membw(doc: MembwDocument, machine: Machine) -> MembwDocument:
    rows, judgements = [], []
    for row in doc.results:
        spec = machine.spec(row.gpu if row.gpu is not None else row.rank)
        peak = spec.memory_bandwidth_gbps if spec else None
        fraction = row.read_write_gbps / peak if peak else None
        missing = {k: v for k, v in row.missing.items() if k not in {"peak_memory_gbps", "fraction_of_peak"}}
        if peak is None:
            missing |= dict.fromkeys(("peak_memory_gbps", "fraction_of_peak"), "not_in_source")
        rows.append(
            row.model_copy(
                update={
                    "peak_memory_gbps": peak,
                    "peak_source": spec.source if peak and spec else None,
                    "fraction_of_peak": fraction,
                    "missing": missing,
                }
            )
        )
        band = band_for(spec, "membw") if spec else None
        why = f"{row.device_name} is not in rigcheck's catalog: {ADD_MACHINE}" if spec is None else "no memory spec"
        judgements.append(_judge("membw", f"GPU{row.gpu}", row.read_write_gbps, band, why))
    return doc.model_copy(update={"results": rows, "judgement": judgements, "snapshot": machine.snapshot})


def judge_hostlink(doc: HostlinkDocument, machine: Machine) -> HostlinkDocument:
    rows, judgements = [], []
    links: dict[int, str] = {}  # GPU -> its link and where it comes from, for the notes
    for row in doc.results:
        link = machine.pcie(row.gpu)
        rate = pcie_bandwidth_gbps(link[0], link[1]) if link else None
        if link is not None:
            links[row.gpu] = f"GPU{row.gpu} Gen{link[0]} x{link[1]} ({link[2]})"
        missing = dict(row.missing)
        if rate is None:
            missing |= dict.fromkeys(("pcie_theoretical_gbps", "fraction_of_pcie"), "not_in_source")
        rows.append(
            row.model_copy(
                update={
                    "pcie_link": f"Gen{link[0]} x{link[1]}" if link else None,
                    "pcie_theoretical_gbps": rate,
                    "fraction_of_pcie": row.gbps / rate if rate else None,
                    "missing": missing,
                }
            )
        )
        check = HOSTLINK_CHECKS.get(row.name)
        if check is not None:
            spec = machine.spec(row.gpu)
            floor = hostlink_floor(check, machine.gpu(row.gpu), spec)
            why = (
                f"{row.device_name}: no SKU known, so no band: {ADD_MACHINE}"
                if spec is None
                else (f"{spec.name} has no PCIe host-link band")
            )
            judged = _judge(check, f"GPU{row.gpu}", row.gbps, floor.band, why)
            band, older = floor.band, floor.older
            if band and older and floor.own and floor.slot_explains(row.gbps):
                # the slot's generation would explain it (an older host, a VM): not the GPU's fail, and no pass
                floors = (band.expected_min, older.expected_min)
                reason = slot_unknown_text(row.gbps, "GB/s", floors, floor.own, BENCH_SLOT_ASK)
                judged = _judge(check, f"GPU{row.gpu}", row.gbps, None, reason)
            down = trained_below(machine.gpu(row.gpu)) if judged.verdict == "fail" else None
            judgements.append(judged.model_copy(update={"reason": f"{judged.reason}; {down}"}) if down else judged)
    notes = list(doc.notes)
    gpus = {row.gpu: gpu for row in rows if (gpu := machine.gpu(row.gpu)) is not None}
    notes += slot_notes(sorted(gpus.items()))
    if any(machine.gpu(row.gpu) is None for row in rows if HOSTLINK_CHECKS.get(row.name)):
        notes.append(
            "the link the slot allows is not known for some GPUs: judged against the card's own link as built, "
            "which a card in an older host cannot reach (a figure under it that the same width one generation "
            "older would reach is not judged, neither failed nor passed): add the machine's `nvidia-smi -q` (or a "
            "rigcheck snapshot) with a second --from"
        )
    if links:
        notes.append("PCIe links: " + "; ".join(links[g] for g in sorted(links)))
    if any(r.pcie_link is None for r in rows):
        notes.append(f"no PCIe link known for some GPUs: {ADD_MACHINE}")
    notes.append(
        f"pcie_theoretical_gbps: the link's encoded rate per direction ({PCIE_SOURCE}); judged: the "
        "copy-engine testcases against verify's hostlink bands (the link the slot allows, as the machine "
        "description reads it: a link trained below it fails)"
    )
    return doc.model_copy(
        update={"results": rows, "judgement": judgements, "snapshot": machine.snapshot, "notes": notes}
    )


# --- p2p ----------------------------------------------------------------------------------------------------


def _pair_band(row: P2PRow, machine: Machine) -> tuple[BandFact | None, str | None, int | None, str]:
    """(band, topo link code, NVLinks, why no band) of a row's pair."""
    a, b = machine.gpu(row.src), machine.gpu(row.dst)
    pair = machine.snapshot.pair(a.index, b.index) if machine.snapshot and a and b else None
    spec = machine.spec(row.src)
    links = [machine.pcie(i) for i in (row.src, row.dst)]
    pcie = min((x[:2] for x in links if x), default=None)
    over_pcie = row.mode == "staged" or row.peer_access is False
    if pair is not None and pair.link is not None:
        nvlinks = pair.nvlinks or 0
        if nvlinks and not over_pcie:
            generation = spec.nvlink_generation if spec else None
            band = p2p_band(nvlinks=nvlinks, nvlink_generation=generation, pcie_gen=None, pcie_width=None)
            return band, pair.link, nvlinks, f"{pair.link}: the NVLink generation is unknown: {ADD_MACHINE}"
        band = pcie_p2p_band(*pcie, staged=row.peer_access is False) if pcie else None
        return band, pair.link, nvlinks or None, f"{pair.link}: no PCIe link known: {ADD_MACHINE}"
    if spec is None:
        named = machine.devices.get(row.src, (None, None))[0]
        what = f"{named} is not in rigcheck's catalog" if named else "the output does not name the GPU model"
        return None, None, None, f"GPU {row.src}: {what}: {ADD_MACHINE}"
    if over_pcie or spec.nvlink_links == 0 or spec.nvlink_bridge:
        # A card that takes an NVLink bridge, with no topology given: held to its PCIe band, which a bridged
        # pair passes too (a bridge only raises the figure); the reason says so.
        band = pcie_p2p_band(*pcie, staged=row.peer_access is False) if pcie else None
        if band is not None and spec.nvlink_bridge and not over_pcie and spec.nvlink_links:
            band = replace(band, basis=f"{band.basis}; no topology given: an NVLink bridge, if any, is not assumed")
        return band, None, None, f"no PCIe link known for {spec.name}"
    if not spec.nvlink_bridge:  # SXM: NVLink is part of the board
        from rigcheck.facts.bands import spec_p2p_band

        return spec_p2p_band(spec), None, spec.nvlink_links, "no NVLink band for this SKU"
    return None, None, None, f"no NVLink band for {spec.name}"


def judge_p2p(doc: P2PDocument, machine: Machine) -> P2PDocument:
    rows, judgements = [], []
    for row in doc.results:
        band, code, nvlinks, why = _pair_band(row, machine)
        peak = band.peak if band else None
        rows.append(
            row.model_copy(
                update={
                    "link": code,
                    "nvlinks": nvlinks,
                    "theoretical_gbps": peak,
                    "theoretical_source": band.source.split("rate: ")[-1] if band else None,
                    "fraction_of_theoretical": row.unidirectional_gbps / peak if peak else None,
                }
            )
        )
        if row.mode == "peer" and row.name in P2P_JUDGED:
            subject = f"GPU{row.src}->GPU{row.dst}" + ("" if row.name == P2P_JUDGED[0] else f" {row.name}")
            judgements.append(_judge("p2p", subject, row.unidirectional_gbps, band, why))
    judgements += slower_than_staged(doc.results)
    notes = list(doc.notes)
    if any(j.verdict == "unjudged" for j in judgements):
        notes.append(f"some pairs have no known link: {ADD_TOPOLOGY}")
    notes.append(
        "theoretical (per direction): NVLink links x the generation's per-link rate where NVLink joins "
        "the pair, else PCIe (the slower GPU's link); judged: the peer (P2P=Enabled / device_to_device "
        "CE) one-direction figures against verify's p2p band"
    )
    return doc.model_copy(
        update={"results": rows, "judgement": judgements, "snapshot": machine.snapshot, "notes": notes}
    )


def judge(doc: Imported, machine: Machine) -> Imported:
    """The document with its ceilings filled and its judgement list."""
    if isinstance(doc, MembwDocument):
        return judge_membw(doc, machine)
    if isinstance(doc, HostlinkDocument):
        return judge_hostlink(doc, machine)
    return judge_p2p(doc, machine)

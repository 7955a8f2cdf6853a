"""PCI Express generations: signalling rate, line encoding, bandwidth per lane per direction; a GPU's link.

Sources: PCI-SIG, PCI Express Base Specification revisions 1.0a, 2.0, 3.0, 4.0, 5.0 and 6.0
(https://pcisig.com/specifications), and the PCI-SIG FAQ table of bandwidths per generation
(https://pcisig.com/faq). GB/s here is 1e9 bytes per second, one direction, after line encoding only:
TLP/DLLP headers, flow control and (gen 6) FLIT CRC/FEC overheads are not subtracted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Protocol

PCIE_SOURCE = "PCI-SIG PCI Express Base Specification (rev. per generation), https://pcisig.com/specifications"


@dataclass(frozen=True)
class PcieGen:
    gen: int
    transfer_rate_gts: float  # giga-transfers per second per lane
    encoding: str
    encoding_efficiency: Fraction
    source: str
    note: str = ""

    @property
    def lane_gbps(self) -> float:
        """Bytes per second per lane per direction after encoding, in GB/s (1e9)."""
        return float(Fraction(str(self.transfer_rate_gts)) * self.encoding_efficiency / 8)


PCIE_GENERATIONS: dict[int, PcieGen] = {
    g.gen: g
    for g in (
        PcieGen(1, 2.5, "8b/10b", Fraction(8, 10), PCIE_SOURCE + " (Base Spec 1.0a)"),
        PcieGen(2, 5.0, "8b/10b", Fraction(8, 10), PCIE_SOURCE + " (Base Spec 2.0)"),
        PcieGen(3, 8.0, "128b/130b", Fraction(128, 130), PCIE_SOURCE + " (Base Spec 3.0)"),
        PcieGen(4, 16.0, "128b/130b", Fraction(128, 130), PCIE_SOURCE + " (Base Spec 4.0)"),
        PcieGen(5, 32.0, "128b/130b", Fraction(128, 130), PCIE_SOURCE + " (Base Spec 5.0)"),
        PcieGen(
            6,
            64.0,
            "1b/1b (PAM4, FLIT mode)",
            Fraction(1, 1),
            PCIE_SOURCE + " (Base Spec 6.0)",
            "FLIT mode: each 256-byte FLIT carries 236 bytes of TLP data (the rest DLP, CRC and FEC); "
            "not subtracted here",
        ),
    )
}

VALID_WIDTHS = (1, 2, 4, 8, 12, 16, 32)


def generation(gen: int) -> PcieGen | None:
    return PCIE_GENERATIONS.get(gen)


def pcie_bandwidth_gbps(gen: int, width: int) -> float | None:
    """Theoretical bandwidth of a link, GB/s per direction after encoding; None for an unknown gen or width.

    >>> round(pcie_bandwidth_gbps(4, 16), 2)
    31.51
    """
    g = PCIE_GENERATIONS.get(gen)
    if g is None or width not in VALID_WIDTHS:
        return None
    return g.lane_gbps * width


class PcieReadings(Protocol):
    """A GPU's PCIe link as read (rigcheck.model.snapshot.Gpu has these fields)."""

    @property
    def pcie_gen_current(self) -> int | None: ...
    @property
    def pcie_gen_max(self) -> int | None: ...
    @property
    def pcie_width_current(self) -> int | None: ...
    @property
    def pcie_width_max(self) -> int | None: ...


@dataclass(frozen=True)
class PcieLink:
    """A GPU's PCIe link: generation, width, and its theoretical bandwidth (None: gen or width unknown here)."""

    gen: int
    width: int
    gbps: float | None  # GB/s per direction, after line encoding (pcie_bandwidth_gbps)

    @property
    def label(self) -> str:
        return f"Gen{self.gen} x{self.width}"


def gpu_pcie_link(gpu: PcieReadings | None) -> PcieLink | None:
    """The link a GPU moves data over: the one rule for every theoretical PCIe figure (bench hostlink and p2p,
    the communication plan), so one GPU never gets two answers.

    The width is the current one: a link trained narrower than its max (lanes split between two slots, a
    riser) stays that narrow under load. The generation is the max: a GPU at idle drops its link to a lower
    generation to save power and raises it again under load (the PCIe check calls that out, checks/doctor/pcie.py),
    and a snapshot is usually taken at idle. Each falls back to the other reading when one is unknown; None
    when neither generation or neither width is known.
    """
    if gpu is None:
        return None
    gen = gpu.pcie_gen_max or gpu.pcie_gen_current
    width = gpu.pcie_width_current or gpu.pcie_width_max
    if gen is None or width is None:
        return None
    return PcieLink(gen, width, pcie_bandwidth_gbps(gen, width))


class SlotReadings(PcieReadings, Protocol):
    """A GPU's PCIe readings with the card's own maximum generation (rigcheck.model.snapshot.Gpu has it)."""

    @property
    def pcie_gen_gpu_max(self) -> int | None: ...


@dataclass(frozen=True)
class SlotLink:
    """The link a GPU's slot allows, the card's own maximum generation, and the link as it reads now."""

    allowed: PcieLink  # max generation x max width, both system-limited
    card_gen: int | None  # the card's own maximum generation (None: not read)
    now: tuple[int | None, int | None]  # (generation, width) as read, maybe at idle

    @property
    def slot_limits(self) -> bool:
        """The slot (or platform) allows an older generation than the card can run: a platform finding."""
        return self.card_gen is not None and self.card_gen > self.allowed.gen


def slot_pcie_link(gpu: SlotReadings | None) -> SlotLink | None:
    """The link the slot allows a GPU: the host-link floor's link (facts/bands.py hostlink_band).

    NVML's nvmlDeviceGetMaxPcieLinkGeneration and nvmlDeviceGetMaxPcieLinkWidth (nvidia-smi ``pcie.link.gen.max``,
    -q "Max") are the maximum "possible with this device and system", the lower of the card's and the slot's;
    nvmlDeviceGetGpuMaxPcieLinkGeneration (``pcie.link.gen.gpumax``, -q "Device Max") is the card's own (nvml.h).
    Unlike :func:`gpu_pcie_link` the width is the max: a link trained narrower than its slot is a fault the
    host copies show, not a smaller link to judge them against. None when neither generation or width is known.
    """
    if gpu is None:
        return None
    gen = gpu.pcie_gen_max or gpu.pcie_gen_current
    width = gpu.pcie_width_max or gpu.pcie_width_current
    if gen is None or width is None:
        return None
    now = (gpu.pcie_gen_current, gpu.pcie_width_current)
    return SlotLink(PcieLink(gen, width, pcie_bandwidth_gbps(gen, width)), gpu.pcie_gen_gpu_max, now)


# A PCI address: NVML's "00000000:1B:00.0" (8-digit domain) or sysfs' "0000:1b:00.0".
BDF_RE = re.compile(r"^([0-9a-fA-F]{4,8}):([0-9a-fA-F]{2}):([0-9a-fA-F]{2})\.([0-7])$")


def normalize_bdf(bus_id: str) -> str:
    """NVML's ``"00000000:1B:00.0"`` and sysfs' ``"0000:1b:00.0"`` to the sysfs form.

    Raises ValueError for a string that is not a PCI bus id.
    """
    m = BDF_RE.match(bus_id.strip())
    if m is None:
        raise ValueError(f"not a PCI bus id: {bus_id!r}")
    domain, bus, dev, fn = m.groups()
    return f"{int(domain, 16):04x}:{bus.lower()}:{dev.lower()}.{fn}"

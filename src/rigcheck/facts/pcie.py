"""PCI Express generations: signalling rate, line encoding, and bandwidth per lane per direction.

Sources: PCI-SIG, PCI Express Base Specification revisions 1.0a, 2.0, 3.0, 4.0, 5.0 and 6.0
(https://pcisig.com/specifications), and the PCI-SIG FAQ table of bandwidths per generation
(https://pcisig.com/faq). GB/s here is 1e9 bytes per second, one direction, after line encoding only:
TLP/DLLP headers, flow control and (gen 6) FLIT CRC/FEC overheads are not subtracted.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

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

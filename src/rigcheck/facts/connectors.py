"""GPU power connectors: what each one is rated to deliver, with the document that says so.

The guide (seed/000, "Power"): one independent 12 V PCIe 8-pin cable per 8-pin socket, 150 W each; a pigtail
(two plugs at the end of one cable) is one cable; 6-pin 75 W; the 12-pin connectors deliver up to 500–600 W.
"""

from __future__ import annotations

from dataclasses import dataclass

GUIDE_SOURCE = (
    "Hugging Face Transformers docs, 'Custom hardware for training', Power section "
    "(https://huggingface.co/docs/transformers/perf_hardware)"
)
CEM_SOURCE = "PCI Express Card Electromechanical Specification (PCI-SIG CEM r2.0+: 6-pin 75 W, 8-pin 150 W, slot 75 W)"
CEM5_SOURCE = (
    "PCI Express CEM 5.0 / Intel ATX Version 3.0 Multi Rail Power Supply Design Guide: 12VHPWR 16-pin "
    "(12+4 sense) up to 600 W, sense pins advertise 150/300/450/600 W; 12V-2x6 is its ATX 3.1 / CEM 5.1 revision"
)
NVIDIA_WS_POWER_SOURCE = (
    "NVIDIA Power Guidelines for Workstation Products, application note DA-07261-001 "
    "(CPU 8-pin connection option for RTX A6000-class boards)"
)


@dataclass(frozen=True)
class Connector:
    kind: str  # the name used throughout rigcheck: "8-pin", "12VHPWR", ...
    watts: float | None  # rated maximum through this connector; None where no specification gives one
    cables: int  # independent PSU cables one socket of this kind needs
    source: str
    note: str = ""


CONNECTORS: dict[str, Connector] = {
    c.kind: c
    for c in (
        Connector("slot", 75.0, 0, CEM_SOURCE, "the x16 slot itself; no cable"),
        Connector("6-pin", 75.0, 1, CEM_SOURCE + "; " + GUIDE_SOURCE),
        Connector("8-pin", 150.0, 1, CEM_SOURCE + "; " + GUIDE_SOURCE, "one independent cable per socket, no pigtails"),
        Connector(
            "12-pin",
            None,
            1,
            "NVIDIA 12-pin (Molex Micro-Fit) on GeForce RTX 30 Founders Edition; " + GUIDE_SOURCE,
            "NVIDIA published no rating of its own; the guide says 12-pin connectors deliver up to 500–600 W. "
            "The Founders Edition ships with an adapter fed by independent 8-pin cables.",
        ),
        Connector("12VHPWR", 600.0, 1, CEM5_SOURCE, "one native 12VHPWR cable, or an adapter fed by independent 8-pin"),
        Connector("12V-2x6", 600.0, 1, CEM5_SOURCE, "one native 12V-2x6/12VHPWR cable, or an adapter of 8-pin cables"),
        Connector(
            "8-pin CPU",
            None,
            1,
            NVIDIA_WS_POWER_SOURCE,
            "an EPS12V (CPU) 8-pin socket, used by NVIDIA datacenter PCIe cards and the RTX A6000; "
            "not a PCIe 8-pin. The PCIe CEM specification gives it no rating; "
            "NVIDIA boards with one draw up to 300 W including the slot.",
        ),
    )
}

# The guide's rule, quoted as rigcheck applies it.
PIGTAIL_RULE = (
    "A pigtail (two 8-pin plugs at the end of one PSU cable) is ONE cable and delivers 150 W, not 300 W: "
    "plug one independent cable into each 8-pin socket."
)
PIGTAIL_CABLE_W = 150.0


def rated_watts(sockets: tuple[tuple[str, int], ...], *, include_slot: bool = True) -> float | None:
    """Rated power of a set of sockets (plus the slot's 75 W); None when any socket has no rating."""
    total = (CONNECTORS["slot"].watts or 0.0) if include_slot else 0.0
    for kind, count in sockets:
        c = CONNECTORS.get(kind)
        if c is None or c.watts is None:
            return None
        total += c.watts * count
    return total

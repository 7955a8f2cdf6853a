"""The lines of a burn's counters and peer comparisons (issue 28), shared by the terminal, Markdown and HTML
renderings (render.py, html.py)."""

from __future__ import annotations

from rigcheck.model.burn import GpuBurnAnalysis
from rigcheck.model.finding import Finding
from rigcheck.units import figure, fmt, plural


def under_load(a: GpuBurnAnalysis) -> list[str]:
    """The error counters' rates and the comparison with the peers (issue 28), where the trace gives them: a line
    each, none for a trace without them."""
    counters = [
        (a.ecc_corrected_per_s, "corrected ECC {}/s"),
        (a.ecc_uncorrected_new, "uncorrected ECC {} new"),
        (a.pcie_replays_per_min, "PCIe replays {}/min"),
        (a.nvlink_crc_per_s_max, "NVLink CRC {}/s (worst link)"),
        (a.nvlink_replay_new, "NVLink replays {} new"),
        (a.nvlink_recovery_new, "NVLink recoveries {} new"),
    ]
    lines: list[str] = []
    read = [text.format(figure(value)) for value, text in counters if value is not None]
    if read:
        lines.append("error counters while loaded: " + ", ".join(read))
    if a.peers:
        against = [
            f"{what} {fmt(value, '%', 1)}"
            for value, what in ((a.sm_clock_vs_peers_percent, "SM clock"), (a.power_vs_peers_percent, "power"))
            if value is not None
        ]
        peers = f"{plural(len(a.peers), 'peer')} (GPU {', '.join(map(str, a.peers))})"
        lines.append(f"against its {peers}: {', '.join(against) or 'no clock or power to compare'}")
    return lines


def finding_lines(f: Finding) -> tuple[str, str | None]:
    """A finding of the counters or the peers: its line, and its advice."""
    return f"{f.severity.value.upper()} {f.id}: {f.message}", f.advice

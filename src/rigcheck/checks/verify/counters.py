"""The error counters read around a short run (`verify --level prolog`): what rose while the GPUs worked, as rates.

Pure. Each GPU's counters (NVML, rigcheck.probe.nvml: volatile ECC, PCIe replays, NVLink CRC/replay/recovery per
link) are read once before the measurements and once after; the rise over the seconds between is judged with the
limits `burn --analyze` holds a trace to (checks/burn/rates.py, each with its source there):

- an uncorrected ECC error, an NVLink replay or recovery error: any one fails;
- NVLink CRC errors at ``NVLINK_CRC_FAIL_PER_S`` or more on one link fail (DCGM's limit);
- corrected ECC errors at ``ECC_CORRECTED_FLOOR_PER_S`` or more and ``ECC_PEER_FACTOR`` times the other GPUs' median
  rate fail (the GB200 that logged 17,700/s while its peers logged none; a node-wide rate is the peers' too).

A counter read only once (or not supported) is not judged; a GPU whose counters could not be read at all gets no
check. PCIe replays are said in the line (DCGM only warns on them).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rigcheck.checks.burn.rates import ECC_CORRECTED_FLOOR_PER_S, ECC_PEER_FACTOR, NVLINK_CRC_FAIL_PER_S
from rigcheck.model.telemetry import Sample


@dataclass(frozen=True)
class CounterVerdict:
    """One GPU's counters over the run: its verdict, its line, the corrected ECC rate (the check's figure)."""

    gpu: int
    failed: bool
    text: str
    ecc_per_s: float | None


def _rise(before: int | None, after: int | None) -> int | None:
    if before is None or after is None or after < before:  # a counter reset (a GPU reset) is no rise
        return None
    return after - before


def _link_rises(before: Sequence[int | None] | None, after: Sequence[int | None] | None) -> list[int]:
    if before is None or after is None:
        return []
    return [r for b, a in zip(before, after, strict=False) if (r := _rise(b, a)) is not None]


def judge_bracket(before: Sequence[Sample], after: Sequence[Sample], seconds: float) -> Mapping[int, CounterVerdict]:
    """Each GPU read both times: what rose, judged (the module docstring's rules)."""
    first = {s.gpu: s for s in before}
    pairs = [(first[s.gpu], s) for s in after if s.gpu in first and not s.lost]
    span = max(seconds, 1e-3)
    ecc = {
        a.gpu: (r / span if (r := _rise(b.ecc_corrected_volatile, a.ecc_corrected_volatile)) is not None else None)
        for b, a in pairs
    }
    out: dict[int, CounterVerdict] = {}
    for b, a in pairs:
        problems: list[str] = []
        said: list[str] = []
        uncorrected = _rise(b.ecc_uncorrected_volatile, a.ecc_uncorrected_volatile)
        if uncorrected:
            problems.append(f"{uncorrected} uncorrected ECC error(s)")
        rate = ecc[a.gpu]
        peers = [v for g, v in ecc.items() if g != a.gpu and v is not None]
        peer = statistics.median(peers) if peers else 0.0
        if rate is not None and rate >= ECC_CORRECTED_FLOOR_PER_S and rate >= ECC_PEER_FACTOR * max(peer, 0.1):
            problems.append(f"corrected ECC errors at {rate:,.0f}/s, the other GPUs' median {peer:,.1f}/s")
        elif rate:
            said.append(f"corrected ECC {rate:,.1f}/s")
        crc = _link_rises(b.nvlink_crc_errors, a.nvlink_crc_errors)
        if crc and max(crc) / span >= NVLINK_CRC_FAIL_PER_S:
            problems.append(
                f"NVLink CRC errors at {max(crc) / span:,.0f}/s on one link (limit {NVLINK_CRC_FAIL_PER_S:g}/s)"
            )
        for name, b_links, a_links in (
            ("replay", b.nvlink_replay_errors, a.nvlink_replay_errors),
            ("recovery", b.nvlink_recovery_errors, a.nvlink_recovery_errors),
        ):
            if sum(_link_rises(b_links, a_links)):
                problems.append(f"{sum(_link_rises(b_links, a_links))} NVLink {name} error(s)")
        replays = _rise(b.pcie_replays, a.pcie_replays)
        if replays:
            said.append(f"{replays} PCIe replay(s)")
        what = "; ".join(problems) if problems else "no error counter rose"
        extra = f" ({', '.join(said)})" if said else ""
        out[a.gpu] = CounterVerdict(
            gpu=a.gpu,
            failed=bool(problems),
            text=f"over {seconds:.1f} s of load: {what}{extra}",
            ecc_per_s=rate,
        )
    return dict(sorted(out.items()))

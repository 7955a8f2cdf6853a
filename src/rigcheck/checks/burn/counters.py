"""A GPU's error counters over the loaded samples of a trace (issue 28): how much each climbed while the GPU worked,
and over how many seconds. rates.py turns these into rates and judges them.

A counter counts since the driver loaded (ECC, PCIe replays, NVLink per link); what tells a failing part is how
fast it climbs under load, which no one reading can show. Each step between two consecutive loaded readings of a
counter adds its rise and its seconds. A step across an unloaded sample adds nothing (the load stopped in
between), nor does one where the counter went down (the driver reloaded and it restarted from 0). A loaded sample
that lacks the counter (N/A in that row) is passed over. Pure, as checks/: fed by tally.py (a sample at a time) and
columns.py (a reading judged once, its rows in order).
"""

from __future__ import annotations

from collections import Counter

from rigcheck.model.telemetry import GPU_COUNTER_FIELDS, LINK_COUNTER_FIELDS, Reading, Sample

# Keys of a GPU's counters: the Sample field for one count per GPU, "field/LINK" for a per-link one.
LINK_SEPARATOR = "/"


def link_key(name: str, link: int) -> str:
    return f"{name}{LINK_SEPARATOR}{link}"


def counts_of(s: Sample | Reading) -> dict[str, int] | None:
    """The counters one sample read, by key (None when it read none: most traces, so callers skip it cheaply)."""
    if (
        s.ecc_corrected_volatile is None
        and s.ecc_uncorrected_volatile is None
        and s.pcie_replays is None
        and s.nvlink_crc_errors is None
        and s.nvlink_replay_errors is None
        and s.nvlink_recovery_errors is None
    ):
        return None
    out: dict[str, int] = {}
    for name in GPU_COUNTER_FIELDS:
        value = getattr(s, name)
        if value is not None:
            out[name] = value
    for name in LINK_COUNTER_FIELDS:
        links = getattr(s, name)
        if links is not None:
            for link, value in enumerate(links):
                if value is not None:
                    out[link_key(name, link)] = value
    return out


class CounterTrack:
    """The running rise and seconds of each counter of one GPU over its loaded samples (time order)."""

    __slots__ = ("last", "loaded_reads", "rise", "seconds", "seen")

    def __init__(self) -> None:
        self.seen: set[str] = set()  # counters read in any sample
        self.loaded_reads: Counter[str] = Counter()  # readings while loaded, per counter
        self.last: dict[str, tuple[float, int]] = {}  # the last loaded reading (time, value) since the load began
        self.rise: Counter[str] = Counter()  # what each climbed between consecutive loaded readings
        self.seconds: dict[str, float] = {}  # the seconds those steps span

    def add(self, t: float, loaded: bool, counts: dict[str, int] | None) -> None:
        """One sample: its time, whether the GPU was loaded, and its counters (None: it read none)."""
        if not loaded:
            self.last.clear()  # the load stopped: the next loaded reading starts a new run
            if counts:
                self.seen.update(counts)
            return
        if not counts:
            return
        last = self.last
        for key, value in counts.items():
            before = last.get(key)
            if before is not None:
                step = t - before[0]
                if step > 0 and value >= before[1]:
                    self.rise[key] += value - before[1]
                    self.seconds[key] = self.seconds.get(key, 0.0) + step
            last[key] = (t, value)
            self.loaded_reads[key] += 1
            self.seen.add(key)

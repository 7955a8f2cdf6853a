"""The plateau of a GPU's loaded temperatures (checks/burn/judge.py), kept in memory that does not grow with the
trace."""

from __future__ import annotations

from bisect import bisect_right
from collections import Counter
from itertools import accumulate

from rigcheck.model.telemetry import counter_median

PLATEAU_SHARE = 0.2  # the plateau is the median of the last 20% of loaded samples


class Rle:
    """A run-length list of the loaded temperatures, its front dropped once it cannot be in the plateau (the
    last PLATEAU_SHARE of them): what is kept is a fraction of the runs, and temperatures change slowly."""

    __slots__ = ("counts", "dropped", "head", "n", "values")

    def __init__(self) -> None:
        self.values: list[float] = []
        self.counts: list[int] = []
        self.head = 0  # runs before this one are dropped
        self.dropped = 0  # samples in the dropped runs
        self.n = 0

    def add(self, value: float) -> None:
        self.n += 1
        if len(self.values) > self.head and self.values[-1] == value:
            self.counts[-1] += 1
            return
        self.values.append(value)
        self.counts.append(1)
        if len(self.values) - self.head > 64:
            # The tail's start, n - max(1, round(n * share)), never moves back as n grows: runs wholly before it
            # are never needed again.
            start = self.n - self._tail(self.n)
            while self.head < len(self.values) - 1 and self.dropped + self.counts[self.head] <= start:
                self.dropped += self.counts[self.head]
                self.head += 1
            self._compact()

    def add_runs(self, values: list[float], counts: list[int]) -> None:
        """add(value) count times for each pair, where no value equals the one before it (runs, as add makes
        them). The plateau comes out the same as by add: runs are dropped only once wholly before the tail's
        start, which never moves back as n grows, so checking once after many runs drops nothing add would
        have kept to the end."""
        if not values:
            return
        self.n += sum(counts)
        if len(self.values) > self.head and self.values[-1] == values[0]:
            self.counts[-1] += counts[0]
            values, counts = values[1:], counts[1:]
        self.values += values
        self.counts += counts
        if len(self.values) - self.head > 64:
            self._drop()

    def _drop(self) -> None:
        """What add's loop drops, found on the prefix sums of the counts (many runs at a time)."""
        start = self.n - self._tail(self.n)
        ends = list(accumulate(self.counts[self.head : -1], initial=self.dropped))  # samples up to each run's end
        drop = bisect_right(ends, start) - 1  # runs that end at or before the start (never the last one)
        if drop > 0:
            self.dropped = ends[drop]
            self.head += drop
        self._compact()

    def _compact(self) -> None:
        if self.head > len(self.values) // 2:
            del self.values[: self.head], self.counts[: self.head]
            self.head = 0

    @staticmethod
    def _tail(n: int) -> int:
        return max(1, round(n * PLATEAU_SHARE))

    def plateau(self) -> float | None:
        """The median of the last PLATEAU_SHARE of the values."""
        if not self.n:
            return None
        skip = self.n - self._tail(self.n) - self.dropped
        counts: Counter[float] = Counter()
        for value, count in zip(self.values[self.head :], self.counts[self.head :], strict=True):
            take = count - min(skip, count)
            skip -= count - take
            if take:
                counts[value] += take
        return counter_median(counts)

"""``drift`` alerts: a GPU's figure trending the wrong way over many runs, judged by a robust trend.

The trend is Theil-Sen's: the slope is the median of the slopes between every two runs, so a third of the runs can
be outliers (a noisy day, a re-measure) without moving it, where a least-squares line follows them. Its line goes
through the median of ``value - slope x day``; the fitted change over the window is ``slope x span``.

Each GPU's window is its own: the ``DRIFT_WINDOW_DAYS`` before its last run with the figure (a GPU taken out of
service keeps the trend it had). :func:`fit_trends` fits them; the ledger keeps them between runs
(ledger/trends.py) and :func:`still_valid` says which of those a ``--since`` leaves as they are.

Rules (``Rules`` in the document carries them):

- a throughput figure (membw, matmul_*, hostlink) drifts when its fitted change over the window is at most
  -3% of its fitted starting level, over at least ``DRIFT_MIN_POINTS`` runs spanning at least ``DRIFT_MIN_DAYS``
  days. Why 3%: a healthy GPU's run-to-run noise is 1-2% (the median of many slopes cancels most of it), and
  verify re-measures a figure within 5% of its floor: a 3% fall is real and still short of a failed verify, so
  the alert comes before the exclusion;
- verify's ``counters`` figure (corrected ECC errors per second over the run) drifts when its fitted level
  rises to at least ``ECC_RISE_FLOOR`` per second and to at least twice its fitted start: a GPU whose memory
  corrects more and more errors is wearing out before its first uncorrectable one. A live burn's document
  carries the same rate (``gpus[].ecc_corrected_per_s``) with its host and GPU UUIDs: the ledger keeps it as the
  same figure, so burns and verifies make one series.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import median

from rigcheck.model.history import Alert, SightingRow, TrendRow, day_number

DRIFT_WINDOW_DAYS = 30.0  # the "membw -4% over 30 days": a month of daily runs
DRIFT_MIN_POINTS = 7
DRIFT_MIN_DAYS = 14.0
DRIFT_DROP = -0.03  # fitted change / fitted start: see the module's docstring
FALLING_FIGURES = ("membw", "matmul_bf16", "matmul_fp16", "matmul_tf32", "hostlink")
ECC_FIGURE = "counters"  # verify's check of the error counters: its value is corrected ECC errors per second
ECC_RISE_FLOOR = 0.01  # per second: 864 a day; below it a doubling is a handful of errors
ECC_RISE_FACTOR = 2.0


@dataclass(frozen=True)
class Trend:
    slope_per_day: float
    start: float  # the fitted level at the first run
    end: float  # ... at the last
    days: float
    points: int


def theil_sen(days: Sequence[float], values: Sequence[float]) -> Trend | None:
    """The Theil-Sen line of ``values`` over ``days``; None with fewer than two distinct days."""
    slopes = [
        (values[j] - values[i]) / (days[j] - days[i])
        for i in range(len(days))
        for j in range(i + 1, len(days))
        if days[j] != days[i]
    ]
    if not slopes:
        return None
    slope = median(slopes)
    intercept = median(v - slope * d for d, v in zip(days, values, strict=True))
    first, last = min(days), max(days)
    return Trend(slope, intercept + slope * first, intercept + slope * last, last - first, len(values))


def _series(sightings: Sequence[SightingRow]) -> dict[tuple[str, str], list[SightingRow]]:
    """(GPU, figure) -> its sightings with that figure, oldest first."""
    out: dict[tuple[str, str], list[SightingRow]] = defaultdict(list)
    for s in sightings:
        key = s.key
        if key is None:
            continue
        for figure in s.figures:
            if figure in FALLING_FIGURES or figure == ECC_FIGURE:
                out[(key, figure)].append(s)
    return out


def fit_trends(sightings: Sequence[SightingRow], window_days: float = DRIFT_WINDOW_DAYS) -> list[TrendRow]:
    """Each GPU's trend of each figure over the ``window_days`` before its last run with that figure: what the
    ledger caches (ledger/trends.py) and what --node fits afresh. ``sightings`` oldest first; a series of one
    day has no trend."""
    out = []
    for (gpu, figure), rows in sorted(_series(sightings).items()):
        last = rows[-1]
        days = [day_number(r.created_at) for r in rows]
        opens = days[-1] - window_days
        kept = [i for i, d in enumerate(days) if d >= opens]
        trend = theil_sen([days[i] for i in kept], [rows[i].figures[figure] for i in kept])
        if trend is None:
            continue
        out.append(
            TrendRow(
                gpu=gpu,
                figure=figure,
                node=last.node,
                first_at=rows[kept[0]].created_at,
                last_at=last.created_at,
                points=trend.points,
                days=trend.days,
                slope_per_day=trend.slope_per_day,
                start=trend.start,
                end=trend.end,
            )
        )
    return out


def still_valid(cached: Sequence[TrendRow], since: str | None) -> tuple[list[TrendRow], set[str]]:
    """The cached trends that hold from ``since`` on as they are, and the GPUs to fit again: those whose window
    starts before ``since`` and ends after it (their window from ``since`` on has fewer runs). A window that ended
    before ``since`` has no run in the answer."""
    if since is None:
        return list(cached), set()
    kept = [t for t in cached if t.first_at >= since]
    redo = {t.gpu for t in cached if t.first_at < since <= t.last_at}
    return kept, redo


def _message(gpu: str, node: str, t: TrendRow) -> str:
    if t.figure == ECC_FIGURE:
        return (
            f"GPU {gpu} on {node}: corrected ECC errors rising from {t.start:.3g}/s to {t.end:.3g}/s over "
            f"{t.days:.0f} days ({t.points} runs, Theil-Sen): memory wearing out; watch for row remaps and plan a "
            "replacement"
        )
    change = (t.end - t.start) / t.start
    return (
        f"GPU {gpu} on {node}: {t.figure} fell {change:+.1%} over {t.days:.0f} days ({t.start:.4g} -> {t.end:.4g}, "
        f"{t.points} runs, Theil-Sen): a steady loss, not noise; check its cooling, clocks and power before it "
        "fails verify"
    )


def drifting(trend: TrendRow) -> bool:
    if trend.points < DRIFT_MIN_POINTS or trend.days < DRIFT_MIN_DAYS:
        return False
    if trend.figure == ECC_FIGURE:
        return trend.end >= ECC_RISE_FLOOR and trend.end >= ECC_RISE_FACTOR * max(trend.start, 0.0)
    return trend.start > 0 and (trend.end - trend.start) / trend.start <= DRIFT_DROP


def drift_alerts(trends: Sequence[TrendRow]) -> list[Alert]:
    """One alert per GPU and figure whose trend drifts (the module's rules), dated by its last run."""
    alerts = []
    for trend in sorted(trends, key=lambda t: (t.gpu, t.figure)):
        if not drifting(trend):
            continue
        node = trend.node or "?"
        alerts.append(
            Alert(
                kind="drift",
                node=node,
                gpu=trend.gpu,
                created_at=trend.last_at,
                message=_message(trend.gpu, node, trend),
            )
        )
    return alerts

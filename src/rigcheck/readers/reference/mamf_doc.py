"""A mamf-finder run (rigcheck.readers.reference.mamf) as a ``rigcheck.bench/1`` matmul document: one row per shape the
sweep printed, a row for each summary figure measured apart from the sweep (v3's MAMF and MSMF confirms), and
``best``: the figure rigcheck.checks.reference.mamf holds against the band. Ceilings and the verdict are the
judge's; rows carry none here.

Which figure is the best: MAMF where the run printed one (v3 and later: its boost-burst headline), else the
best median (v2), else the best figure (v1: each shape's fastest iteration); a run cut before its summary
keeps its last progress line's best so far (the document is then partial).
"""

from __future__ import annotations

from rigcheck import __version__
from rigcheck.model.bench import (
    ImportedDevice,
    ImportedSource,
    MatmulBest,
    MatmulDocument,
    MatmulRow,
    Method,
    Versions,
)
from rigcheck.readers.reference.mamf import MamfBest, MamfRun, MamfShape

NOT_IN_SOURCE = "not_in_source"
# The most sweep rows kept: an exhaustive v1 sweep prints ~500,000 shapes; the highest medians are kept.
MAX_ROWS = 2000
# The summary figure judged, first found first: MAMF (v3+), the best median (v2), v1's one figure, then the rest.
JUDGED_ORDER = ("MAMF", "median", "best", "mean", "max")
_STATISTIC = {
    "MAMF": "MAMF (max achievable, boost burst)",
    "MSMF": "MSMF (max sustainable, saturated)",
    "median": "best median",
    "mean": "best mean",
    "max": "best max",
    "best": "best (each shape's fastest iteration)",
}


def statistic_of(best: MamfBest) -> str:
    return _STATISTIC.get(best.label, best.label)


def judged_best(run: MamfRun) -> MamfBest | None:
    """The figure held against the band: from the summary, else the best so far of a run cut short."""
    for figures in (run.bests, run.so_far):
        for label in JUDGED_ORDER:
            if label in figures:
                return _with_shape(figures[label], run.shapes)
    return None


def _with_shape(best: MamfBest, shapes: list[MamfShape]) -> MamfBest:
    """A best-so-far figure (v2 prints none with a shape) with the shape of the sweep row that printed it."""
    if best.shape is not None:
        return best
    for s in reversed(shapes):
        if _figure(s, best.label) == best.tflops:
            return MamfBest(best.label, best.tflops, (s.m, s.n, s.k))
    return best


def _figure(shape: MamfShape, label: str) -> float | None:
    return {"mean": shape.mean, "median": shape.median, "max": shape.max}.get(label, shape.max)


def _row(run: MamfRun, name: str, figures: tuple[float, float, float], shape: tuple[int, int, int]) -> MatmulRow:
    """A row of ``figures`` (median, min, max) at ``shape``."""
    median, low, high = figures
    assert run.dtype is not None
    m, n, k = shape
    return MatmulRow.model_validate(
        {
            "name": name,
            "unit": "TFLOPS",
            "value": median,
            "median": median,
            "min": low,
            "max": high,
            "repeats": run.iterations or 1,
            "warmup": run.warmup or 0,
            "sizes": [m, n, k],
            "backend": "cuda",
            "world_size": 1,
            "method_version": _method_version(run),
            "rank": 0,
            "gpu": run.device_index,
            "device_name": run.device_name or f"GPU {run.device_index}",
            "dtype": run.dtype,
            "m": m,
            "n": n,
            "k": k,
            "time_us_median": None,
            "peak_tflops": None,
            "peak_source": None,
            "correct": True,
            "max_rel_error": None,
            "best": False,
            "tflops_median": median,
            "tflops_min": low,
            "tflops_max": high,
            "fraction_of_peak": None,
            "missing": dict.fromkeys(
                ("time_us_median", "max_rel_error", "peak_tflops", "fraction_of_peak"), NOT_IN_SOURCE
            ),
        }
    )


def _sweep_rows(run: MamfRun) -> list[MatmulRow]:
    shapes = run.shapes
    if len(shapes) > MAX_ROWS:
        kept = set(sorted(range(len(shapes)), key=lambda i: -_median(shapes[i]))[:MAX_ROWS])
        shapes = [s for i, s in enumerate(shapes) if i in kept]
    rows = []
    for s in shapes:
        median = _median(s)
        # v2+ print mean, median and max per shape (no min: the median stands in); v1 one figure
        rows.append(_row(run, "mamf-finder sweep", (median, median, s.max), (s.m, s.n, s.k)))
    return rows


def _median(shape: MamfShape) -> float:
    return shape.median if shape.median is not None else shape.max


def _mark(rows: list[MatmulRow], run: MamfRun, best: MamfBest | None) -> tuple[list[MatmulRow], list[MatmulBest]]:
    """Rows with the judged figure's row marked best (added when the sweep has no row for it), and the MSMF
    headline's row; the document's ``best`` list."""
    for b in run.bests.values():
        if b.label in ("MAMF", "MSMF") and b.shape is not None:
            rows.append(_row(run, f"mamf-finder {b.label}", (b.tflops,) * 3, b.shape))
    if best is None or best.shape is None:
        return rows, []
    shape = best.shape
    at = next((i for i, r in enumerate(rows) if r.name == f"mamf-finder {best.label}"), None)
    if at is None:
        at = next(
            (i for i, r in enumerate(rows) if (r.m, r.n, r.k) == shape and _row_figure(r, best.label) == best.tflops),
            None,
        )
    if at is None:  # a summary figure whose sweep line is not in the file (a console copy keeps only the last)
        rows.append(_row(run, f"mamf-finder {best.label}", (best.tflops,) * 3, shape))
        at = len(rows) - 1
    rows[at] = rows[at].model_copy(update={"best": True})
    marked = rows[at]
    summary = MatmulBest(
        rank=0,
        gpu=marked.gpu,
        dtype=marked.dtype,
        m=marked.m,
        n=marked.n,
        k=marked.k,
        tflops_median=best.tflops,
        peak_tflops=None,
        fraction_of_peak=None,
    )
    return rows, [summary]


def _row_figure(row: MatmulRow, label: str) -> float:
    return row.tflops_max if label in ("max", "best") else row.tflops_median


def _method_version(run: MamfRun) -> str:
    return f"mamf-finder v{run.version}" if run.version else "mamf-finder"


def mamf_document(run: MamfRun) -> MatmulDocument:
    """The matmul document of ``run``: rows and ``best`` as the file printed them, nothing judged yet."""
    best = judged_best(run)
    rows: list[MatmulRow] = []
    notes = [
        f"read from mamf-finder's output: {run.dtype_name} matmul (torch.mm) TFLOPS as printed "
        "(TFLOPS = 2·m·n·k / time, 10**12 FLOPS); mean, median and max per shape (v1: each shape's fastest "
        "iteration); the tool does not print a time or check the product, so rows carry no time and no error",
    ]
    if run.dtype is not None:
        rows, bests = _mark(_sweep_rows(run), run, best)
    else:
        bests = []
        notes.append(f"no rows: dtype {run.dtype_name} is not one rigcheck's matmul document names")
    if len(run.shapes) > MAX_ROWS:
        notes.append(f"{len(run.shapes)} shapes printed: the {MAX_ROWS} with the highest median kept as rows")
    if run.tried is not None:
        mean = f"; geometric mean {run.geomean:g} TFLOPS" if run.geomean else ""
        notes.append(f"mamf-finder tried {run.tried} shapes{mean}")
    notes += [f"mamf-finder's note: {n}" for n in run.notes]
    if run.cut_line is not None:
        notes.append(f"the input ends inside its last line, left out (a figure may be cut short): {run.cut_line!r}")
    error = (
        None
        if run.complete
        else "input ends before mamf-finder's summary: the best so far its last progress line printed is kept"
    )
    return MatmulDocument(
        partial=error is not None,
        error=error,
        method=Method(
            method_version=_method_version(run),
            warmup=run.warmup or 0,
            repeats=run.iterations or 1,
            statistic="as printed by mamf-finder (mean, median and max of its iterations per shape)",
            timer="cuda_events",
        ),
        backend="cuda",
        world_size=1,
        versions=Versions(rigcheck=__version__, python=None, torch=run.torch, cuda=run.cuda, nccl=None),
        snapshot=None,
        results=rows,
        notes=notes,
        best=bests,
        source=ImportedSource(
            tool="mamf-finder",
            file=run.path,
            version=run.version,
            ranks=1,
            devices=[ImportedDevice(device=run.device_index, name=run.device_name)] if run.device_name else [],
            command=run.command,
        ),
    )

"""A mamf-finder output (`rigcheck bench matmul --from FILE`, read by rigcheck.readers.reference.mamf) judged: its best
figure against the matmul band `rigcheck verify` holds that dtype to (rigcheck.facts.bands: matmul_bf16,
matmul_fp16, matmul_tf32), the rows' catalogue peak filled.

Which GPU it ran on comes from, first to last: ``--model NAME`` (a catalog SKU), the machine description given
with it (its GPU at the index mamf-finder measured), the device name the output prints (torch's
``_CudaDeviceProperties(name=...)``, matched to the catalog as nvidia-smi's names are). Where none names a
catalog SKU the figure is unjudged and the reason says to give ``--model``.

The figure judged is a burst (MAMF, the best median of a sweep): verify's floors hold for a burst; a sustained
figure (v3's MSMF, at the power cap) is kept in the notes, not judged: `rigcheck burn` judges a sustained load.
"""

from __future__ import annotations

from dataclasses import dataclass

from rigcheck.checks.verify.figures import margin_pct, margin_text
from rigcheck.facts import catalog
from rigcheck.facts.bands import band_for
from rigcheck.facts.catalog import GpuSpec
from rigcheck.model.bench import MatmulDocument
from rigcheck.model.bench_judgement import FigureJudgement
from rigcheck.model.snapshot import Snapshot

ADD_GPU = 'name the GPU with --model NAME (a catalog name such as "H100 SXM5"; `rigcheck verify --explain` lists them)'
JUDGED_DTYPES = ("bf16", "fp16", "tf32")


@dataclass(frozen=True)
class MatmulFigure:
    """What a mamf-finder output says of its best figure (the CLI fills it from rigcheck.readers.reference.mamf's
    run)."""

    what: str  # "best median 799.2 TFLOPS @ 3072x8192x8192"
    tflops: float
    dtype: str | None  # bf16, fp16, tf32, fp32, fp8; None for a dtype rigcheck does not name (fp4...)
    dtype_name: str  # as the output names it: "bfloat16"
    dtype_assumed: bool  # the output prints no dtype: the tool's default
    complete: bool  # False: the best so far of a run cut before its summary
    device_index: int
    device_name: str | None  # as printed: "NVIDIA H100 80GB HBM3"
    sustained: float | None = None  # v3's MSMF, kept in the notes


def gpu_of(figure: MatmulFigure, named: GpuSpec | None, snapshot: Snapshot | None) -> tuple[GpuSpec | None, str]:
    """(the SKU, where it comes from or why there is none)."""
    if named is not None:
        printed = f" (the output names {figure.device_name!r})" if figure.device_name else ""
        return named, f"--model {named.name}{printed}"
    described = snapshot.gpu(figure.device_index) if snapshot is not None else None
    if described is not None and described.name and (spec := catalog.lookup(described.name)) is not None:
        return spec, f"{described.name} as the machine description names GPU {figure.device_index}"
    if figure.device_name:
        spec = catalog.lookup(figure.device_name)
        if spec is not None:
            return spec, f"{figure.device_name} as mamf-finder printed it"
        return None, f"{figure.device_name} (as mamf-finder printed it) is not in rigcheck's catalog: {ADD_GPU}"
    return None, f"the output does not name the GPU: {ADD_GPU}"


def _unjudged(check: str, subject: str, value: float, reason: str) -> FigureJudgement:
    return FigureJudgement(
        check=check, subject=subject, value=value, floor=None, verdict="unjudged", reason=reason, source=None
    )


def judge_mamf(
    doc: MatmulDocument, best: MatmulFigure | None, named: GpuSpec | None, snapshot: Snapshot | None
) -> MatmulDocument:
    """``doc`` with its rows' catalogue peak and its best figure's verdict against the band."""
    if best is None:
        return doc.model_copy(update={"judgement": [], "snapshot": snapshot})
    spec, where = gpu_of(best, named, snapshot)
    subject = f"GPU{best.device_index}"
    dtype = best.dtype
    peak = getattr(spec, f"{dtype}_tflops", None) if spec is not None and dtype is not None else None
    rows = [
        r.model_copy(
            update={
                "peak_tflops": peak,
                "peak_source": spec.source if peak is not None and spec is not None else None,
                "fraction_of_peak": r.tflops_median / peak if peak else None,
                "missing": {
                    k: v for k, v in r.missing.items() if peak is None or k not in {"peak_tflops", "fraction_of_peak"}
                },
            }
        )
        for r in doc.results
    ]
    bests = [
        b.model_copy(update={"peak_tflops": peak, "fraction_of_peak": b.tflops_median / peak if peak else None})
        for b in doc.best
    ]
    notes = list(doc.notes)
    assumed = ""
    if best.dtype_assumed:
        assumed = f" (the output prints no dtype: mamf-finder's default {best.dtype_name} assumed)"
        notes.append(f"no dtype in the output: mamf-finder's default --dtype {best.dtype_name} assumed")
    if best.sustained is not None:
        notes.append(
            f"MSMF (sustained, at the power cap) {best.sustained:g} TFLOPS is not judged: verify's matmul floors "
            "hold for a burst; a sustained load settles lower, which `rigcheck burn` judges"
        )
    check = f"matmul_{dtype}" if dtype is not None else f"matmul_{best.dtype_name}"
    figure = best.what + ("" if best.complete else " (best so far: the output ends before its summary)")
    band = band_for(spec, check) if spec is not None and dtype in JUDGED_DTYPES else None
    if dtype is None or dtype not in JUDGED_DTYPES:
        why = f"{figure}: dtype {best.dtype_name}: verify holds matmul bands for bf16, fp16 and tf32 only"
        judged = _unjudged(check, subject, best.tflops, why)
    elif spec is None:
        judged = _unjudged(check, subject, best.tflops, f"{figure}: {where}")
    elif band is None:
        why = f"{figure}: {spec.name} has no {dtype} band (the catalog has no dense {dtype} figure for it)"
        judged = _unjudged(check, subject, best.tflops, why)
    else:
        margin = margin_pct(best.tflops, band.expected_min)
        fraction = f", {best.tflops / band.peak:.0%} of {band.peak:g}" if band.peak else ""
        judged = FigureJudgement(
            check=check,
            subject=subject,
            value=best.tflops,
            floor=band.expected_min,
            verdict="pass" if best.tflops >= band.expected_min else "fail",
            reason=(
                f"{figure}{assumed}, floor {band.expected_min:g} ({band.basis}), {margin_text(margin)}{fraction}; "
                f"GPU: {where}"
            ),
            source=band.source,
            margin_pct=margin,
        )
    return doc.model_copy(
        update={"results": rows, "best": bests, "judgement": [judged], "snapshot": snapshot, "notes": notes}
    )

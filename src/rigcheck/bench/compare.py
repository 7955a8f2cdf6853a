"""`--compare-p2p`: the guide's NVLink table — one benchmark run twice, differing only in NCCL_P2P_DISABLE=1.

The guide trained gpt2 on 2 × TITAN RTX (NV2): 101.9 s with P2P (NVLink), 131.4 s with
``NCCL_P2P_DISABLE=1``, and called it "~23% faster". Its speed-up is the time saved relative to the
slower run:

    speedup_percent = (time without P2P − time with P2P) / time without P2P × 100
                    = (131.4 − 101.9) / 131.4 × 100 = 22.5 %

Each run is labelled with the transport NCCL actually used, read from its ``NCCL_DEBUG=INFO`` output
(`rigcheck.readers.nccl_log`), so a "no-P2P" run that still went over P2P, or a "P2P" run that fell back to SHM
(peer access unavailable: no NVLink and no PCIe P2P), is called out in ``warnings`` rather than
reported as a comparison it is not. On CPU processes (gloo) there is no NCCL: the variable changes
nothing, and the result says so.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel

from rigcheck.bench.launcher import in_launched_job
from rigcheck.errors import ParseError, UsageError, was_interrupted
from rigcheck.model.bench import (
    CollectiveCompareDocument,
    CollectiveComparison,
    CollectiveDocument,
    CollectiveFigures,
    CollectiveRunDocument,
    ComparedCollectiveRow,
    ComparedTrainRow,
    NcclFacts,
    TrainCompareDocument,
    TrainComparison,
    TrainDocument,
    TrainFigures,
    TrainRunDocument,
    YesNo,
)
from rigcheck.readers.nccl_log import describe_transport, p2p_mismatch, parse_nccl_log

RunDocument = CollectiveDocument | TrainDocument
# One run of the benchmark: (environment to add, whether to log NCCL) -> (its document, its NCCL log text).
RunFn = Callable[[dict[str, str], bool], tuple[RunDocument, str]]

P2P_OFF_ENV: Mapping[str, str] = {"NCCL_P2P_DISABLE": "1"}
# NCCL reads NCCL_P2P_DISABLE as an integer, default 0 (P2P allowed): "0" undoes a value the user's shell set
# (NCCL docs, Environment Variables, NCCL_P2P_DISABLE). The launcher only adds to the environment it passes on.
P2P_ON_ENV: Mapping[str, str] = {"NCCL_P2P_DISABLE": "0"}
GLOO_TRANSPORT = "gloo (no NCCL)"
NO_LOG_TRANSPORT = "unknown (no NCCL log)"
SPEEDUP_FORMULA = (
    "(time without P2P − time with P2P) / time without P2P × 100, as the guide: (131.4 − 101.9) / 131.4 = 22.5% "
    "(its '~23% faster')"
)
GLOO_NOTE = (
    "gloo on CPU processes: there is no NCCL, so NCCL_P2P_DISABLE=1 changes nothing and the two runs differ only "
    "by noise; on GPUs (NCCL) the same pair measures P2P (NVLink or PCIe peer access) against SHM or the network"
)


def speedup_percent(time_p2p_s: float, time_no_p2p_s: float) -> float:
    """How much faster the P2P run is, as the guide counts it: the time saved over the no-P2P time."""
    if time_p2p_s <= 0 or time_no_p2p_s <= 0:
        raise ValueError("times must be positive")
    return (time_no_p2p_s - time_p2p_s) / time_no_p2p_s * 100.0


def speedup_and_ratio(time_p2p_s: float | None, time_no_p2p_s: float | None) -> tuple[float | None, float | None]:
    """(speed-up %, time without P2P / time with P2P); both None unless both times are known and positive."""
    if not time_p2p_s or not time_no_p2p_s or time_p2p_s <= 0 or time_no_p2p_s <= 0:
        return None, None
    return speedup_percent(time_p2p_s, time_no_p2p_s), time_no_p2p_s / time_p2p_s


def collective_figures(doc: CollectiveDocument) -> tuple[float | None, float | None]:
    """(time_s, busbw_gbps) of a collective run: the size-weighted mean of the per-size median times
    (Σ size × time / Σ size: the large, gradient-sized messages count most) and the busbw at the largest size
    (the nccl-tests headline); both None for a run without rows."""
    sized = [r for r in doc.results if r.size_bytes > 0]
    if not sized:
        return None, None
    total = sum(r.size_bytes for r in sized)
    weighted_s = sum(r.size_bytes * r.time_us_median / 1e6 for r in sized) / total
    largest = max(sized, key=lambda r: r.size_bytes)
    return weighted_s, largest.busbw_gbps


def train_figures(doc: TrainDocument) -> tuple[float | None, float | None]:
    """(time_s, samples_per_s) of a train run: its train_runtime_s; both None for a run without a row."""
    if not doc.results:
        return None, None
    r = doc.results[0]
    return r.train_runtime_s, r.samples_per_s


def _transport(doc: RunDocument, log_text: str, *, p2p: bool, label: str) -> tuple[str, NcclFacts | None, str | None]:
    """(transport label, parsed NCCL facts, mismatch warning) for one run."""
    if doc.backend == "gloo":
        return GLOO_TRANSPORT, None, None
    yn = "Y" if p2p else "N"
    if not log_text.strip():
        return NO_LOG_TRANSPORT, None, f"{label} P2P={yn}: no NCCL_DEBUG=INFO output, so the transport was not checked"
    try:
        log = parse_nccl_log(log_text)
    except ParseError as exc:
        return NO_LOG_TRANSPORT, None, f"{label} P2P={yn}: its NCCL log could not be read ({exc})"
    facts = NcclFacts(
        transports=list(log.transports),
        p2p_disabled=log.p2p_disabled,
        nccl_version=log.nccl_version,
        nranks=log.nranks,
        p2p_evidence=log.p2p_evidence,
        channel_lines=log.channel_line_count,
    )
    mismatch = p2p_mismatch(log, p2p)
    return describe_transport(log), facts, (f"{label} P2P={yn}: {mismatch}" if mismatch else None)


def _fields(model: BaseModel, *leave_out: str) -> dict[str, Any]:
    """A model's fields by name (nested models as they are), to build a model that extends it."""
    return {name: value for name, value in model if name not in ("schema_", *leave_out)}


def inherited_p2p_note(environ: Mapping[str, str] | None = None) -> str | None:
    """The note for a NCCL_P2P_DISABLE already set where --compare-p2p runs (None when it is not): the
    "P2P allowed" run would otherwise inherit it, and compare P2P-off with P2P-off without a word."""
    value = (os.environ if environ is None else environ).get("NCCL_P2P_DISABLE")
    if value is None:
        return None
    return (
        f"NCCL_P2P_DISABLE={value!r} was set in this environment: the P2P-allowed run set NCCL_P2P_DISABLE=0 "
        "so that it measures P2P (unset it to run your own jobs with P2P)"
    )


def compare_p2p(
    run: RunFn, *, label: str, environ: Mapping[str, str] | None = None
) -> CollectiveCompareDocument | TrainCompareDocument:
    """Run ``run`` with P2P allowed, then with NCCL_P2P_DISABLE=1 (both with the NCCL log on).

    Returns one ``rigcheck.bench/1`` document: ``runs`` (the two documents, without their snapshot, tagged with
    the NCCL facts read from their logs under ``nccl``), ``results`` (both runs' rows, each tagged ``p2p`` Y/N),
    ``comparison`` (the guide's table and ``speedup_percent``), ``warnings`` and ``notes``.

    ``environ`` (default: this process's) is where a NCCL_P2P_DISABLE the P2P run must override is looked
    for; the override is noted in ``notes``, not ``warnings``: the comparison is still a true one.
    """
    if in_launched_job():
        # NCCL reads NCCL_P2P_DISABLE once per process, so a second run in the same rank would not change it.
        raise UsageError(
            "--compare-p2p starts its own two runs, and NCCL reads NCCL_P2P_DISABLE once per process: "
            "run it outside torchrun/srun (or run the job twice, once with NCCL_P2P_DISABLE=1)"
        )
    docs: list[RunDocument] = []
    tags: list[dict[str, Any]] = []
    warnings: list[str] = []
    inherited = inherited_p2p_note(environ)
    p2p_env = dict(P2P_ON_ENV) if inherited else {}  # nothing added when nothing is inherited: as before
    for p2p, env in ((True, p2p_env), (False, dict(P2P_OFF_ENV))):
        doc, log_text = run(dict(env), True)
        transport, facts, warning = _transport(doc, log_text, p2p=p2p, label=label)
        yn: YesNo = "Y" if p2p else "N"
        if doc.error or doc.partial:
            warnings.append(f"{label} P2P={yn}: the run failed: {doc.error or 'partial results'}")
        if warning:
            warnings.append(warning)
        docs.append(doc)
        tags.append({"p2p": yn, "env": dict(env), "transport": transport, "nccl": facts})
        if was_interrupted(doc.error):
            break  # Ctrl-C or SIGTERM: keep what the first run measured, never start the second

    first = docs[0]
    notes = [f"speed-up = {SPEEDUP_FORMULA}"]
    if inherited:
        notes.append(inherited)
    if any(d.backend == "gloo" for d in docs):
        notes.append(GLOO_NOTE)
    errors = [d.error for d in docs if d.error]
    common: dict[str, Any] = {
        "benchmark": f"{first.benchmark}-compare-p2p",
        "label": label,
        "partial": any(d.partial for d in docs),
        "error": "; ".join(errors) if errors else None,
        "method": first.method,
        "backend": first.backend,
        "world_size": first.world_size,
        "versions": first.versions,
        "snapshot": first.snapshot,  # one snapshot for the pair, at the top
        "warnings": warnings,
        "notes": notes,
    }
    figures = [{"p2p": t["p2p"], "nccl_p2p_disable": t["env"].get("NCCL_P2P_DISABLE")} for t in tags]
    if all(isinstance(d, TrainDocument) for d in docs):
        train_docs = [d for d in docs if isinstance(d, TrainDocument)]
        times = [train_figures(d) for d in train_docs]
        speedup, ratio = speedup_and_ratio(times[0][0], times[1][0] if len(times) > 1 else None)
        return TrainCompareDocument(
            **common,
            results=[
                ComparedTrainRow(**_fields(r), p2p=t["p2p"])
                for d, t in zip(train_docs, tags, strict=True)
                for r in d.results
            ],
            runs=[TrainRunDocument(**_fields(d, "snapshot"), **t) for d, t in zip(train_docs, tags, strict=True)],
            comparison=TrainComparison(
                rows=[
                    TrainFigures(**f, time_s=time_s, samples_per_s=rate, transport=t["transport"])
                    for f, (time_s, rate), t in zip(figures, times, tags, strict=True)
                ],
                speedup_percent=speedup,
                time_ratio=ratio,
                speedup_formula=SPEEDUP_FORMULA,
            ),
        )
    sweeps = [d for d in docs if isinstance(d, CollectiveDocument)]
    if len(sweeps) != len(docs):
        raise TypeError("both runs of a comparison are of one benchmark")
    times = [collective_figures(d) for d in sweeps]
    speedup, ratio = speedup_and_ratio(times[0][0], times[1][0] if len(times) > 1 else None)
    return CollectiveCompareDocument(
        **common,
        results=[
            ComparedCollectiveRow(**_fields(r), p2p=t["p2p"])
            for d, t in zip(sweeps, tags, strict=True)
            for r in d.results
        ],
        runs=[CollectiveRunDocument(**_fields(d, "snapshot"), **t) for d, t in zip(sweeps, tags, strict=True)],
        comparison=CollectiveComparison(
            rows=[
                CollectiveFigures(**f, time_s=time_s, busbw_gbps=rate, transport=t["transport"])
                for f, (time_s, rate), t in zip(figures, times, tags, strict=True)
            ],
            speedup_percent=speedup,
            time_ratio=ratio,
            speedup_formula=SPEEDUP_FORMULA,
        ),
    )

"""`--compare-p2p`: the guide's NVLink table — one benchmark run twice, differing only in NCCL_P2P_DISABLE=1.

The guide trained gpt2 on 2 × TITAN RTX (NV2): 101.9 s with P2P (NVLink), 131.4 s with
``NCCL_P2P_DISABLE=1``, and called it "~23% faster". Its speed-up is the time saved relative to the
slower run:

    speedup_percent = (time without P2P − time with P2P) / time without P2P × 100
                    = (131.4 − 101.9) / 131.4 × 100 = 22.5 %

Each run is labelled with the transport NCCL actually used, read from its ``NCCL_DEBUG=INFO`` output
(`rigcheck.nccllog`), so a "no-P2P" run that still went over P2P, or a "P2P" run that fell back to SHM
(peer access unavailable: no NVLink and no PCIe P2P), is called out in ``warnings`` rather than
reported as a comparison it is not. On CPU processes (gloo) there is no NCCL: the variable changes
nothing, and the result says so.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping
from typing import Any

from rigcheck.bench.launcher import in_launched_job
from rigcheck.bench.results import BENCH_SCHEMA
from rigcheck.errors import ParseError, UsageError
from rigcheck.nccllog import describe_transport, p2p_mismatch, parse_nccl_log

RunFn = Callable[[dict[str, str], bool], dict[str, Any]]

P2P_OFF_ENV: Mapping[str, str] = {"NCCL_P2P_DISABLE": "1"}
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


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def run_figures(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The figures one run contributes to the table: ``time_s`` and a rate, by kind of benchmark.

    - train: ``time_s`` = train_runtime_s, ``samples_per_s``.
    - collectives (rows with size_bytes, time_us_median, busbw_gbps): ``time_s`` = the size-weighted mean
      of the per-size median times (Σ size × time / Σ size: the large, gradient-sized messages count
      most), ``busbw_gbps`` at the largest size (the nccl-tests headline).
    - anything else: ``time_s`` null, ``value`` = the median of the rows' values with their ``unit``.
    """
    rows = [r for r in doc.get("results", []) if isinstance(r, Mapping)]
    if doc.get("benchmark") == "train":
        r = rows[0] if rows else {}
        return {"time_s": _number(r.get("train_runtime_s")), "samples_per_s": _number(r.get("samples_per_s"))}
    sized = [
        r
        for r in rows
        if _number(r.get("size_bytes")) and _number(r.get("time_us_median")) is not None and "busbw_gbps" in r
    ]
    if sized:
        total = sum(float(r["size_bytes"]) for r in sized)
        weighted_s = sum(float(r["size_bytes"]) * float(r["time_us_median"]) / 1e6 for r in sized) / total
        largest = max(sized, key=lambda r: float(r["size_bytes"]))
        return {"time_s": weighted_s, "busbw_gbps": _number(largest.get("busbw_gbps"))}
    values = [v for v in (_number(r.get("value")) for r in rows) if v is not None]
    units = {r.get("unit") for r in rows}
    return {
        "time_s": None,
        "value": statistics.median(values) if values else None,
        "unit": units.pop() if len(units) == 1 else None,
    }


def _transport(
    doc: Mapping[str, Any], log_text: str, *, p2p: bool, label: str
) -> tuple[str, dict[str, Any] | None, str | None]:
    """(transport label, parsed NCCL facts, mismatch warning) for one run."""
    if doc.get("backend") == "gloo":
        return GLOO_TRANSPORT, None, None
    yn = "Y" if p2p else "N"
    if not log_text.strip():
        return NO_LOG_TRANSPORT, None, f"{label} P2P={yn}: no NCCL_DEBUG=INFO output, so the transport was not checked"
    try:
        log = parse_nccl_log(log_text)
    except ParseError as exc:
        return NO_LOG_TRANSPORT, None, f"{label} P2P={yn}: its NCCL log could not be read ({exc})"
    facts = {
        "transports": list(log.transports),
        "p2p_disabled": log.p2p_disabled,
        "nccl_version": log.nccl_version,
        "nranks": log.nranks,
        "p2p_evidence": log.p2p_evidence,
        "channel_lines": log.channel_line_count,
    }
    mismatch = p2p_mismatch(log, p2p)
    return describe_transport(log), facts, (f"{label} P2P={yn}: {mismatch}" if mismatch else None)


def compare_p2p(run: RunFn, *, label: str) -> dict[str, Any]:
    """Run ``run`` with P2P allowed, then with NCCL_P2P_DISABLE=1 (both with the NCCL log on).

    Returns one ``rigcheck.bench/1`` document: ``runs`` (the two documents, their NCCL log text replaced
    by the parsed facts under ``nccl``), ``results`` (both runs' rows, each tagged ``p2p`` Y/N),
    ``comparison`` (the guide's table and ``speedup_percent``), ``warnings`` and ``notes``.
    """
    if in_launched_job():
        # NCCL reads NCCL_P2P_DISABLE once per process, so a second run in the same rank would not change it.
        raise UsageError(
            "--compare-p2p starts its own two runs, and NCCL reads NCCL_P2P_DISABLE once per process: "
            "run it outside torchrun/srun (or run the job twice, once with NCCL_P2P_DISABLE=1)"
        )
    runs: list[dict[str, Any]] = []
    table: list[dict[str, Any]] = []
    warnings: list[str] = []
    results: list[dict[str, Any]] = []
    for p2p, env in ((True, {}), (False, dict(P2P_OFF_ENV))):
        doc = dict(run(dict(env), True))
        log_text = str(doc.pop("nccl_log", "") or "")
        transport, facts, warning = _transport(doc, log_text, p2p=p2p, label=label)
        yn = "Y" if p2p else "N"
        if doc.get("error") or doc.get("partial"):
            warnings.append(f"{label} P2P={yn}: the run failed: {doc.get('error') or 'partial results'}")
        if warning:
            warnings.append(warning)
        doc.update(p2p=yn, env=dict(env), transport=transport, nccl=facts)
        runs.append(doc)
        table.append(
            {"p2p": yn, "nccl_p2p_disable": env.get("NCCL_P2P_DISABLE"), **run_figures(doc), "transport": transport}
        )
        results.extend({**r, "p2p": yn} for r in doc.get("results", []))

    with_p2p, without = table
    t_y, t_n = with_p2p.get("time_s"), without.get("time_s")
    speedup, ratio = speedup_and_ratio(t_y, t_n)
    notes = [f"speed-up = {SPEEDUP_FORMULA}"]
    if any(d.get("backend") == "gloo" for d in runs):
        notes.append(GLOO_NOTE)
    first = runs[0]
    errors = [str(d["error"]) for d in runs if d.get("error")]
    snapshot = first.get("snapshot")
    for d in runs:  # one snapshot for the pair, at the top
        d.pop("snapshot", None)
    return {
        "schema": BENCH_SCHEMA,
        "benchmark": f"{first.get('benchmark', label)}-compare-p2p",
        "label": label,
        "partial": any(bool(d.get("partial")) for d in runs),
        "error": "; ".join(errors) if errors else None,
        "method": first.get("method"),
        "backend": first.get("backend"),
        "world_size": first.get("world_size"),
        "versions": first.get("versions"),
        "snapshot": snapshot,
        "results": results,
        "runs": runs,
        "comparison": {
            "rows": table,
            "speedup_percent": speedup,
            "time_ratio": ratio,
            "speedup_formula": SPEEDUP_FORMULA,
        },
        "warnings": warnings,
        "notes": notes,
    }

"""The HTML page of a ``rigcheck.bench/1`` document (`--html FILE`): the chart, the result table, the comparison.

The page walks the document's JSON form: every key of every row becomes a column (units read from the key
names, DESIGN.md), so a key a benchmark adds shows without a change here. The page shell (CSS, CSP, escaping,
palettes) is :mod:`rigcheck.report.html`'s.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from rigcheck.report.html import GPU_PALETTE, esc, footer, num, page
from rigcheck.report.svg import Axis, Bar, HLine, Series, bar_chart, line_chart
from rigcheck.units import rounded_size

if TYPE_CHECKING:
    from rigcheck.model.bench import CompareDocument, SingleDocument

    BenchDoc = SingleDocument | CompareDocument  # report/bench/render.py's

# Unit words in key names (DESIGN.md: units are in the names) and how a header shows them.
_KEY_UNITS: dict[str, str] = {
    "gbps": "GB/s",
    "tflops": "TFLOPS",
    "bytes": "bytes",
    "us": "µs",
    "ms": "ms",
    "s": "s",
    "w": "W",
    "c": "C",
    "mhz": "MHz",
    "gib": "GiB",
    "mib": "MiB",
    "percent": "%",
    "pct": "%",
}
_GENERIC_KEYS = ("unit", "repeats", "warmup", "sizes", "backend", "world_size", "method_version")
_STAT_KEYS = ("value", "median", "min", "max")
_SIZE_KEYS = ("size_bytes", "message_bytes", "bytes")
_Y_KEYS = ("busbw_gbps", "bandwidth_gbps", "algbw_gbps", "tflops", "value")


def _split_unit(key: str) -> tuple[str, str]:
    """``busbw_gbps`` -> ("busbw", "GB/s"), ``time_us_median`` -> ("time median", "µs"), ``samples_per_s`` ->
    ("samples/s", ""); a key without a unit word keeps its name."""
    if key.endswith("_per_s"):
        return key[: -len("_per_s")].replace("_", " ") + "/s", ""
    words = key.split("_")
    for i in range(len(words) - 1, 0, -1):
        unit = _KEY_UNITS.get(words[i].lower())
        if unit is not None:
            return " ".join(words[:i] + words[i + 1 :]), unit
    return key.replace("_", " "), ""


def _value_text(key: str, value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        if "p2p" in key.lower():
            return "Y" if value else "N"
        return "yes" if value else "NO" if key == "correct" else "no"
    if isinstance(value, int | float) and key.endswith("_bytes"):
        return rounded_size(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}"
    if isinstance(value, int):
        return f"{value:,}" if abs(value) >= 10000 else str(value)
    if isinstance(value, list) and all(isinstance(v, int | float) for v in value):
        shown = ", ".join(_value_text("", v) for v in value[:6])
        return shown + (f", … ({len(value)} in all)" if len(value) > 6 else "")
    if isinstance(value, dict | list):
        return json.dumps(value, sort_keys=True, default=str)
    return str(value)


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def _table(rows: Sequence[dict[str, Any]], keys: Sequence[str], unit: str | None, css: str) -> str:
    out = [f'<table class="{css}"><thead><tr>']
    for k in keys:
        if k in _STAT_KEYS and unit:
            header = f"{k} ({unit})"
        else:
            name, key_unit = _split_unit(k)
            header = f"{name} ({key_unit})" if key_unit and key_unit != "bytes" else name
        out.append(f'<th data-key="{esc(k)}">{esc(header)}</th>')
    out.append("</tr></thead><tbody>")
    for r in rows:
        out.append("<tr>")
        for k in keys:
            v = r.get(k)
            cls = "num" if _is_number(v) else ""
            bad = v is False and k == "correct"
            cls = (cls + " na" if v is None else cls) + (" bad" if bad else "")
            title = f' title="{esc(v)}"' if _is_number(v) and k.endswith("_bytes") else ""
            out.append(f'<td class="{cls.strip()}"{title}>{esc(_value_text(k, v))}</td>')
        out.append("</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def _keys(rows: Iterable[dict[str, Any]]) -> list[str]:
    keys: list[str] = []
    for r in rows:
        keys += [k for k in r if k not in keys]
    return keys


def _varying(rows: Sequence[dict[str, Any]], key: str) -> bool:
    seen = {json.dumps(r.get(key), sort_keys=True, default=str) for r in rows}
    return len(seen) > 1


def _categorical(rows: Sequence[dict[str, Any]], keys: Sequence[str], exclude: Sequence[str]) -> list[str]:
    """Keys that tell rows apart without being measurements: strings, flags, shapes (ints without a unit)."""
    out = []
    for k in keys:
        if k in exclude or k in _STAT_KEYS or k in _GENERIC_KEYS or not _varying(rows, k):
            continue
        values = [r.get(k) for r in rows if r.get(k) is not None]
        flags_or_words = all(isinstance(v, str | bool) for v in values)
        shape = all(isinstance(v, int) and not isinstance(v, bool) for v in values) and not _split_unit(k)[1]
        if flags_or_words or shape:
            out.append(k)
    return out


def _row_label(r: dict[str, Any], cats: Sequence[str], with_name: bool) -> str:
    parts = [str(r.get("name", ""))] if with_name else []
    for k in cats:
        v = r.get(k)
        if isinstance(v, bool):
            parts.append(f"{k} {_value_text(k, v)}")
        elif isinstance(v, int):
            parts.append(f"{k}={v}")
        elif v is not None:
            # A short code ("Y", "N", "on") says nothing without its key.
            parts.append(f"{k} {v}" if len(str(v)) <= 3 else str(v))
    return " ".join(p for p in parts if p) or "result"


def _bench_chart(doc_id: str, rows: Sequence[dict[str, Any]], benchmark: str) -> str:
    """A chart chosen from the rows: a size sweep on a log2 axis, else one bar per row (per unit)."""
    keys = _keys(rows)
    size_key = next(
        (k for k in _SIZE_KEYS if k in keys and len({r.get(k) for r in rows if _is_number(r.get(k))}) > 1), None
    )
    if size_key is not None:
        y_key = next((k for k in _Y_KEYS if any(_is_number(r.get(k)) for r in rows)), None)
        if y_key is None:
            return ""
        y_name, y_unit = _split_unit(y_key)
        if y_key == "value":
            units = {str(r.get("unit")) for r in rows if r.get("unit")}
            y_name, y_unit = "value", units.pop() if len(units) == 1 else ""
        cats = _categorical(rows, keys, exclude=(size_key,))
        with_name = "name" in cats
        cats = [c for c in cats if c != "name"]
        groups: dict[str, list[dict[str, Any]]] = {}
        for r in rows:
            if _is_number(r.get(size_key)) and r.get(size_key, 0) > 0:
                groups.setdefault(_row_label(r, cats, with_name) if (cats or with_name) else y_name, []).append(r)
        series = []
        for n, (label, members) in enumerate(groups.items()):
            pts: list[tuple[float, float | None]] = [
                (float(r[size_key]), float(r[y_key]) if _is_number(r.get(y_key)) else None)
                for r in sorted(members, key=lambda r: float(r[size_key]))
            ]
            series.append(Series(label, pts, GPU_PALETTE[n % len(GPU_PALETTE)], markers=len(pts) <= 64))
        if not series:
            return ""
        ceilings = [
            HLine(float(rows[0][k]), f"{_split_unit(k)[0]} {float(rows[0][k]):.0f} {y_unit}", "#64748b")
            for k in keys
            if k.startswith(("theoretical_", "ceiling_", "reference_"))
            and _split_unit(k)[1] == y_unit
            and _is_number(rows[0].get(k))
            and not _varying(rows, k)
        ]
        svg = line_chart(
            uid=f"{doc_id}-chart",
            title=f"{benchmark}: {y_name} by message size ({y_unit})",
            desc=f"{y_name} in {y_unit} against the message size on a log2 axis, one line per "
            + ", ".join(groups)
            + ".",
            x=Axis("message size", "log2 scale", log2=True, tick_format=rounded_size),
            y=Axis(y_name, y_unit),
            series=series,
            hlines=ceilings,
            y_zero=True,
        )
        return (
            f'<figure class="plot" data-plot="bench-sweep"><figcaption>{esc(y_name)} by message size</figcaption>'
            f"{svg}</figure>"
        )
    # One bar per row, one chart per unit.
    cats = _categorical(rows, keys, exclude=())
    with_name = "name" in cats or (len({r.get("name") for r in rows}) <= 1 and not cats)
    cats = [c for c in cats if c != "name"]
    by_unit: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_unit.setdefault(str(r.get("unit") or ""), []).append(r)
    figs = []
    for n, (unit, members) in enumerate(by_unit.items()):
        bars = [
            Bar(
                _row_label(r, cats, with_name),
                float(r["value"]) if _is_number(r.get("value")) else None,
                float(r["min"]) if _is_number(r.get("min")) else None,
                float(r["max"]) if _is_number(r.get("max")) else None,
            )
            for r in members
        ]
        if not any(b.value is not None for b in bars):
            continue
        svg = bar_chart(
            uid=f"{doc_id}-bars{n}",
            title=f"{benchmark}: median per result ({unit})",
            desc=f"Median {unit} per result, with the min–max range of the repeats as whiskers: "
            + "; ".join(f"{b.label} {num(b.value)}" for b in bars)
            + ".",
            bars=bars,
            value_axis=Axis("median, whiskers min–max", unit),
            colour=GPU_PALETTE[n % len(GPU_PALETTE)],
            value_format=num,
        )
        figs.append(
            f'<figure class="plot" data-plot="bench-bars"><figcaption>Median per result ({esc(unit)})</figcaption>'
            f"{svg}</figure>"
        )
    return "".join(figs)


def _generic(obj: Any, key: str = "") -> str:
    """Any JSON value as HTML: lists of objects as tables, objects as definition lists."""
    if isinstance(obj, list) and obj and all(isinstance(x, dict) for x in obj):
        return _table(obj, _keys(obj), None, "comparison")
    if isinstance(obj, dict):
        items = []
        for k, v in obj.items():
            name, unit = _split_unit(str(k))
            label = f"{name} ({unit})" if unit and unit != "bytes" else name
            inner = _generic(v, str(k)) if isinstance(v, dict | list) and v else esc(_value_text(str(k), v))
            items.append(f"<dt>{esc(label)}</dt><dd>{inner}</dd>")
        return '<dl class="facts">' + "".join(items) + "</dl>"
    return esc(_value_text(key, obj))


def _bench_body(doc: dict[str, Any], doc_id: str, level: int) -> list[str]:
    h = f"h{level}"
    benchmark = str(doc.get("benchmark") or "benchmark")
    out: list[str] = []
    if doc.get("partial") or doc.get("error"):
        what = "partial results" if doc.get("partial") else "error"
        out.append(f'<p class="banner">{esc(what)}: {esc(doc.get("error") or "the run did not finish")}</p>')
    method = doc.get("method")
    line = []
    if doc.get("backend"):
        line.append(f"{doc['backend']}, world size {doc.get('world_size', '?')}")
    if isinstance(method, dict):
        line.append(
            f"{method.get('warmup', '?')} warm-up, {method.get('repeats', '?')} timed, "
            f"{method.get('statistic', 'median')} ({method.get('timer', '?')}); "
            f"method {method.get('method_version', '?')}"
        )
    if line:
        out.append(f'<p class="muted">{esc("; ".join(line))}</p>')
    versions = doc.get("versions")
    if isinstance(versions, dict) and versions:
        out.append(
            '<p class="muted">versions: '
            + esc(", ".join(f"{k} {v}" for k, v in versions.items() if v is not None) or "unknown")
            + "</p>"
        )
    for warning in doc.get("warnings") or []:
        out.append(f'<p class="banner warn-banner">warning: {esc(warning)}</p>')
    for note in doc.get("notes") or []:
        out.append(f'<p class="note">• {esc(note)}</p>')
    storage = doc.get("storage")  # bench nvme: the filesystem and drive under the directory
    if isinstance(storage, dict):
        out.append(f'<{h} class="storage">Storage</{h}>{_generic(storage)}')
    comparison = doc.get("comparison")
    if comparison:
        out.append(f'<{h} class="comparison">Comparison</{h}>{_generic(comparison)}')
    rows = [r for r in doc.get("results") or [] if isinstance(r, dict)]
    if rows:
        out.append(_bench_chart(doc_id, rows, benchmark))
        keys = _keys(rows)
        units = {r.get("unit") for r in rows}
        unit = str(units.pop()) if len(units) == 1 and None not in units else None
        same = [k for k in keys if k in _GENERIC_KEYS and len(rows) > 1 and not _varying(rows, k)]
        if unit is not None and "unit" not in same:
            same.append("unit")
        cols = [k for k in keys if k not in same]
        out.append(f"<{h}>Results</{h}>")
        if same:
            out.append(
                '<p class="muted">same for every row: '
                + esc("; ".join(f"{k.replace('_', ' ')} {_value_text(k, rows[0].get(k))}" for k in same))
                + "</p>"
            )
        out.append(f'<div class="scroll">{_table(rows, cols, unit, "results")}</div>')
    elif not doc.get("runs") and not comparison:
        out.append('<p class="na">No results.</p>')
    for n, run in enumerate(doc.get("runs") or []):
        if isinstance(run, dict):
            label = run.get("label") or run.get("name") or f"run {n + 1}"
            if run.get("p2p") is not None:
                label = f"{label}, P2P {_value_text('p2p', run.get('p2p'))}"
                if run.get("transport"):
                    label += f" (transport: {run['transport']})"
            out.append(f'<details class="run"><summary>{esc(label)}</summary>')
            out += _bench_body(run, f"{doc_id}-run{n}", min(level + 1, 4))
            out.append("</details>")
    return out


def _collective_lines(document: BenchDoc) -> list[str]:
    """A collective's source, ceiling and verdict, and nccl-tests' two summary lines (as the terminal shows them)."""
    from rigcheck.model.bench import CollectiveDocument
    from rigcheck.report.bench.collective import collective_context, collective_summary

    if not isinstance(document, CollectiveDocument):
        return []
    lines = [*collective_context(document), *collective_summary(document)]
    return [f'<p class="summary">{esc(line)}</p>' for line in lines]


def _reference_lines(document: BenchDoc) -> list[str]:
    """An imported nvbandwidth / p2pBandwidthLatencyTest output's source, verdicts and matrices."""
    from rigcheck.report.bench.reference import html_parts, imported

    ref = imported(document)
    return html_parts(ref) if ref is not None else []


def bench_html(document: BenchDoc) -> str:
    """A ``rigcheck.bench/1`` document as one page: chart, result table and the P2P comparison when present."""
    doc = document.to_json_dict()
    benchmark = str(doc.get("benchmark") or "benchmark")
    body = [f"<header><h1>rigcheck bench {esc(benchmark)}</h1></header>"]
    body += _collective_lines(document)
    body += _reference_lines(document)
    body += _bench_body(doc, "bench", 2)
    snapshot = doc.get("snapshot")
    if isinstance(snapshot, dict):
        gpus = [g for g in snapshot.get("gpus") or [] if isinstance(g, dict)]
        names = sorted({str(g.get("name")) for g in gpus if g.get("name")})
        host_value = snapshot.get("host")
        host: dict[str, Any] = host_value if isinstance(host_value, dict) else {}
        what = ", ".join(
            x for x in (str(host.get("hostname") or ""), f"{len(gpus)} × {' / '.join(names)}" if names else "") if x
        )
        if what:
            body.append(f'<p class="muted">machine: {esc(what)}</p>')
    body.append(footer())
    return page(f"rigcheck bench {benchmark}", "\n".join(body))

"""The HTML reports: structure and content, parsed (html.parser for the page, xml.etree for each SVG).

The burn pages are built from the real 10 Hz H100 traces under fixtures/corpus/telemetry, read here with
the csv module (the same columns `nvidia-smi --query-gpu=... --format=csv -lms 100` writes).
"""

from __future__ import annotations

import csv
import itertools
import re
import xml.etree.ElementTree as ET
from datetime import datetime
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from rigcheck.checks.doctor import run_checks
from rigcheck.cli.exits import exit_code_for
from rigcheck.errors import OutputError
from rigcheck.model import CLOCK_EVENT_REASONS, Finding, Severity, snapshot_from_json
from rigcheck.model.bench import (
    CollectiveDocument,
    CollectiveRow,
    MatmulBest,
    MatmulDocument,
    MatmulRow,
    Method,
    TrainCompareDocument,
    Versions,
    row_head,
)
from rigcheck.model.burn import GpuBurnAnalysis
from rigcheck.model.doctor import DoctorDocument, doctor_document
from rigcheck.model.telemetry import Sample, Trace, TraceGpu
from rigcheck.report.bench.html import bench_html
from rigcheck.report.burn.html import burn_html
from rigcheck.report.common import SEVERITY_ORDER
from rigcheck.report.doctor import doctor_html
from rigcheck.report.html import (
    CSP,
    GUIDE_BANDS,
    KIND_COLOURS,
    write_html,
)
from rigcheck.report.svg import decimate, merge_spans, nice_ticks

FIXTURES = Path(__file__).parent.parent / "fixtures"
SNAPSHOTS = FIXTURES / "snapshots"
TELEMETRY = FIXTURES / "corpus" / "telemetry"
SVG_NS = "{http://www.w3.org/2000/svg}"
HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>'


# ---------------------------------------------------------------------------------------------- builders


def _number(text: str) -> float | None:
    text = text.strip()
    if not text or text.startswith("["):  # "[N/A]", "[Not Supported]"
        return None
    return float(text.split()[0])


def smi_csv_trace(path: Path) -> Trace:
    """A Trace from an `nvidia-smi --query-gpu=... --format=csv -lms 100` file (the columns of the corpus)."""
    samples: list[Sample] = []
    t0: datetime | None = None
    with path.open(newline="") as fh:
        reader = csv.reader(fh)
        header = [h.strip() for h in next(reader)]
        col = {name: i for i, name in enumerate(header)}
        for row in reader:
            if len(row) != len(header):
                continue
            stamp = datetime.strptime(row[col["timestamp"]].strip(), "%Y/%m/%d %H:%M:%S.%f")
            t0 = t0 or stamp
            mask = int(row[col["clocks_event_reasons.active"]].strip(), 16)
            samples.append(
                Sample(
                    t_s=(stamp - t0).total_seconds(),
                    gpu=int(row[col["index"]]),
                    power_draw_w=_number(row[col["power.draw [W]"]]),
                    power_enforced_limit_w=_number(row[col["power.limit [W]"]]),
                    temp_c=_number(row[col["temperature.gpu"]]),
                    temp_memory_c=_number(row[col["temperature.memory"]]),
                    sm_clock_mhz=_number(row[col["clocks.current.sm [MHz]"]]),
                    sm_clock_max_mhz=_number(row[col["clocks.max.sm [MHz]"]]),
                    utilization_gpu_percent=_number(row[col["utilization.gpu [%]"]]),
                    reasons=[name for bit, name in enumerate(CLOCK_EVENT_REASONS) if mask >> bit & 1],
                )
            )
    return Trace(source="nvidia-smi-csv", samples=samples, interval_s=0.1, path=path.name)


def burn_trace() -> Trace:
    trace = smi_csv_trace(TELEMETRY / "smi-lms-torch-bf16-burn.csv")
    # The card's thresholds as NVML gives them on this H100 (../shared/corpus/h100-vm): 89 C slowdown, 95 C shutdown.
    trace.gpus[0] = TraceGpu(index=0, name="NVIDIA H100 80GB HBM3", temp_slowdown_c=89.0, temp_shutdown_c=95.0)
    return trace


def burn_analysis(index: int = 0, verdict: str = "throttling (power-limited)") -> GpuBurnAnalysis:
    return GpuBurnAnalysis(
        index=index,
        loaded_s=45.0,
        power_draw_w_median_loaded=697.0,
        power_enforced_limit_w=700.0,
        temp_c_max=70.0,
        temp_slowdown_c=89.0,
        sm_clock_mhz_median_loaded=1365.0,
        reasons_time_fraction={"sw_power_cap": 0.93, "hw_power_brake_slowdown": 0.0},
        limiter="power",
        verdict=verdict,
        advice="The card holds its power cap: check that each 8-pin socket has its own cable.",
        time_to_power_cap_s=1.4,
        temp_rise_c=29.0,
        temp_plateau_c=69.0,
        slowdown_margin_c=19.0,
        sm_clock_mhz_first=1980.0,
        sm_clock_drop_percent=31.1,
    )


def synthetic_trace(gpus: int, seconds: float, hz: float = 10.0) -> Trace:
    """A long multi-GPU trace: a sine of power, temperature creeping to the slowdown threshold, flickering reasons."""
    import math

    samples = []
    n = int(seconds * hz)
    for i in range(n):
        t = i / hz
        for g in range(gpus):
            reasons = ["sw_power_cap"] if (i // 7) % 2 else []
            if g == 1 and i % 13 == 0:
                reasons.append("hw_power_brake_slowdown")
            samples.append(
                Sample(
                    t_s=t,
                    gpu=g,
                    power_draw_w=600 + 90 * math.sin(t / 30 + g),
                    power_enforced_limit_w=700.0,
                    temp_c=40 + 48 * (1 - math.exp(-t / 600)) + (i % 5) * 0.3,
                    sm_clock_mhz=1980 - 600 * ((i // 7) % 2),
                    sm_clock_max_mhz=1980.0,
                    reasons=reasons,
                )
            )
    trace = Trace(source="rigcheck-sampler", samples=samples, interval_s=1 / hz)
    for g in range(gpus):
        trace.gpus[g] = TraceGpu(index=g, name="NVIDIA H100 80GB HBM3", temp_slowdown_c=89.0, temp_shutdown_c=95.0)
    return trace


def doctor_report(name: str) -> DoctorDocument:
    """The doctor document of a fixture snapshot, as `rigcheck doctor --from` builds it."""
    snap = snapshot_from_json((SNAPSHOTS / f"{name}.json").read_text())
    findings = run_checks(snap)
    return doctor_document(snap, findings, exit_code=exit_code_for(findings), strict=False)


BENCH_VERSIONS = Versions(rigcheck="0.1.0", python="3.11", torch="2.5.1", cuda="12.4", nccl="2.21.5")


def allreduce_doc() -> CollectiveDocument:
    """An 8-GPU all-reduce sweep, 1 KiB to 1 GiB, busbw rising to 360 GB/s."""
    method = Method(method_version="collectives-1", warmup=5, repeats=20, timer="cuda_events")
    rows = []
    for exp in range(10, 31, 2):
        size = 2**exp
        busbw = 360.0 * size / (size + 2**22)
        head = row_head(
            name="allreduce",
            unit="GB/s",
            samples=[busbw * 0.99, busbw, busbw * 1.01],
            method=method,
            backend="nccl",
            world_size=8,
            sizes=[size],
        )
        rows.append(
            CollectiveRow(
                **head,
                op="allreduce",
                size_bytes=size,
                time_us_median=size / (busbw * 1e3) * 1.75,
                algbw_gbps=busbw / 1.75,
                busbw_gbps=busbw,
                correct=True,
            )
        )
    return CollectiveDocument(
        benchmark="allreduce",
        partial=False,
        error=None,
        method=method,
        backend="nccl",
        world_size=8,
        versions=BENCH_VERSIONS,
        snapshot=None,
        results=rows,
        op="allreduce",
        sizes=[r.size_bytes for r in rows],
        wall_s=12.5,
        notes=[],
    )


def matmul_doc(**update: Any) -> MatmulDocument:
    """One H100's bf16 sweep over four squares; ``update`` changes the document's keys (partial, error)."""
    method = Method(method_version="matmul-1", warmup=3, repeats=10, timer="cuda_events")
    rows = []
    for m, tf in ((1024, 310.2), (4096, 655.0), (8192, 702.4), (16384, 663.1)):
        rows.append(
            MatmulRow(
                **row_head(
                    name=f"matmul bf16 {m}x{m}x{m}",
                    unit="TFLOPS",
                    samples=[tf * 0.95, tf, tf * 1.02],
                    method=method,
                    backend="nccl",
                    world_size=1,
                    sizes=[m, m, m],
                ),
                rank=0,
                gpu=0,
                device_name="NVIDIA H100 80GB HBM3",
                dtype="bf16",
                m=m,
                n=m,
                k=m,
                time_us_median=2 * m**3 / tf / 1e6,
                peak_tflops=989.4,
                peak_source="NVIDIA H100 datasheet",
                correct=True,
                max_rel_error=1e-3,
                best=m == 8192,
                tflops_median=tf,
                tflops_min=tf * 0.95,
                tflops_max=tf * 1.02,
                fraction_of_peak=tf / 989.4,
            )
        )
    best = rows[2]
    doc = MatmulDocument(
        partial=False,
        error=None,
        method=method,
        backend="nccl",
        world_size=1,
        versions=BENCH_VERSIONS,
        snapshot=None,
        results=rows,
        notes=[],
        best=[MatmulBest(**{k: getattr(best, k) for k in MatmulBest.model_fields})],
    )
    return doc.model_copy(update=update)


def compare_doc() -> TrainCompareDocument:
    """The guide's pair, as `bench train --compare-p2p` builds it: 101.9 s with P2P, 131.4 s without."""
    from rigcheck.bench.compare import compare_p2p
    from tests.bench.test_bench_compare import GUIDE_NO_P2P_S, GUIDE_P2P_S, P2P_LOG, SHM_LOG, train_doc

    def run(env: dict[str, str], nccl_debug: bool) -> tuple[Any, str]:
        off = env.get("NCCL_P2P_DISABLE") == "1"
        return (train_doc(GUIDE_NO_P2P_S), SHM_LOG) if off else (train_doc(GUIDE_P2P_S), P2P_LOG)

    doc = compare_p2p(run, label="train")
    assert isinstance(doc, TrainCompareDocument)
    return doc


# ---------------------------------------------------------------------------------------------- parsing


class Page(HTMLParser):
    """Collects the tags, their attributes and the visible text of a page."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        if self.lasttag != "style":
            self.text.append(data)

    def find(self, tag: str, **attrs: str) -> list[dict[str, str | None]]:
        return [a for t, a in self.tags if t == tag and all(a.get(k.rstrip("_")) == v for k, v in attrs.items())]

    @property
    def all_text(self) -> str:
        return " ".join(" ".join(self.text).split())


def squeeze(text: str) -> str:
    """Text without whitespace or backticks (commands in backticks are set as <code>), for comparing."""
    return re.sub(r"[\s`]+", "", text)


def svgs(html: str) -> list[ET.Element]:
    """Every inline SVG, parsed as XML (so each must be well-formed)."""
    return [ET.fromstring(m.group(0)) for m in re.finditer(r"<svg\b.*?</svg>", html, flags=re.S)]


def figure_svg(html: str, plot: str, gpu: int | None = None) -> ET.Element:
    scope = html
    if gpu is not None:
        start = html.index(f'<section class="gpu" id="gpu{gpu}"')
        scope = html[start : html.index("</section>", start)]
    m = re.search(rf'<figure class="plot" data-plot="{plot}">.*?(<svg\b.*?</svg>)', scope, flags=re.S)
    assert m is not None, f"no {plot} plot"
    return ET.fromstring(m.group(1))


def title_of(element: ET.Element) -> str:
    title = element.find(f"{SVG_NS}title")
    assert title is not None, f"{element.tag} without a <title>"
    return title.text or ""


def svg_texts(svg: ET.Element) -> list[str]:
    return [t.text or "" for t in svg.iter(f"{SVG_NS}text")]


def assert_self_contained(html: str) -> None:
    """No script, no external reference, the CSP that forbids network loads, a charset."""
    page = Page(html)
    assert not page.find("script")
    assert "<script" not in html.lower().replace("&lt;script", "")
    for _tag, attrs in page.tags:
        for key in ("src", "href", "action", "srcset", "data", "poster", "xlink:href"):
            value = attrs.get(key) or ""
            assert not re.match(r"\s*(https?:)?//", value), f"{key}={value}"
            assert not value.strip().lower().startswith("javascript:"), f"{key}={value}"
        assert not any(k.startswith("on") for k in attrs), f"event handler attribute in {attrs}"
    assert not re.search(r"url\(\s*['\"]?\s*(https?:)?//", html), "a CSS url() that loads from the network"
    assert not re.search(r"@import", html)
    # xmlns is a name, not a load; no other http(s) URL may appear in an attribute.
    for m in re.finditer(r'(\w[\w:-]*)="(https?://[^"]*)"', html):
        assert (m.group(1), m.group(2)) == ("xmlns", "http://www.w3.org/2000/svg"), m.group(0)
    metas = page.find("meta")
    assert any((m.get("charset") or "").lower() == "utf-8" for m in metas)
    csp = [m.get("content") for m in metas if (m.get("http-equiv") or "").lower() == "content-security-policy"]
    assert csp == [CSP]
    assert "default-src 'none'" in CSP
    assert "img-src data:" in CSP


# ---------------------------------------------------------------------------------------------- doctor


@pytest.mark.parametrize("name", sorted(p.stem for p in SNAPSHOTS.glob("*.json")))
def test_every_snapshot_renders_self_contained(name: str) -> None:
    report = doctor_report(name)
    html = doctor_html(report)
    assert_self_contained(html)
    svgs(html)  # any SVG must be well-formed XML
    page = Page(html)
    assert "rigcheck doctor" in page.all_text
    # Every finding that is not OK is on the page with its id and, where it has one, its advice.
    text = squeeze(page.all_text)
    for f in report.findings:
        if f.severity is not Severity.OK:
            assert f"[{f.id}]" in text
            assert squeeze(f.message) in text
            if f.advice:
                assert squeeze(f.advice) in text


def test_findings_are_grouped_in_severity_order_with_advice() -> None:
    report = doctor_report("ecc-errors")
    html = doctor_html(report)
    page = Page(html)
    order = [a["data-severity"] for a in page.find("li") if a.get("class") == "finding"]
    ranks = [next(i for i, s in enumerate(SEVERITY_ORDER) if s.value == sev) for sev in order]
    assert ranks == sorted(ranks), order
    assert order[0] == "fail"
    assert "ok" in order  # the passed checks, last, folded away
    details = html.index('<section id="passed"><details>')
    assert all(html.index(f'data-severity="{s}"') < details for s in set(order) - {"ok"})
    assert "health.ecc-uncorrected-volatile" in html


def test_identical_findings_fold_into_one_item_naming_every_subject() -> None:
    report = doctor_report("healthy-8x-h100")
    html = doctor_html(report)
    page = Page(html)
    nvlink_items = [a for a in page.find("li") if a.get("data-id") == "topology.nvlink"]
    assert len(nvlink_items) == 1
    assert "28 pairs" in page.all_text


def test_topology_grid_cells_are_coloured_by_link_kind() -> None:
    report = doctor_report("2x-3090-phb-throttling")
    page = Page(doctor_html(report))
    cells = [a for a in page.find("td") if "link" in (a.get("class") or "").split()]
    kinds = {a["data-kind"] for a in cells}
    assert kinds == {"self", "host_bridge"}
    bg, fg = KIND_COLOURS["host_bridge"]
    for a in cells:
        if a["data-kind"] == "host_bridge":
            assert a["style"] == f"background:{bg};color:{fg}"
    # NVLink box: every off-diagonal cell green, and the kinds differ in colour.
    page8 = Page(doctor_html(doctor_report("healthy-8x-h100")))
    cells8 = [a for a in page8.find("td") if "link" in (a.get("class") or "").split()]
    assert len(cells8) == 64
    assert sum(a["data-kind"] == "nvlink" for a in cells8) == 56
    assert all(KIND_COLOURS["nvlink"][0] in (a.get("style") or "") for a in cells8 if a["data-kind"] == "nvlink")
    assert len({bg for bg, _ in KIND_COLOURS.values()}) == len(KIND_COLOURS)
    # The legend names every kind in words, and the summary line is there.
    assert {a["data-kind"] for a in page8.find("li") if a.get("data-kind")} == set(KIND_COLOURS)
    assert "all pairs NVLink" in page8.all_text


def test_gpu_table_shows_reasons_and_unreadable_gpus() -> None:
    page = Page(doctor_html(doctor_report("gpu-lost")))
    rows = [a for a in page.find("tr") if "unreadable" in (a.get("class") or "")]
    assert len(rows) == 1
    assert "unreadable (GPU lost)" in page.all_text
    page = Page(doctor_html(doctor_report("consumer-power-not-supported")))
    assert "n/a (not supported)" in page.all_text
    assert any(a.get("class") == "na" for a in page.find("td"))


def test_no_gpu_snapshot_says_so_and_has_no_grid() -> None:
    html = doctor_html(doctor_report("no-gpu"))
    assert 'id="topology"' not in html
    assert "GPUs: none" in Page(html).all_text


def test_hostile_strings_are_escaped_everywhere() -> None:
    report = doctor_report("2x-3090-phb-throttling")
    report.snapshot.gpus[0].name = HOSTILE
    report.snapshot.host.hostname = HOSTILE
    report.findings.append(
        Finding(
            id="x.<b>",
            severity=Severity.FAIL,
            category="x",
            subject=HOSTILE,
            message=HOSTILE,
            advice=HOSTILE + '" onmouseover="alert(2)',
        )
    )
    doctor = doctor_html(report)
    trace = burn_trace()
    trace.gpus[0].name = HOSTILE
    trace.path = HOSTILE
    analysis = burn_analysis(verdict=HOSTILE)
    analysis.advice = HOSTILE
    burn = burn_html(trace, [analysis], title=HOSTILE)
    sweep = allreduce_doc()
    hostile_row = sweep.results[0].model_copy(update={"name": HOSTILE})
    bench = bench_html(
        sweep.model_copy(
            update={
                "results": [hostile_row, *sweep.results[1:]],
                "notes": [HOSTILE],
                "versions": BENCH_VERSIONS.model_copy(update={"torch": HOSTILE}),
            }
        )
    )
    for html in (doctor, burn, bench):
        assert "<script>" not in html
        assert "<img" not in html
        assert "&lt;script&gt;" in html
        assert_self_contained(html)
        svgs(html)
        assert HOSTILE in Page(html).all_text  # shown to the reader as text


# ---------------------------------------------------------------------------------------------- burn


def test_burn_page_has_every_plot_with_its_lines_and_bands() -> None:
    html = burn_html(burn_trace(), [burn_analysis()], title="rigcheck burn --analyze")
    assert_self_contained(html)
    page = Page(html)
    assert "throttling (power-limited)" in page.all_text
    assert "697 W / 700 W" in page.all_text
    assert "31.1%" in page.all_text
    assert "power cap (SW) 93.0%" in page.all_text

    power = figure_svg(html, "power", gpu=0)
    labels = [title_of(p) for p in power.iter(f"{SVG_NS}path") if p.get("class") == "series"]
    assert labels == ["power draw", "power limit"]
    limit = next(p for p in power.iter(f"{SVG_NS}path") if p.get("class") == "series" and "limit" in str(title_of(p)))
    ys = {float(v) for v in re.findall(r"[ML][\d.]+ ([\d.]+)", limit.get("d", ""))}
    assert len(ys) == 1  # the 700 W limit is a flat line
    assert "power (W)" in svg_texts(power)

    temp = figure_svg(html, "temperature", gpu=0)
    bands = [title_of(r) for r in temp.iter(f"{SVG_NS}rect") if r.get("class") == "band"]
    assert bands == [label for _lo, _hi, label, _c in GUIDE_BANDS]
    hlines = [title_of(ln) for ln in temp.iter(f"{SVG_NS}line") if ln.get("class") == "hline"]
    assert hlines == ["slowdown 89 C", "shutdown 95 C"]
    assert "temperature (C)" in svg_texts(temp)
    assert temp.find(f"{SVG_NS}title") is not None
    assert temp.find(f"{SVG_NS}desc") is not None

    clock = figure_svg(html, "clock", gpu=0)
    assert "SM clock (MHz)" in svg_texts(clock)
    assert {title_of(p) for p in clock.iter(f"{SVG_NS}path") if p.get("class") == "series"} == {
        "SM clock",
        "max SM clock",
    }

    reasons = figure_svg(html, "reasons", gpu=0)
    lanes = [g.get("data-lane") for g in reasons.iter(f"{SVG_NS}g") if g.get("class") == "lane"]
    # The trace has idle (0x1) and the SW power cap (0x4): one lane each, named in words, with the share.
    assert [lane.rsplit(" (", 1)[0] for lane in lanes] == ["idle", "power cap (SW)"]  # type: ignore[union-attr]
    cap_lane = next(g for g in reasons.iter(f"{SVG_NS}g") if g.get("data-lane", "").startswith("power cap"))
    assert len(list(cap_lane)) >= 1
    share = int(re.search(r"\((\d+)%\)", lanes[1] or "").group(1))  # type: ignore[union-attr]
    assert 70 <= share <= 80  # 441 of 583 samples
    assert "time since start (s)" in svg_texts(reasons)


def test_every_svg_is_accessible_and_has_axes_with_units() -> None:
    html = burn_html(burn_trace(), [burn_analysis()]) + bench_html(allreduce_doc()) + bench_html(matmul_doc())
    charts = svgs(html)
    assert len(charts) >= 6
    for svg in charts:
        title, desc = svg.find(f"{SVG_NS}title"), svg.find(f"{SVG_NS}desc")
        assert title is not None
        assert title.text
        assert desc is not None
        assert desc.text
        assert svg.get("role") == "img"
        labelled = (svg.get("aria-labelledby") or "").split()
        assert labelled == [title.get("id"), desc.get("id")]
        texts = svg_texts(svg)
        assert any("(" in t and ")" in t for t in texts), texts  # an axis title with its unit
        assert sum(t.strip().replace(".", "").replace(",", "").isdigit() or "iB" in t for t in texts) >= 3  # ticks
    ids = re.findall(r'\sid="([^"]+)"', burn_html(synthetic_trace(3, 60), []))
    assert len(ids) == len(set(ids))


def test_thresholds_missing_from_the_trace_are_said_not_drawn() -> None:
    trace = smi_csv_trace(TELEMETRY / "smi-lms-light-load.csv")
    html = burn_html(trace, [])
    temp = figure_svg(html, "temperature", gpu=0)
    assert not [ln for ln in temp.iter(f"{SVG_NS}line") if ln.get("class") == "hline"]
    assert "slowdown threshold not in this trace" in Page(html).all_text
    # The bands are still shaded: they are the guide's, not the card's.
    assert len([r for r in temp.iter(f"{SVG_NS}rect") if r.get("class") == "band"]) == len(GUIDE_BANDS)


def test_a_gpu_lost_mid_trace_breaks_the_line_and_is_marked() -> None:
    trace = synthetic_trace(2, 20)
    cut = 12.0
    trace.samples = [s for s in trace.samples if not (s.gpu == 1 and s.t_s > cut)]
    last = max((s for s in trace.samples if s.gpu == 1), key=lambda s: s.t_s)
    last.lost = True
    html = burn_html(trace, [])
    power = figure_svg(html, "power", gpu=1)
    assert [title_of(ln) for ln in power.iter(f"{SVG_NS}line") if ln.get("class") == "vline"] == ["GPU lost"]

    # GPU1's line ends at the moment it was lost, GPU0's goes on to the end of the trace.
    def last_x(svg: ET.Element) -> float:
        d = next(p for p in svg.iter(f"{SVG_NS}path") if p.get("class") == "series").get("d", "")
        return float(re.findall(r"[ML]([\d.]+) ", d)[-1])

    assert last_x(power) < last_x(figure_svg(html, "power", gpu=0)) * 0.7


def test_decimation_bounds_the_size_of_long_traces() -> None:
    # An hour at 10 Hz on 8 GPUs: 288k samples.
    trace = synthetic_trace(8, 3600)
    html = burn_html(trace, [burn_analysis(i) for i in range(8)])
    assert len(html.encode()) < 4_000_000, len(html)
    power = figure_svg(html, "power", gpu=3)
    d = next(p for p in power.iter(f"{SVG_NS}path") if p.get("class") == "series").get("d", "")
    assert len(re.findall(r"[ML]", d)) <= 3 * 1100
    # Flickering reasons collapse into at most one span per pixel.
    reasons = figure_svg(html, "reasons", gpu=1)
    for lane in (g for g in reasons.iter(f"{SVG_NS}g") if g.get("class") == "lane"):
        assert len(list(lane)) <= 1100
    assert "min" in svg_texts(power)[-2] or any("(min)" in t for t in svg_texts(power))  # a long trace in minutes


def test_decimate_keeps_peaks_and_gaps() -> None:
    pts: list[tuple[float, float | None]] = [(i / 10, 100.0) for i in range(10_000)]
    pts[5001] = (pts[5001][0], 900.0)  # one spike to the power brake
    pts[7000] = (pts[7000][0], None)  # a gap
    out = decimate(pts, 200)
    assert len(out) <= 3 * 200
    assert max(y for _, y in out if y is not None) == 900.0
    assert any(y is None for _, y in out)
    assert [x for x, _ in out] == sorted(x for x, _ in out)
    assert decimate(pts[:50], 200) == pts[:50]


def test_merge_spans_and_ticks() -> None:
    assert merge_spans([(0, 1), (1.05, 2), (5, 6)], 0.1) == [(0, 2), (5, 6)]
    assert nice_ticks(0, 723, 8) == [0, 100, 200, 300, 400, 500, 600, 700]
    assert nice_ticks(20, 98, 5) == [20, 40, 60, 80]


# ---------------------------------------------------------------------------------------------- bench


def test_bench_collective_sweep_on_a_log2_axis_with_the_table() -> None:
    doc = allreduce_doc()
    html = bench_html(doc)
    assert_self_contained(html)
    page = Page(html)
    headers = [a.get("data-key") for a in page.find("th") if a.get("data-key")]
    assert {"size_bytes", "busbw_gbps", "algbw_gbps", "time_us_median", "value", "correct"} <= set(headers)
    text = page.all_text
    assert "busbw (GB/s)" in text
    assert "time median (µs)" in text
    assert "value (GB/s)" in text
    assert "same for every row: " in text
    assert "backend nccl" in text
    sweep = figure_svg(html, "bench-sweep")
    ticks = svg_texts(sweep)
    assert "1 KiB" in ticks
    assert "1 GiB" in ticks
    assert "message size (log2 scale)" in ticks
    assert "busbw (GB/s)" in ticks
    circles = list(sweep.iter(f"{SVG_NS}circle"))
    assert len(circles) == len(doc.results)
    xs = [float(c.get("cx", 0)) for c in circles]
    steps = {round(b - a, 0) for a, b in itertools.pairwise(xs)}
    assert len(steps) == 1  # equal steps: the sizes double twice per point, evenly spaced on log2


def test_bench_matmul_bars_per_shape_and_partial_banner() -> None:
    html = bench_html(matmul_doc(partial=True, error="rank 1 exited with code -9 (killed)"))
    assert_self_contained(html)
    bars_svg = figure_svg(html, "bench-bars")
    bars = [r for r in bars_svg.iter(f"{SVG_NS}rect") if r.get("class") == "bar"]
    assert len(bars) == 4
    widths = [float(b.get("width", 0)) for b in bars]
    assert widths.index(max(widths)) == 2  # 702 TFLOPS at 8192
    labels = svg_texts(bars_svg)
    assert any("m=8192" in t for t in labels)
    assert any("TFLOPS" in t for t in labels)
    assert "rank 1 exited with code -9" in Page(html).all_text


def test_bench_comparison_is_the_guides_table() -> None:
    html = bench_html(compare_doc())
    page = Page(html)
    text = page.all_text
    assert "Comparison" in text
    # P2P Y/N, the time (s) and samples/s of each run, the transport NCCL used, the speed-up with its unit.
    assert re.search(r"Y – 101\.9 15\.7\d* P2P", text), text
    assert re.search(r"N 1 131\.4 12\.17\d* SHM", text), text
    assert "time (s)" in text
    assert "samples/s" in text
    assert "speedup (%) 22.47" in text
    assert html.count('<details class="run">') == 2


# ---------------------------------------------------------------------------------------------- writing


def test_write_html_writes_whole_file_and_names_it_on_error(tmp_path: Path) -> None:
    target = tmp_path / "report.html"
    html = doctor_html(doctor_report("2x-titan-rtx-nv2"))
    write_html(target, html)
    assert target.read_text(encoding="utf-8") == html
    assert list(tmp_path.iterdir()) == [target]  # no temporary file left
    with pytest.raises(OutputError, match=r"report\.html"):
        write_html(tmp_path / "missing-dir" / "report.html", html)


def test_bench_compare_p2p_document_from_the_bench_module() -> None:
    """The document rigcheck.bench.compare.compare_p2p builds: the guide's table, a warning, both runs folded."""
    from rigcheck.bench.compare import compare_p2p

    def run(env: dict[str, str], nccl_debug: bool) -> tuple[CollectiveDocument, str]:
        doc = allreduce_doc()
        if env.get("NCCL_P2P_DISABLE") == "1":
            slower = [
                r.model_copy(
                    update={
                        "busbw_gbps": r.busbw_gbps / 3,
                        "value": r.busbw_gbps / 3,
                        "median": r.busbw_gbps / 3,
                        "time_us_median": r.time_us_median * 3,
                    }
                )
                for r in doc.results
            ]
            doc = doc.model_copy(update={"results": slower})
        return doc, ""

    doc = compare_p2p(run, label="allreduce")
    html = bench_html(doc)
    assert_self_contained(html)
    text = Page(html).all_text
    assert "Comparison" in text
    assert "warning: allreduce P2P=Y: no NCCL_DEBUG=INFO output" in text
    sweep = figure_svg(html, "bench-sweep")
    series = {title_of(p) for p in sweep.iter(f"{SVG_NS}path") if p.get("class") == "series"}
    assert series == {"p2p Y", "p2p N"}
    assert html.count('<details class="run">') == 2


def test_a_share_is_never_rounded_to_all_or_nothing() -> None:
    from rigcheck.report.burn.html import _share_text

    assert [_share_text(f) for f in (0.995, 0.9996, 1.0, 0.0004, 0.25)] == [
        "99.5%",
        ">99.9%",
        "100.0%",
        "<0.1%",
        "25.0%",
    ]

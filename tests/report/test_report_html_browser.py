"""The HTML reports as a person sees them: headless Chromium loads the file, takes a screenshot, and must
have rendered the plots without making a single network request.

How "no network request" is established: Chromium writes a NetLog (--log-net-log) of every URL request
the network service starts. Chromium itself also phones home in the background (component updater,
accounts, time) despite the --disable-* flags; those requests carry ``initiator: "not an origin"``, while
anything a page asks for carries the page's origin (``"null"`` for a file:// page). So the page's
requests are the URL_REQUEST_START_JOB events with a real initiator. A control test proves the method
detects a load: a page without our CSP that loads an image from a local server shows up in the NetLog
(and the server sees the GET); the same page with our CSP is blocked before it reaches the network.

Also checked: the screenshot decodes (a small PNG reader below, no Pillow) to a page that is not blank
and shows the plots' colours, and the DOM Chromium rendered (--dump-dom) holds the SVG plots.

Set RIGCHECK_SCREENSHOTS=DIR to keep the screenshots (docs/gpu-validation.md uses one).
"""

from __future__ import annotations

import http.server
import itertools
import json
import os
import struct
import subprocess
import threading
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest

from rigcheck.report.bench.html import bench_html
from rigcheck.report.burn.html import burn_html
from rigcheck.report.doctor import doctor_html
from rigcheck.report.html import CSP, KIND_COLOURS, REASON_COLOURS, write_html
from tests.report.test_report_html import allreduce_doc, burn_analysis, burn_trace, doctor_report
from tests.support.ledger_fleet import history_sample

CHROMIUM = Path(os.environ.get("RIGCHECK_CHROMIUM", "/usr/bin/chromium"))
WINDOW = (1280, 2000)

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason=f"needs headless Chromium at {CHROMIUM} (Debian: apt-get install chromium; or set RIGCHECK_CHROMIUM)",
)


# ---------------------------------------------------------------------------------------------- PNG


@dataclass
class Image:
    width: int
    height: int
    channels: int
    rows: list[bytes]

    def pixels(self) -> Iterator[tuple[int, ...]]:
        c = self.channels
        for row in self.rows:
            for x in range(0, len(row), c):
                yield tuple(row[x : x + 3])

    def count(self, rgb: tuple[int, int, int], step: int = 1) -> int:
        """Pixels of exactly this colour (every ``step``-th row, to stay quick)."""
        target = bytes(rgb)
        c = self.channels
        total = 0
        for row in self.rows[::step]:
            total += sum(1 for x in range(0, len(row), c) if row[x : x + 3] == target)
        return total


def read_png(path: Path) -> Image:
    """Decode an 8-bit RGB/RGBA, non-interlaced PNG (what Chromium writes) with struct and zlib."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat = 8, []
    width = height = channels = 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos : pos + 8])
        body = data[pos + 8 : pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            width, height, depth, colour, _comp, _filter, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8
            assert interlace == 0
            channels = {2: 3, 6: 4}[colour]
        elif kind == b"IDAT":
            idat.append(body)
    raw = zlib.decompress(b"".join(idat))
    stride = width * channels
    prev = bytearray(stride)
    rows: list[bytes] = []
    for y in range(height):
        start = y * (stride + 1)
        kind = raw[start]
        line = bytearray(raw[start + 1 : start + 1 + stride])
        if kind == 1:  # Sub
            for c in range(channels):
                line[c::channels] = bytes(v & 255 for v in itertools.accumulate(line[c::channels]))
        elif kind == 2:  # Up
            line = bytearray((a + b) & 255 for a, b in zip(line, prev, strict=True))
        elif kind == 3:  # Average
            for i in range(stride):
                left = line[i - channels] if i >= channels else 0
                line[i] = (line[i] + ((left + prev[i]) >> 1)) & 255
        elif kind == 4:  # Paeth
            for i in range(stride):
                a = line[i - channels] if i >= channels else 0
                b = prev[i]
                c = prev[i - channels] if i >= channels else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return Image(width, height, channels, rows)


def rgb(hex_colour: str) -> tuple[int, int, int]:
    h = hex_colour.lstrip("#")
    return int(h[0:2], 16), int(h[2:4], 16), int(h[4:6], 16)


# ---------------------------------------------------------------------------------------------- Chromium


@dataclass
class Rendered:
    screenshot: Path
    dom: str
    page_requests: list[str]  # URLs the page asked for (not Chromium's own background traffic)
    browser_requests: list[str]


def render(html: str, tmp: Path, name: str) -> Rendered:
    page = tmp / f"{name}.html"
    write_html(page, html)
    keep = os.environ.get("RIGCHECK_SCREENSHOTS")
    shot_dir = Path(keep) if keep else tmp
    shot_dir.mkdir(parents=True, exist_ok=True)
    shot = shot_dir / f"{name}.png"
    netlog = tmp / f"{name}-net.json"
    cmd = [
        str(CHROMIUM),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
        f"--user-data-dir={tmp / f'{name}-profile'}",
        f"--log-net-log={netlog}",
        f"--screenshot={shot}",
        f"--window-size={WINDOW[0]},{WINDOW[1]}",
        "--dump-dom",
        page.resolve().as_uri(),
    ]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    except subprocess.TimeoutExpired:
        pytest.fail(f"Chromium did not finish loading {page} within 120 s")
    assert done.returncode == 0, done.stderr[-2000:]
    page_requests, browser_requests = requests_in(netlog)
    return Rendered(shot, done.stdout, page_requests, browser_requests)


def requests_in(netlog: Path) -> tuple[list[str], list[str]]:
    """(URLs a page requested, URLs Chromium requested for itself), from a NetLog file."""
    log = json.loads(netlog.read_text())
    start_job = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    page: list[str] = []
    browser: list[str] = []
    for event in log["events"]:
        params = event.get("params") or {}
        if event["type"] != start_job or "url" not in params:
            continue
        (browser if params.get("initiator") == "not an origin" else page).append(params["url"])
    return page, browser


class _Trap(http.server.BaseHTTPRequestHandler):
    hits: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        type(self).hits.append(self.path)
        self.send_response(404)
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:  # quiet
        pass


@pytest.fixture
def trap() -> Iterator[tuple[str, list[str]]]:
    """A local HTTP server that records every request it gets."""
    hits: list[str] = []
    handler = type("Trap", (_Trap,), {"hits": hits})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", hits
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


# ---------------------------------------------------------------------------------------------- tests


def test_the_netlog_method_sees_a_page_load_and_our_csp_blocks_it(tmp_path: Path, trap: tuple[str, list[str]]) -> None:
    base, hits = trap
    body = f'<body><p>control</p><img src="{base}/probe.png" alt="probe"></body></html>'
    open_page = f'<!DOCTYPE html><html><head><meta charset="utf-8"></head>{body}'
    seen = render(open_page, tmp_path, "control-open")
    assert f"{base}/probe.png" in seen.page_requests
    assert hits == ["/probe.png"]
    assert all(u not in seen.page_requests for u in seen.browser_requests)

    hits.clear()
    csp_page = (
        f'<!DOCTYPE html><html><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}"></head>{body}'
    )
    blocked = render(csp_page, tmp_path, "control-csp")
    assert blocked.page_requests == []
    assert hits == []


def test_burn_report_renders_its_plots_offline(tmp_path: Path) -> None:
    html = burn_html(burn_trace(), [burn_analysis()], title="rigcheck burn --analyze smi-lms-torch-bf16-burn.csv")
    seen = render(html, tmp_path, "burn")
    assert seen.page_requests == []
    assert seen.dom.count("<svg") == 4
    for plot in ("power", "temperature", "clock", "reasons"):
        assert f'data-plot="{plot}"' in seen.dom
    image = read_png(seen.screenshot)
    assert (image.width, image.height) == WINDOW
    background = image.count((255, 255, 255), step=4)
    assert background < 0.95 * image.width * len(image.rows[::4]), "the page is (nearly) blank"
    # The plots were painted: the power-cap lane (amber), the guide's "excellent" band, the power line.
    assert image.count(rgb(REASON_COLOURS["sw_power_cap"]), step=2) > 2000
    assert image.count(rgb("#e7f6ec"), step=2) > 20000
    assert image.count(rgb("#2563eb"), step=1) > 300


def test_doctor_report_renders_the_coloured_topology_grid_offline(tmp_path: Path) -> None:
    seen = render(doctor_html(doctor_report("healthy-8x-h100")), tmp_path, "doctor")
    assert seen.page_requests == []
    assert seen.dom.count('data-kind="nvlink"') >= 56
    assert 'data-severity="info"' in seen.dom
    image = read_png(seen.screenshot)
    assert image.count(rgb(KIND_COLOURS["nvlink"][0]), step=2) > 5000  # 56 green cells


def test_bench_report_renders_its_chart_offline(tmp_path: Path) -> None:
    seen = render(bench_html(allreduce_doc()), tmp_path, "bench")
    assert seen.page_requests == []
    assert 'data-plot="bench-sweep"' in seen.dom
    assert seen.dom.count("<circle") == len(allreduce_doc().results)
    image = read_png(seen.screenshot)
    assert image.count(rgb("#2563eb"), step=1) > 200  # the busbw line and its points


def test_verify_and_fleet_pages_lead_with_their_verdict_offline(tmp_path: Path) -> None:
    """The verdict is the first thing on each page (above every table), painted in its colour, and nothing is
    fetched."""
    from rigcheck.report.fleet import html as fleet_html
    from rigcheck.report.verify.render import html as verify_html
    from tests.report.test_render_formats import fleet_sample, verify_sample

    for name, page in (("verify", verify_html(verify_sample())), ("fleet", fleet_html(fleet_sample()))):  # type: ignore[arg-type]
        seen = render(page, tmp_path, name)
        assert seen.page_requests == []
        verdict = seen.dom.index('class="result bad"')
        assert verdict < seen.dom.index("<table"), name
        assert "FAIL" in seen.dom[verdict : verdict + 200]
        image = read_png(seen.screenshot)
        assert image.count(rgb("#fee2e2"), step=1) > 500, name  # the red verdict banner was painted


def test_history_page_charts_each_timeline_offline(tmp_path: Path) -> None:
    from rigcheck.report.history import FAILED_COLOUR, PLOTTED
    from rigcheck.report.history import html as history_html

    doc = history_sample()
    assert [a.kind for a in doc.alerts] == ["reissued", "drift"]
    seen = render(history_html(doc), tmp_path, "history")
    assert seen.page_requests == []
    assert seen.dom.count("<svg") == 1
    assert "on n2" in seen.dom  # the day it moved, marked
    assert seen.dom.count(f'fill="{FAILED_COLOUR}"') == 2  # the two failed runs, as dots
    image = read_png(seen.screenshot)
    assert image.count(rgb(PLOTTED["membw"]), step=1) > 300  # the falling bandwidth line was painted
    assert image.count(rgb(FAILED_COLOUR), step=1) > 20

"""Honest sentences on the HTML pages (issue #10): the burn page says what a clock drop is measured from, and
the doctor page's banner counts what the page lists."""

from __future__ import annotations

import re

from rigcheck.checks.burn.judge import analyze_trace
from rigcheck.report.burn.html import burn_html
from rigcheck.report.doctor import doctor_html
from tests.report.test_report_html import Page, burn_analysis, burn_trace, doctor_report


def test_burn_page_says_what_the_clock_drop_is_measured_from() -> None:
    # The real H100 burn (telemetry/smi-lms-torch-bf16-burn.csv): max SM clock 1980 MHz, first seconds ~1418 MHz,
    # sustained 1365 MHz. The 31.1% drop is from the max clock, not from the first seconds (that would be ~4%).
    analysis = analyze_trace(burn_trace())[0]
    assert analysis.sm_clock_drop_percent == 31.1
    text = " ".join(Page(burn_html(burn_trace(), [analysis], title="rigcheck burn --analyze")).all_text.split())
    assert "31.1% below the card's max SM clock 1,980 MHz (sustained median 1,365 MHz)" in text
    assert "a drop of" not in text
    # Without the max clock in the trace the drop is from the first seconds' median, and the page says so.
    no_max = burn_analysis().model_copy(update={"sm_clock_max_mhz": None, "sm_clock_mhz_sustained": 1365.0})
    text = " ".join(Page(burn_html(burn_trace(), [no_max], title="rigcheck burn --analyze")).all_text.split())
    assert "31.1% below the first seconds' median (sustained median 1,365 MHz)" in text


def test_doctor_banner_counts_what_the_page_lists() -> None:
    # 2x 3090: two pcie.slot-limits-width notes say the same thing about GPU0 and GPU1 and are listed as
    # one entry; the banner, the headings and the list agree.
    report = doctor_report("2x-3090-phb-throttling")
    html = doctor_html(report)
    page = Page(html)
    items = [a for a in page.find("li") if a.get("class") == "finding"]
    listed = {
        sev: sum(1 for a in items if a.get("data-severity") == sev) for sev in ("fail", "warn", "unknown", "info")
    }
    banner = re.search(r'<p class="result [a-z]+">(.*?)</p>', html)
    assert banner is not None
    for sev, n in listed.items():
        if n:
            assert f"{n} {sev}" in banner.group(1)
            assert f">{sev.upper()} ({n})</h3>" in html
    assert report.counts.info > listed["info"]  # the two x8/x8 slot notes were folded into one entry
    assert f"{report.counts.info} info" not in banner.group(1)
    assert "listed as" in html  # the findings section says how the two counts relate

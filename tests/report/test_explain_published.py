"""`verify --explain` puts the lowest published healthy figure (facts/published_figures.py, generated from
tests/calibration) beside each catalogue floor with its margin, and marks a floor within 5% of it or above it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from rigcheck.checks.verify.bands import explain_bands, published_mark
from rigcheck.facts import catalog
from rigcheck.facts.bands import CHECKS
from rigcheck.facts.published_figures import LOWEST_HEALTHY, PublishedFigure
from rigcheck.model.site_config import parse_site_config
from rigcheck.report.verify.bands import html, markdown
from tests.support.cli import Rigcheck

NEAR = "within 5% of a published healthy figure"
ABOVE = "above a published healthy figure"


def explain(rigcheck: Rigcheck, *argv: str) -> str:
    """What ``rigcheck verify --explain --gpu "H100 SXM5" ARGV`` printed; it exits 0."""
    code, out, err = rigcheck("verify", "--explain", "--gpu", "H100 SXM5", *argv)
    assert code == 0, err
    return out


def _bands(data: dict[str, Any], gpu: str) -> dict[str, dict[str, Any]]:
    return {b["check"]: b for g in data["gpus"] if g["name"] == gpu for b in g["bands"]}


def _row(text: str, check: str) -> str:
    return next(line for line in text.splitlines() if line.startswith(check + " "))


def test_a_band_with_a_published_figure_shows_it_and_its_margin(rigcheck: Rigcheck) -> None:
    # H100 SXM5 p2p: floor 351 GB/s, the NV18 p2pBandwidthLatencyTest of nccl #1264 reads 371.02 GB/s at its lowest.
    data = json.loads(explain(rigcheck, "--json"))
    p2p = _bands(data, "H100 SXM5")["p2p"]
    assert p2p["expected_min"] == 351
    assert p2p["lowest_healthy"] == 371.02
    assert p2p["lowest_healthy_case"] == "p2p-8xh100-nv18"
    assert p2p["lowest_healthy_source"] == "https://github.com/NVIDIA/nccl/issues/1264"
    assert "H100" in p2p["lowest_healthy_on"]
    assert p2p["margin_pct"] == 5.7
    assert not any(NEAR in n or ABOVE in n for n in data["notes"])  # 5.7% is not near

    text = explain(rigcheck)
    assert "lowest published healthy" in text
    row = _row(text, "p2p")
    assert "371 GB/s" in row
    assert "+5.7%" in row
    assert NEAR not in row
    assert "nccl/issues/1264" in text  # the figure's source in the numbered list


def test_a_band_without_a_published_figure_shows_nothing_new(rigcheck: Rigcheck) -> None:
    assert ("H100 SXM5", "matmul_fp16") not in LOWEST_HEALTHY
    data = json.loads(explain(rigcheck, "--json"))
    fp16 = _bands(data, "H100 SXM5")["matmul_fp16"]
    assert set(fp16) == {"check", "unit", "expected_min", "peak", "source", "basis"}  # absent, never null
    text = explain(rigcheck)
    assert "%" not in _row(text, "matmul_fp16").split("TFLOPS")[-1]  # no margin after the floor and peak


def test_a_gpu_with_no_published_figure_gets_no_note_about_them() -> None:
    name = "A100 SXM4 80GB"
    assert not any(gpu == name for gpu, _ in LOWEST_HEALTHY)
    doc = explain_bands([name], None, None)
    assert all(b.lowest_healthy is None and b.margin_pct is None for g in doc.gpus for b in g.bands)
    assert not any("lowest healthy" in n for n in doc.notes)


def test_a_floor_within_five_percent_of_a_published_figure_is_marked(
    monkeypatch: pytest.MonkeyPatch, rigcheck: Rigcheck
) -> None:
    # Synthetic: a healthy membw of 2750 GB/s against H100 SXM5's 2680 floor is 2.6% above it.
    figure = PublishedFigure(2750.0, "synthetic-near", "synthetic, for this test", "a synthetic H100")
    monkeypatch.setitem(LOWEST_HEALTHY, ("H100 SXM5", "membw"), figure)
    data = json.loads(explain(rigcheck, "--json"))
    membw = _bands(data, "H100 SXM5")["membw"]
    assert (membw["lowest_healthy"], membw["margin_pct"]) == (2750.0, 2.6)
    [note] = [n for n in data["notes"] if NEAR in n]
    assert note.startswith("H100 SXM5 membw: floor 2680 GB/s")
    assert "synthetic-near" in note

    text = explain(rigcheck)
    row = _row(text, "membw")
    assert "+2.6%" in row
    assert "within 5%" in row
    assert NEAR not in _row(text, "p2p")

    doc = explain_bands(["H100 SXM5"], None, None)
    md_row = next(line for line in markdown(doc).splitlines() if line.startswith("| membw |"))
    assert f"+2.6% **{NEAR}**" in md_row
    assert f"<strong>{NEAR}</strong>" in html(doc)


def test_a_floor_above_a_published_healthy_figure_is_marked(monkeypatch: pytest.MonkeyPatch) -> None:
    # Synthetic: a healthy 40 GB/s host copy under H100 SXM5's 42 GB/s floor: the floor fails a healthy card.
    figure = PublishedFigure(40.0, "synthetic-under", "synthetic, for this test", "a synthetic H100")
    monkeypatch.setitem(LOWEST_HEALTHY, ("H100 SXM5", "hostlink_h2d"), figure)
    doc = explain_bands(["H100 SXM5"], None, None)
    band = next(b for b in doc.gpus[0].bands if b.check == "hostlink_h2d")
    assert band.margin_pct == -4.8
    assert any(n.startswith("H100 SXM5 hostlink_h2d: floor 42 GB/s is " + ABOVE) for n in doc.notes)
    assert published_mark(band.margin_pct) is not None
    assert ABOVE in next(line for line in markdown(doc).splitlines() if line.startswith("| hostlink_h2d |"))


def test_a_site_floor_is_held_to_the_published_figure_too() -> None:
    # A site that raises the H100 SXM5 p2p floor to 360 leaves 3.1% to the published 371.02: marked.
    site = parse_site_config(b'[bands."H100 SXM5"]\np2p = 360\n', "site.toml")
    doc = explain_bands(["H100 SXM5"], site, "site.toml")
    p2p = next(b for b in doc.gpus[0].bands if b.check == "p2p")
    assert (p2p.expected_min, p2p.lowest_healthy, p2p.margin_pct) == (360, 371.02, 3.1)
    assert any(n.startswith("H100 SXM5 p2p: floor 360 GB/s is " + NEAR) for n in doc.notes)


def test_every_published_figure_belongs_to_a_catalogue_band() -> None:
    bands = {(g.name, b.check) for g in explain_bands(None, None, None).gpus for b in g.bands}
    for (gpu, check), figure in LOWEST_HEALTHY.items():
        assert catalog.lookup(gpu) is not None, gpu
        assert check in CHECKS, check
        assert (gpu, check) in bands, (gpu, check)
        assert figure.value > 0
        assert figure.case
        assert figure.source

"""Every judgement says how close it was: the figure's margin from what it was held to (checks/verify/figures.py
margin_pct, margin_text), in each judgement's line, as ``reference`` / ``margin_pct`` in the JSON, and as a
column of verify's and `bench ... --from`'s tables."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.console import Console

from rigcheck.checks.verify.figures import baseline_judgement, margin_pct, margin_text
from rigcheck.checks.verify.judge import judge
from rigcheck.report.verify.render import html, markdown, terminal
from tests.checks.test_hostlink_floor import NVB_H100_25, Q_GEN4_SLOT
from tests.checks.test_verify_judge import BF16, SLOW, as_document, gpu_check, node_inputs
from tests.support.cli import Rigcheck


@pytest.mark.parametrize(
    ("value", "reference", "pct", "words"),
    [
        (412.0, 340.0, 21.2, "21% above"),
        (571.0, 712.0, -19.8, "20% below"),
        (55.1, 42.0, 31.2, "31% above"),
        (690.0, 712.4, -3.1, "3.1% below"),
        (712.4, 712.4, 0.0, "0.0% above"),
    ],
)
def test_margin_in_percent_of_what_it_was_held_to(value: float, reference: float, pct: float, words: str) -> None:
    margin = margin_pct(value, reference)
    assert margin == pytest.approx(pct)
    assert margin_text(margin) == words


def test_a_zero_reference_has_no_margin() -> None:
    assert margin_pct(5.0, 0.0) is None
    assert margin_text(None) == "margin unknown"


def test_every_numeric_judgement_carries_its_margin() -> None:
    bf16 = [v * SLOW if i == 3 else v for i, v in enumerate(BF16)]
    judged = judge(node_inputs(bf16=bf16))
    slow = gpu_check(judged, 3, "matmul_bf16")
    by_rule = {j.rule: j for j in slow.judgements}
    assert by_rule["band"].text == "616 TFLOPS, floor 712 (BF16 dense tensor, 989.4 TFLOPS), 14% below"
    assert (by_rule["band"].margin_pct, by_rule["peers"].margin_pct) == (-13.5, -20.0)
    assert by_rule["result"].margin_pct is None  # a rule without a figure has none
    healthy = gpu_check(judged, 0, "hostlink_h2d")
    band = next(j for j in healthy.judgements if j.rule == "band")
    assert (
        band.text
        == "55.1 GB/s, floor 42.0 (PCIe Gen5 x16, the link the slot allows, encoded 63.0 GB/s one direction), 31% above"
    )
    dumped = json.loads(as_document(judged).model_dump_json(by_alias=True))
    gpu3 = next(g for g in dumped["gpus"] if g["index"] == 3)
    matmul = next(c for c in gpu3["checks"] if c["id"] == "matmul_bf16")
    band_json = next(j for j in matmul["judgements"] if j["rule"] == "band")
    assert (band_json["reference"], band_json["margin_pct"]) == (712.4, -13.5)
    result_json = next(j for j in matmul["judgements"] if j["rule"] == "result")
    assert "margin_pct" not in result_json  # absent, not null, where there is nothing to measure from


def test_baseline_judgement_says_its_margin() -> None:
    judgement = baseline_judgement(700.0, "TFLOPS", 770.0, 0.01)
    assert judgement.verdict == "fail"
    assert judgement.text == "700 TFLOPS, baseline 770, 9.1% below (beyond the 5.0% noise)"
    assert judgement.margin_pct == pytest.approx(-9.1)


def test_verify_tables_show_the_margin_column() -> None:
    bf16 = [v * SLOW if i == 3 else v for i, v in enumerate(BF16)]
    doc = as_document(judge(node_inputs(bf16=bf16, full=False)))
    console = Console(width=200, record=True)
    console.print(terminal(doc))
    text = console.export_text()
    assert "margin" in text
    assert "-14%" in text  # GPU3's matmul: 616 against 712
    assert "616 TFLOPS, floor 712 (BF16 dense tensor, 989.4 TFLOPS), 14% below" in text  # the failing line
    md = markdown(doc)
    assert "| GPU | check | verdict | figure | floor | margin | peer best | baseline | src |" in md
    assert "| GPU3 | matmul_bf16 | fail | 616 TFLOPS | 712 | -14% |" in md
    assert "<th>margin</th>" in html(doc)
    assert "<td>-14%</td>" in html(doc)


def test_bench_from_reference_judgements_carry_the_margin(tmp_path: Path, rigcheck: Rigcheck) -> None:
    report = tmp_path / "hostlink.md"
    argv = ["bench", "hostlink", "--from", str(NVB_H100_25), "--from", str(Q_GEN4_SLOT), "--markdown", str(report)]
    code, _, err = rigcheck(*argv)
    assert code == 0, err
    out = report.read_text(encoding="utf-8")
    assert "| check | subject | GB/s | floor | margin | verdict | why |" in out
    assert "| hostlink_h2d | GPU0 | 25.61 | 20.00 | +28% | pass |" in out
    assert "25.61 GB/s, floor 20 (PCIe Gen4 x16, the link the slot allows; the card can do Gen5" in out

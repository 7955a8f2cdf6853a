"""`rigcheck bench matmul --from FILE`: a mamf-finder output (ml-engineering's maximum-achievable-matmul finder,
v1, v2 and the MAMF/MSMF layout) read (readers/reference/mamf.py, readers/reference/mamf_doc.py) and its best figure
judged against
verify's matmul band (checks/reference/mamf.py), end to end through the CLI. Real outputs in tests/fixtures/mamf/
(README.md there gives each source); every input built from them here is labelled synthetic.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from rigcheck.model.bench import MatmulDocument, parse_bench
from rigcheck.probe import live
from rigcheck.readers.reference import mamf_doc
from rigcheck.readers.reference.mamf import looks_like_mamf, parse_mamf
from tests.support.cli import Rigcheck

FIXTURES = Path(__file__).parent.parent / "fixtures"
MAMF = FIXTURES / "mamf"
H100 = MAMF / "mamf-1xh100-sxm5-bf16-v2.txt"
H200_V4 = MAMF / "mamf-1xh200-v4-readme-example.txt"
GH200_V1 = MAMF / "mamf-1xgh200-v1-pr60.txt"
GFX1151 = MAMF / "mamf-1xgfx1151-v2-docker.txt"
GFX1151_SUMMARY = MAMF / "mamf-gfx1151-v2-summary-only.txt"
H100_Q = FIXTURES / "corpus/h100-vm/q.txt"


@pytest.fixture(autouse=True)
def no_live_probe(monkeypatch: pytest.MonkeyPatch) -> None:
    """With --from nothing is run and this machine is never probed: a probe would fail the test."""

    def refuse() -> None:
        raise AssertionError("the live machine was probed")

    monkeypatch.setattr(live, "probe_machine", refuse)


def matmul(argv: list[str], rigcheck: Rigcheck, expect: int = 0) -> MatmulDocument:
    code, out, err = rigcheck("bench", "matmul", *argv, "--json")
    assert code == expect, err
    doc = parse_bench(json.loads(out))
    assert isinstance(doc, MatmulDocument)
    return doc


def one_line_error(argv: list[str], rigcheck: Rigcheck) -> str:
    code, out, err = rigcheck("bench", "matmul", *argv)
    assert code == 2
    assert out == ""
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    return lines[0]


def synthetic(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def scaled(text: str, factor: float) -> str:
    """SYNTHETIC: every TFLOPS figure of a v2 output times ``factor`` (a GPU that runs slow), shapes kept."""

    def scale(found: re.Match[str]) -> str:
        return f"{float(found.group(1)) * factor:.1f}{found.group(2)}"

    return re.sub(r"(\d+\.\d)(\(mean\)|\(median\)|\(max\)| TFLOPS)", scale, text)


# --- real outputs ---------------------------------------------------------------------------------------------


def test_healthy_h100_passes_with_its_margin(rigcheck: Rigcheck) -> None:
    doc = matmul(["--from", str(H100)], rigcheck)
    assert doc.judgement is not None
    (j,) = doc.judgement
    assert (j.check, j.subject, j.verdict) == ("matmul_bf16", "GPU0", "pass")
    assert (j.value, j.floor, j.margin_pct) == (799.2, 712.4, 12.2)
    assert "best median 799.2 TFLOPS @ 3072x8192x8192, floor 712.4 (BF16 dense tensor, 989.4 TFLOPS)" in j.reason
    assert "12% above, 81% of 989.4" in j.reason
    assert "NVIDIA H100 80GB HBM3 as mamf-finder printed it" in j.reason
    assert j.source is not None
    assert "ml-engineering" in j.source
    # every progress row, as printed; the judged one marked best
    assert len(doc.results) == 15
    assert [(r.m, r.tflops_median, r.tflops_max) for r in doc.results[:2]] == [
        (1024, 748.4, 754.8),
        (2048, 783.9, 786.3),
    ]
    (best,) = [r for r in doc.results if r.best]
    assert (best.m, best.n, best.k, best.dtype) == (3072, 8192, 8192, "bf16")
    assert best.peak_tflops == 989.4
    assert best.fraction_of_peak == pytest.approx(799.2 / 989.4)
    assert best.time_us_median is None
    assert best.missing["time_us_median"] == "not_in_source"
    assert doc.best[0].tflops_median == 799.2
    assert doc.source is not None
    assert (doc.source.tool, doc.source.version, doc.source.devices[0].name) == (
        "mamf-finder",
        "2",
        "NVIDIA H100 80GB HBM3",
    )
    assert (doc.versions.torch, doc.versions.cuda) == ("2.11.0+cu130", "13.0")
    assert (doc.method.repeats, doc.method.warmup) == (20, 10)  # its command line's iterations
    assert not doc.partial
    assert doc.error is None


def test_gpu_option_names_the_sku_of_a_nameless_output(rigcheck: Rigcheck) -> None:
    # the README example names no device: unjudged, asking for --model, exit 0
    nameless = matmul(["--from", str(H200_V4)], rigcheck)
    assert nameless.judgement is not None
    (j,) = nameless.judgement
    assert j.verdict == "unjudged"
    assert j.floor is None
    assert "the output does not name the GPU" in j.reason
    assert "--model" in j.reason
    # named: the MAMF headline (a burst) against the H200's band; MSMF (sustained) kept, not judged
    doc = matmul(["--from", str(H200_V4), "--model", "H200 SXM"], rigcheck)
    assert doc.judgement is not None
    (j,) = doc.judgement
    assert (j.verdict, j.value, j.floor) == ("pass", 842.0, 712.4)
    assert j.reason.startswith("MAMF (max achievable, boost burst) 842 TFLOPS @ 3072x2816x20480")
    assert "mamf-finder's default bfloat16 assumed" in j.reason
    assert "GPU: --model H200 SXM" in j.reason
    names = [r.name for r in doc.results]
    assert names == ["mamf-finder sweep", "mamf-finder MAMF", "mamf-finder MSMF"]
    assert [r.name for r in doc.results if r.best] == ["mamf-finder MAMF"]
    assert any("MSMF (sustained, at the power cap) 722 TFLOPS is not judged" in n for n in doc.notes)
    assert any("sibling GPU(s) sat idle" in n for n in doc.notes)


def test_gpu_outside_the_catalog_asks_for_gpu(rigcheck: Rigcheck) -> None:
    doc = matmul(["--from", str(GH200_V1)], rigcheck)
    assert doc.judgement is not None
    (j,) = doc.judgement
    assert j.verdict == "unjudged"
    assert "NVIDIA GH200 480GB (as mamf-finder printed it) is not in rigcheck's catalog" in j.reason
    assert "--model" in j.reason
    # v1: one figure per shape, the summary's best outcome (its fastest iteration) and the shapes tried
    assert j.value == 821.0
    assert j.reason.startswith("best (each shape's fastest iteration) 821 TFLOPS @ 11264x19712x1536")
    assert [(r.m, r.n, r.k, r.best) for r in doc.results] == [(11264, 19712, 1536, True)]
    assert any("tried 493039 shapes" in n for n in doc.notes)


def test_console_copy_with_its_quirks(rigcheck: Rigcheck) -> None:
    # the last progress row only (the console rewrites it), "TFLOPSPS", "Tried  3375", hip instead of cuda
    run_ = parse_mamf(GFX1151.read_text(), str(GFX1151))
    assert run_.device_name == "AMD Radeon Graphics"
    assert (run_.dtype, run_.dtype_from, run_.version, run_.tried) == ("bf16", "header", "2", 3375)
    assert (run_.hip, run_.cuda, run_.torch) == ("6.4.43480-9f04e2822", None, "2.6.0a0+git90b83a9")
    assert [(s.m, s.median) for s in run_.shapes] == [(13312, 25.6)]
    assert {k: b.tflops for k, b in run_.bests.items()} == {"mean": 35.1, "median": 35.1, "max": 36.9}
    doc = matmul(["--from", str(GFX1151)], rigcheck)
    assert doc.judgement is not None
    assert doc.judgement[0].verdict == "unjudged"
    assert "AMD Radeon Graphics (as mamf-finder printed it) is not in rigcheck's catalog" in doc.judgement[0].reason
    # the summary's best median has no progress row in the copy: a row of its own holds it
    assert [(r.name, r.m, r.best) for r in doc.results] == [
        ("mamf-finder sweep", 13312, False),
        ("mamf-finder median", 15360, True),
    ]


def test_headerless_summary_assumes_the_default_dtype(rigcheck: Rigcheck) -> None:
    run_ = parse_mamf(GFX1151_SUMMARY.read_text(), "x")
    assert (run_.dtype_name, run_.dtype_from, run_.device_name) == ("bfloat16", "default", None)
    doc = matmul(["--from", str(GFX1151_SUMMARY)], rigcheck)
    assert doc.judgement is not None
    assert "the output does not name the GPU" in doc.judgement[0].reason
    assert any("mamf-finder's default --dtype bfloat16 assumed" in n for n in doc.notes)


def test_every_fixture_is_detected_and_other_tools_are_not() -> None:
    for path in MAMF.glob("*.txt"):
        assert looks_like_mamf(path.read_text()), path.name
    others = [
        FIXTURES / "reference-tools/nvbandwidth-1xh100-vm-v0.8.txt",
        FIXTURES / "corpus/p2p/001-2x2080ti-cannot-access-peer.txt",
        H100_Q,
    ]
    for path in others:
        assert not looks_like_mamf(path.read_text()), path.name


def test_terminal_report_shows_the_verdict_in_tflops(rigcheck: Rigcheck) -> None:
    code, out, err = rigcheck("bench", "matmul", "--from", str(H100))
    assert code == 0, err
    assert "read from mamf-finder 2 output" in out
    assert re.search(r"check\s+subject\s+TFLOPS\s+floor\s+margin\s+verdict", out)
    assert re.search(r"matmul_bf16\s+GPU0\s+799\.20\s+712\.40\s+\+12%\s+pass", out)
    assert "mamf-finder sweep" in out


# --- synthetic variants (each labelled) ---------------------------------------------------------------------


def test_synthetic_slow_h100_fails_below_its_floor(tmp_path: Path, rigcheck: Rigcheck) -> None:
    # SYNTHETIC: the real H100 output with every figure at 80% (a throttled or power-capped card)
    slow = synthetic(tmp_path, "slow-h100-synthetic.txt", scaled(H100.read_text(), 0.8))
    doc = matmul(["--from", str(slow)], rigcheck, expect=1)
    assert doc.judgement is not None
    (j,) = doc.judgement
    assert (j.verdict, j.value, j.floor) == ("fail", 639.4, 712.4)
    assert j.margin_pct == -10.2
    assert "floor 712.4 (BF16 dense tensor, 989.4 TFLOPS), 10% below" in j.reason


def test_machine_description_names_the_gpu(tmp_path: Path, rigcheck: Rigcheck) -> None:
    # SYNTHETIC: the H100 output without its device line; the machine's own nvidia-smi -q names the GPU
    text = "\n".join(line for line in H100.read_text().splitlines() if "Properties(" not in line)
    nameless = synthetic(tmp_path, "h100-no-device-synthetic.txt", text)
    doc = matmul(["--from", str(nameless), "--from", str(H100_Q)], rigcheck)
    assert doc.judgement is not None
    (j,) = doc.judgement
    assert j.verdict == "pass"
    assert "as the machine description names GPU 0" in j.reason
    assert doc.snapshot is not None


@pytest.mark.parametrize(
    ("dtype", "check", "verdict", "why"),
    [
        ("torch.float16", "matmul_fp16", "pass", "FP16 dense tensor"),
        ("torch.float8_e4m3fn", "matmul_fp8", "unjudged", "verify holds matmul bands for bf16, fp16 and tf32 only"),
        ("torch.float32", "matmul_fp32", "unjudged", "verify holds matmul bands for bf16, fp16 and tf32 only"),
        ("nvfp4", "matmul_nvfp4", "unjudged", "dtype nvfp4"),
    ],
)
def test_dtype_picks_the_band(
    dtype: str, check: str, verdict: str, why: str, *, tmp_path: Path, rigcheck: Rigcheck
) -> None:
    # SYNTHETIC: the real H100 output with its "** Dtype:" line changed
    text = H100.read_text().replace("** Dtype: torch.bfloat16", f"** Dtype: {dtype}")
    doc = matmul(["--from", str(synthetic(tmp_path, "dtype-synthetic.txt", text))], rigcheck)
    assert doc.judgement is not None
    (j,) = doc.judgement
    assert (j.check, j.verdict) == (check, verdict)
    assert why in j.reason
    if dtype == "nvfp4":  # a dtype rigcheck's matmul rows cannot name: no rows, said so
        assert doc.results == []
        assert any("no rows: dtype nvfp4" in n for n in doc.notes)
    else:
        assert doc.results
        assert all(r.dtype == check.removeprefix("matmul_") for r in doc.results)


def test_file_cut_mid_line_keeps_the_best_so_far(tmp_path: Path, rigcheck: Rigcheck) -> None:
    # SYNTHETIC: the real H100 output cut inside its 7th progress row (no summary)
    text = H100.read_text()
    cut = synthetic(tmp_path, "cut-synthetic.txt", text[: text.index("709.8(mean)") + 7])
    doc = matmul(["--from", str(cut)], rigcheck, expect=1)  # partial: exit 1, as every cut --from file
    assert doc.partial
    assert doc.error is not None
    assert "ends before mamf-finder's summary" in doc.error
    assert len(doc.results) == 6
    assert doc.judgement is not None
    (j,) = doc.judgement
    assert (j.verdict, j.value) == ("pass", 799.2)
    assert "best so far" in j.reason
    assert "@ 3072x8192x8192" in j.reason


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("", "empty file"),
        ("\x1b[1mhello\x1b[0m\nthis is not a benchmark\n 1 | two | three\n", "not a mamf-finder output"),
        (None, "no figure"),
    ],
)
def test_bad_input_is_one_line_exit_2(text: str | None, says: str, tmp_path: Path, rigcheck: Rigcheck) -> None:
    if text is None:  # SYNTHETIC: the H100 output cut mid-line before its first progress row printed
        real = H100.read_text()
        text = real[: real.index("Warming up") + 10]
    line = one_line_error(["--from", str(synthetic(tmp_path, "bad.txt", text))], rigcheck)
    assert says in line


def test_options_are_refused_beside_from(rigcheck: Rigcheck) -> None:
    assert "--model 'H9000'" in one_line_error(["--from", str(H100), "--model", "H9000"], rigcheck)
    line = one_line_error(["--from", str(H100), "--quick"], rigcheck)
    assert "--quick" in line
    line = one_line_error(["--model", "H100 SXM5"], rigcheck)
    assert "--model names the GPU model of a --from file" in line


def test_a_long_sweep_keeps_its_fastest_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mamf_doc, "MAX_ROWS", 4)
    run_ = parse_mamf(H100.read_text(), "x")
    doc = mamf_doc.mamf_document(run_)
    assert sorted(r.m for r in doc.results) == [2048, 3072, 4096, 5120]  # the four highest medians
    assert any("15 shapes printed: the 4 with the highest median kept" in n for n in doc.notes)


def _json(doc: MatmulDocument) -> Any:
    return json.loads(doc.model_dump_json(by_alias=True))


def test_a_run_document_has_no_source_or_judgement_keys() -> None:
    # the keys --from adds are absent on a run: a live run's JSON is unchanged
    run_ = parse_mamf(H100.read_text(), "x")
    live_like = mamf_doc.mamf_document(run_).model_copy(update={"source": None, "judgement": None})
    data = _json(live_like)
    assert "source" not in data
    assert "judgement" not in data


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (
            ["bench", "matmul", "--from", str(FIXTURES / "reference-tools/nvbandwidth-1xh100-vm-v0.8.txt")],
            "holds nvbandwidth output",
        ),
        (["bench", "p2p", "--from", str(H100)], "holds mamf-finder output"),
        (["doctor", "--from", str(H100)], "mamf-finder output"),
    ],
)
def test_each_reader_names_the_command_for_the_other(argv: list[str], says: str, rigcheck: Rigcheck) -> None:
    code, _, err = rigcheck(*argv)
    assert code == 2
    assert says in err
    assert ("`rigcheck bench matmul --from" in err) == (argv[1] != "matmul")


@pytest.mark.parametrize("path", [H100, H200_V4, GFX1151], ids=lambda p: p.name)
def test_a_cut_anywhere_is_a_document_or_one_input_error(path: Path) -> None:
    # SYNTHETIC: the real output cut at every 11th character
    from rigcheck.checks.reference.mamf import judge_mamf
    from rigcheck.cli.bench_mamf import figure_of
    from rigcheck.errors import InputError

    text = path.read_text()
    documents = 0
    refused: list[str] = []
    for end in range(0, len(text), 11):
        cut = text[:end]
        if not looks_like_mamf(cut):
            continue
        try:
            run_ = parse_mamf(cut, "cut")
        except InputError as error:
            refused.append(str(error))
            continue
        doc = judge_mamf(mamf_doc.mamf_document(run_), figure_of(run_), None, None)
        assert doc.partial == (not run_.complete)
        documents += 1
    assert documents > 0
    assert all("no figure" in message for message in refused)


def test_a_figure_line_the_file_ends_inside_is_left_out(tmp_path: Path, rigcheck: Rigcheck) -> None:
    # SYNTHETIC: the H100 output ending inside its "max:" line, mid-shape ("3072x8192x81"): the line is left
    # out (its shape may be cut short), the mean and median lines before it stand
    text = H100.read_text()
    end = text.index("max:    802.6 TFLOPS @ 3072x8192x8192") + len("max:    802.6 TFLOPS @ 3072x8192x81")
    doc = matmul(["--from", str(synthetic(tmp_path, "cut-max-synthetic.txt", text[:end]))], rigcheck)
    assert doc.judgement is not None
    assert (doc.judgement[0].verdict, doc.judgement[0].value) == ("pass", 799.2)
    assert any("ends inside its last line, left out" in n and "3072x8192x81'" in n for n in doc.notes)
    # v1's only figure cut mid-shape: no figure is left, one line, exit 2
    v1 = GH200_V1.read_text()
    cut = v1[: v1.index("11264x19712x1536") + 14]  # "11264x19712x15"
    assert "no figure" in one_line_error(["--from", str(synthetic(tmp_path, "cut-v1-synthetic.txt", cut))], rigcheck)


@pytest.mark.parametrize(("dtype", "verdict"), [("torch.bfloat16", "PASS"), ("torch.float8_e4m3fn", "UNJUDGED")])
def test_verify_reads_a_saved_mamf_document(dtype: str, verdict: str, tmp_path: Path, rigcheck: Rigcheck) -> None:
    # a saved `bench matmul --from … --json` is verify's matmul stage; an fp8 one (SYNTHETIC: the H100 output's
    # dtype line changed) has no band: unjudged, not an internal error
    source = synthetic(tmp_path, "mamf.txt", H100.read_text().replace("torch.bfloat16", dtype))
    saved = tmp_path / "dir"
    saved.mkdir()
    code, out, err = rigcheck("bench", "matmul", "--from", str(source), "--json")
    assert code == 0, err
    (saved / "matmul.json").write_text(out)
    code, _, err = rigcheck("snapshot", "--from", str(H100_Q), "-o", str(saved / "snapshot.json"))
    assert code == 0, err
    code, out, err = rigcheck("verify", "--from", str(saved), "--only", "matmul")
    assert "internal error" not in err
    assert out.splitlines()[1].startswith(verdict)
    assert code == 0  # unjudged is no failure (docs/verdicts.md)


def test_an_earlier_msmf_layout_is_read() -> None:
    # the README example of an earlier version: MSMF confirm rows with a "runs" column, one shape
    path = MAMF / "mamf-v3-readme-example-4096.txt"
    run_ = parse_mamf(path.read_text(), str(path))
    assert {k: (b.tflops, b.shape) for k, b in run_.bests.items()} == {
        "MAMF": (781.0, (4096, 4096, 4096)),
        "MSMF": (743.0, (4096, 4096, 4096)),
    }
    assert [(s.m, s.median) for s in run_.shapes] == [(4096, 779.3)]  # the scout row; confirm rows are no shapes
    assert run_.tried == 4

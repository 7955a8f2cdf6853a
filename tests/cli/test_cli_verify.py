"""`rigcheck verify` end to end: saved documents judged, the bands explained, bad input as one line, the CPU
pipeline run for real in a child process within its budget and with nothing left behind."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from rigcheck.facts import catalog
from rigcheck.model.io import snapshot_to_json
from tests.checks.test_bands import COVERAGE
from tests.checks.test_verify_judge import BF16, D2H, H2D, MEMBW, burn_doc, hostlink_doc, matmul_doc, membw_doc
from tests.contracts.test_schemas import assert_valid
from tests.readers.test_dcgm_diag import H100_PASS as H100_DCGM_PASS
from tests.support.cli import Rigcheck
from tests.support.procs import assert_none_left
from tests.support.snapshots import healthy_8x_h100

VERIFY = Path(__file__).parent.parent / "fixtures" / "verify"
PASS_DIR = VERIFY / "h100x8-pass"  # matmul and membw documents only: a pass with --only matmul,membw
SLOW_DIR = VERIFY / "h100x8-gpu3-slow"
ONLY = ["--only", "matmul,membw"]
NOT_SAVED = ["hostlink", "p2p", "allreduce", "burn"]
UNSAVED_REASON = "rigcheck verify: incomplete hostlink skipped; p2p skipped; allreduce skipped; burn skipped"


def _json(argv: list[str], rigcheck: Rigcheck) -> tuple[int, dict[str, object]]:
    code, out, err = rigcheck(*argv, "--json")
    assert code in (0, 1), err
    data = json.loads(out)
    assert_valid(data)
    return code, data


def _verdicts(data: dict[str, object]) -> dict[int, str]:
    gpus = data["gpus"]
    assert isinstance(gpus, list)
    return {g["index"]: g["verdict"] for g in gpus}


def _statuses(data: dict[str, object]) -> dict[str, str]:
    steps = data["steps"]
    assert isinstance(steps, list)
    return {s["name"]: s["status"] for s in steps}


def test_saved_node_with_every_gpu_in_band_passes_the_stages_asked_for(rigcheck: Rigcheck) -> None:
    code, data = _json(["verify", "--from", str(PASS_DIR), *ONLY], rigcheck)
    assert code == 0
    assert data["verdict"] == "pass"
    assert data["source"] == "files"
    assert data["level"] is None
    assert _verdicts(data) == dict.fromkeys(range(8), "pass")
    assert data["drain_reason"] is None
    statuses = _statuses(data)
    assert [statuses[name] for name in NOT_SAVED] == ["left_out"] * 4
    assert {s["reason"] for s in data["steps"] if s["status"] == "left_out"} == {"left out: --only matmul,membw"}  # type: ignore[attr-defined]


def test_a_directory_of_matmul_and_membw_alone_is_incomplete(rigcheck: Rigcheck) -> None:
    """Every GPU in band on what was saved, but four stages were never measured: not a pass (it said
    'PASS — 8 GPUs', exit 0, the missing stages in a dim footer)."""
    code, data = _json(["verify", "--from", str(PASS_DIR)], rigcheck)
    assert (code, data["verdict"]) == (1, "incomplete")
    assert _verdicts(data) == dict.fromkeys(range(8), "pass")  # what was measured is still judged
    statuses = _statuses(data)
    assert [statuses[name] for name in NOT_SAVED] == ["skipped"] * 4
    run_check = next(c for c in data["node"] if c["id"] == "run")  # type: ignore[attr-defined]
    assert run_check["verdict"] == "incomplete"
    assert "hostlink skipped: no hostlink document in the directory" in run_check["detail"]
    assert data["drain_reason"] == UNSAVED_REASON
    code, out, _ = rigcheck("verify", "--from", str(PASS_DIR))
    assert code == 1
    assert "INCOMPLETE — 8 GPUs" in out


def test_only_a_stage_the_directory_lacks_is_still_incomplete(rigcheck: Rigcheck) -> None:
    code, data = _json(["verify", "--from", str(PASS_DIR), "--only", "hostlink,matmul"], rigcheck)
    assert (code, data["verdict"]) == (1, "incomplete")
    statuses = _statuses(data)
    assert (statuses["matmul"], statuses["hostlink"], statuses["membw"]) == ("done", "skipped", "left_out")
    checks = {c["id"] for g in data["gpus"] for c in g["checks"]}  # type: ignore[attr-defined]
    assert "membw" not in checks  # its document is set aside, said in a note
    assert any(n.startswith("the membw document in the directory is not judged") for n in data["notes"])  # type: ignore[attr-defined]


def test_a_dcgm_run_alone_is_the_verification_only_when_asked_for(tmp_path: Path, rigcheck: Rigcheck) -> None:
    shutil.copy(PASS_DIR / "snapshot.json", tmp_path / "snapshot.json")
    shutil.copy(H100_DCGM_PASS, tmp_path / "dcgm.json")
    code, data = _json(["verify", "--from", str(tmp_path)], rigcheck)
    assert (code, data["verdict"]) == (1, "incomplete")  # rigcheck's own six stages were not measured
    code, data = _json(["verify", "--from", str(tmp_path), "--only", "dcgm"], rigcheck)
    assert (code, data["verdict"]) == (0, "pass")
    assert _statuses(data)["dcgm"] == "done"
    code, out, err = rigcheck("verify", "--only", "dcgm")  # live: DCGM's diagnostic is read, not run
    assert (code, out) == (2, "")
    assert "--only takes stages among" in err


def test_a_one_gpu_node_passes_without_p2p_and_all_reduce(tmp_path: Path, rigcheck: Rigcheck) -> None:
    """p2p and all-reduce do not apply to one GPU: 'not applicable: one GPU', not skipped, and the node passes
    on the other stages (a healthy one-GPU H200 passes `verify --level quick` live the same way)."""
    snap = healthy_8x_h100()
    one = snap.model_copy(update={"gpus": snap.gpus[:1], "pairs": []})
    (tmp_path / "snapshot.json").write_text(snapshot_to_json(one), encoding="utf-8")
    for name, doc in (
        ("matmul", matmul_doc(BF16[:1])),
        ("membw", membw_doc(MEMBW[:1])),
        ("hostlink", hostlink_doc(H2D[:1], D2H[:1])),
        ("burn", burn_doc(1)),
    ):
        (tmp_path / f"{name}.json").write_text(json.dumps(doc.to_json_dict()), encoding="utf-8")
    code, data = _json(["verify", "--from", str(tmp_path)], rigcheck)
    statuses = _statuses(data)
    assert (statuses["p2p"], statuses["allreduce"]) == ("not_applicable", "not_applicable")
    assert {s["reason"] for s in data["steps"] if s["status"] == "not_applicable"} == {"not applicable: one GPU"}  # type: ignore[attr-defined]
    assert (code, data["verdict"], data["drain_reason"]) == (0, "pass", None), data["node"]


def test_one_gpu_20_percent_under_its_peers_fails_alone(rigcheck: Rigcheck) -> None:
    code, data = _json(["verify", "--from", str(SLOW_DIR)], rigcheck)
    assert code == 1
    assert data["verdict"] == "fail"
    verdicts = _verdicts(data)
    assert verdicts.pop(3) == "fail"
    assert set(verdicts.values()) == {"pass"}
    gpu3 = next(g for g in data["gpus"] if g["index"] == 3)  # type: ignore[attr-defined]
    matmul = next(c for c in gpu3["checks"] if c["id"] == "matmul_bf16")
    assert matmul["verdict"] == "fail"
    assert matmul["peer_best"] > matmul["value"] * 1.2
    peers = next(j for j in matmul["judgements"] if j["rule"] == "peers")
    assert peers["verdict"] == "fail"
    assert "gpu3" in str(data["drain_reason"])


def test_slurm_prints_only_the_drain_reason(rigcheck: Rigcheck) -> None:
    code, out, _ = rigcheck("verify", "--from", str(SLOW_DIR), "--slurm")
    assert code == 1
    lines = out.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("rigcheck verify: fail gpu3 matmul_bf16")
    assert lines[0].isascii()
    assert '"' not in lines[0]
    assert len(lines[0]) <= 200
    code, out, _ = rigcheck("verify", "--from", str(PASS_DIR), "--slurm", *ONLY)
    assert (code, out) == (0, "")
    code, out, _ = rigcheck("verify", "--from", str(PASS_DIR), "--slurm")  # incomplete: one line too
    assert code == 1
    assert out.splitlines() == [UNSAVED_REASON]


def test_a_baseline_of_the_healthy_run_fails_the_regressed_gpu(tmp_path: Path, rigcheck: Rigcheck) -> None:
    _, before = _json(["verify", "--from", str(PASS_DIR), *ONLY], rigcheck)
    baseline = tmp_path / "baseline.json"
    baseline.write_text(json.dumps(before))
    _, after = _json(["verify", "--from", str(SLOW_DIR), "--baseline", str(baseline)], rigcheck)
    assert after["baseline"] == str(baseline)
    gpu3 = next(g for g in after["gpus"] if g["index"] == 3)  # type: ignore[attr-defined]
    matmul = next(c for c in gpu3["checks"] if c["id"] == "matmul_bf16")
    rule = next(j for j in matmul["judgements"] if j["rule"] == "baseline")
    assert rule["verdict"] == "fail"
    assert matmul["baseline"] == pytest.approx(
        next(c for g in before["gpus"] if g["index"] == 3 for c in g["checks"] if c["id"] == "matmul_bf16")["value"]  # type: ignore[attr-defined]
    )
    gpu0 = next(g for g in after["gpus"] if g["index"] == 0)  # type: ignore[attr-defined]
    assert gpu0["verdict"] == "pass"


def test_site_floor_above_the_figures_fails_every_gpu(tmp_path: Path, rigcheck: Rigcheck) -> None:
    site = tmp_path / "site.toml"
    site.write_text('[bands."H100 SXM5"]\nmembw = { expected_min = 3100, source = "our acceptance test" }\n')
    code, data = _json(["verify", "--from", str(PASS_DIR), "--config", str(site)], rigcheck)
    assert code == 1
    assert set(_verdicts(data).values()) == {"fail"}
    membw = next(c for c in data["gpus"][0]["checks"] if c["id"] == "membw")  # type: ignore[index]
    assert membw["expected_min"] == 3100
    assert "our acceptance test" in membw["expected_source"]
    assert data["site_config"] == str(site)


def test_explain_lists_every_issue_sku_below_its_peak_with_a_source(rigcheck: Rigcheck) -> None:
    code, out, err = rigcheck("verify", "--explain", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert_valid(data)
    assert data["schema"] == "rigcheck.verify-bands/1"
    by_name = {g["name"]: g["bands"] for g in data["gpus"]}
    for name in COVERAGE:  # every SKU issue #14 names, and their other variants
        spec = catalog.lookup(name)
        assert spec is not None, name
        bands = by_name[spec.name]
        checks = {b["check"] for b in bands}
        assert {"membw", "hostlink_h2d"} <= checks, name
        assert checks & {"matmul_bf16", "matmul_fp16"}, name
        for band in bands:
            assert band["source"], (name, band["check"])
            assert band["peak"] is None or 0 < band["expected_min"] < band["peak"], (name, band)


def test_explain_one_gpu_by_its_nvml_name(rigcheck: Rigcheck) -> None:
    code, out, _ = rigcheck("verify", "--explain", "--gpu", "NVIDIA H100 80GB HBM3")
    assert code == 0
    assert "H100 SXM5" in out
    assert "matmul_bf16" in out
    assert "712 TFLOPS" in out


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--explain", "--gpu", "RTX 9999 Imaginary"], "not a GPU rigcheck knows"),
        (["--from", "/nonexistent/dir"], "/nonexistent/dir"),
        (["--level", "slow"], "--level is quick, full or prolog"),
        (["--gpu", "H100 SXM5"], "--model NAME goes with --explain"),
        (["--from", str(PASS_DIR), "--cpu"], "takes no --cpu"),
        (["--from", str(PASS_DIR), "--baseline", str(PASS_DIR / "matmul.json")], "--baseline takes"),
        (["--from", str(PASS_DIR), "--gpus", "0,x"], "--gpus takes GPU indices"),
        (["--from", str(PASS_DIR), "--gpus", "3,9"], "--gpus 9: the saved snapshot has GPUs 0, 1, 2"),
        (["--from", str(PASS_DIR), "--only", "matmul,mem"], "--only takes stages among matmul, membw"),
        (["--only", "matmul", "--explain"], "--only scopes a run"),
    ],
)
def test_bad_usage_is_one_line_and_exit_2(argv: list[str], words: str, rigcheck: Rigcheck) -> None:
    code, out, err = rigcheck("verify", *argv)
    assert code == 2
    assert out == ""
    assert len(err.strip().splitlines()) == 1, err
    assert words in err


def test_html_and_markdown_lead_with_the_verdict(tmp_path: Path, rigcheck: Rigcheck) -> None:
    page, md = tmp_path / "v.html", tmp_path / "v.md"
    code, _, _ = rigcheck("verify", "--from", str(SLOW_DIR), "--html", str(page), "--markdown", str(md))
    assert code == 1
    html = page.read_text()
    assert html.index("FAIL") < html.index("<table")
    assert md.read_text().splitlines()[2].startswith("**FAIL")


def test_cpu_run_finishes_within_its_budget_and_leaves_no_process(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "rigcheck", "verify", "--cpu", "--budget", "40", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    out, err = proc.communicate(timeout=120)
    wall = time.monotonic() - started
    assert proc.returncode == 0, err
    data = json.loads(out)
    assert_valid(data)
    assert data["source"] == "cpu"
    assert data["budget_s"] == 40
    assert data["elapsed_s"] <= 40
    assert wall < 60
    ended = datetime.fromisoformat(data["created_at"])  # the run's end, UTC: what dates it in the ledger
    assert data["created_at"].endswith("Z")
    assert timedelta(0) <= datetime.now(timezone.utc) - ended < timedelta(seconds=wall + 5)
    done = {s["name"] for s in data["steps"] if s["status"] == "done"}
    assert {"matmul", "membw", "allreduce"} <= done
    checks = [c for g in data["gpus"] for c in g["checks"]] + data["node"]
    assert all(c["expected_min"] is None for c in checks)
    # No figure that no band judged says pass (they said pass); the node is unjudged, exit 0 (docs/verdicts.md).
    assert data["verdict"] == "unjudged"
    figures = [c for c in checks if c["value"] is not None and c["id"] != "doctor"]
    assert figures
    assert {c["verdict"] for c in figures} == {"unjudged"}
    assert {g["verdict"] for g in data["gpus"]} == {"unjudged"}
    assert "verify: allreduce" in err  # progress on stderr, JSON alone on stdout
    # No process of the run's session lives on: no worker outlived the command. (multiprocessing's resource
    # tracker ends with its parent and is a zombie until init reaps it: a zombie runs nothing.)
    assert_none_left([proc.pid], within_s=5)


def test_ctrl_c_keeps_the_document_and_exits_130() -> None:
    """SIGINT mid-run: the step running is cut short, the rest skipped, the document still printed (exit 130),
    and no worker outlives the command."""
    pytest.importorskip("torch")
    import signal

    proc = subprocess.Popen(
        [sys.executable, "-m", "rigcheck", "verify", "--cpu", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert proc.stderr is not None
    for line in proc.stderr:  # wait until the matmul step has started its workers
        if "verify: matmul started" in line:
            break
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    data = json.loads(out)
    assert_valid(data)
    assert data["verdict"] != "pass"
    statuses = {s["name"]: s["status"] for s in data["steps"]}
    assert statuses["matmul"] == "cut_short"
    assert statuses["allreduce"] in {"skipped", "cut_short"}
    assert_none_left([proc.pid], within_s=5)


def test_a_directory_with_no_measurement_is_incomplete(tmp_path: Path, rigcheck: Rigcheck) -> None:
    (tmp_path / "snapshot.json").write_bytes((PASS_DIR / "snapshot.json").read_bytes())
    code, data = _json(["verify", "--from", str(tmp_path)], rigcheck)
    assert code == 1
    assert data["verdict"] == "incomplete"
    run_check = next(c for c in data["node"] if c["id"] == "run")  # type: ignore[attr-defined]
    assert "no measurement" in run_check["detail"]
    assert {s["status"] for s in data["steps"] if s["name"] != "doctor"} == {"skipped"}  # type: ignore[attr-defined]

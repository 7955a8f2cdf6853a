"""Report rendering: folded findings, verdict wording, missing values with their reasons."""

from __future__ import annotations

from rich.console import Console

from rigcheck.cli.exits import exit_code_for
from rigcheck.model import Finding, Gpu, Missing, Severity, Snapshot
from rigcheck.model.doctor import DoctorDocument, doctor_document
from rigcheck.report.common import group_findings, subjects_text, value_text
from rigcheck.report.doctor import doctor_markdown, doctor_terminal


def _finding(subject: str, severity: Severity = Severity.INFO, message: str = "NV18 link") -> Finding:
    return Finding(id="topology.nvlink", severity=severity, category="topology", subject=subject, message=message)


def _doc(snap: Snapshot, findings: list[Finding], *, strict: bool = False) -> DoctorDocument:
    """The document as `rigcheck doctor` builds it: the exit code decided by the CLI's rule."""
    return doctor_document(snap, findings, exit_code=exit_code_for(findings, strict=strict), strict=strict)


def _text(doc: DoctorDocument) -> str:
    console = Console(record=True, width=200, color_system=None)
    console.print(doctor_terminal(doc))
    return console.export_text()


def test_identical_findings_fold_into_one_line() -> None:
    found = [_finding(f"GPU{a}-GPU{b}") for a in range(4) for b in range(a + 1, 4)]
    found.append(_finding("GPU0-GPU1", message="something else"))
    groups = group_findings(found)
    assert [len(subjects) for _, subjects in groups] == [6, 1]
    assert subjects_text(groups[0][1]) == "6 pairs"
    assert subjects_text(["GPU0", "GPU3"]) == "2 GPUs"
    text = _text(_doc(Snapshot(), found))
    assert text.count("[topology.nvlink]") == 2
    assert "6 pairs" in text
    assert "GPU0-GPU1, GPU0-GPU2, GPU0-GPU3, GPU1-GPU2, GPU1-GPU3, GPU2-GPU3" in text
    md = doctor_markdown(_doc(Snapshot(), found))
    assert md.count("`topology.nvlink`") == 2


def test_verdicts() -> None:
    def verdict(*severities: Severity, strict: bool = False) -> tuple[int, str]:
        doc = _doc(Snapshot(), [_finding("GPU0", s) for s in severities], strict=strict)
        line = next(ln for ln in _text(doc).splitlines() if ln.startswith("Result:"))
        return doc.exit_code, line

    assert verdict(Severity.OK, Severity.INFO) == (0, "Result: healthy (1 info) — exit 0")
    code, line = verdict(Severity.WARN)
    assert (code, "warnings to look at" in line) == (0, True)
    code, line = verdict(Severity.WARN, strict=True)
    assert (code, "problems found" in line, "--strict" in line) == (1, True, True)
    code, line = verdict(Severity.UNKNOWN)
    assert (code, "could not decide" in line) == (0, True)
    code, line = verdict(Severity.FAIL, Severity.OK)
    assert (code, "problems found (1 fail)" in line) == (1, True)


def test_exit_code_ignores_unknown_and_info() -> None:
    assert exit_code_for([_finding("GPU0", Severity.UNKNOWN), _finding("GPU0", Severity.INFO)], strict=True) == 0


def test_value_text_shows_the_reason() -> None:
    gpu = Gpu(index=0, power_limit_w=350.0, persistence_mode=False)
    gpu.mark_missing("power_draw_w", Missing.NOT_SUPPORTED)
    assert value_text(gpu, "power_limit_w", "W") == "350 W"
    assert value_text(gpu, "power_draw_w", "W") == "n/a (not supported)"
    assert value_text(gpu, "temp_c", "C") == "n/a"
    assert value_text(gpu, "persistence_mode") == "off"


def test_placeholder_gpu_is_shown_unreadable() -> None:
    snap = Snapshot(
        gpus=[Gpu(index=0, name="A"), Gpu(index=1, read_error=Missing.GPU_LOST, read_error_detail="GPU is lost")]
    )
    text = _text(_doc(snap, []))
    assert "unreadable (GPU lost)" in text


def test_compare_p2p_over_gloo_does_not_headline_a_p2p_speedup() -> None:
    # gloo (CPU processes) has no P2P path: NCCL_P2P_DISABLE=1 changes nothing, so a 20% gap is noise.
    from rigcheck.bench.compare import compare_p2p
    from rigcheck.report.bench.render import RENDERERS, speedup_line
    from tests.bench.test_bench_compare import GUIDE_NO_P2P_S, GUIDE_P2P_S, P2P_LOG, SHM_LOG, FakeRuns, train_doc

    gloo = compare_p2p(
        FakeRuns((train_doc(2.0, backend="gloo"), ""), (train_doc(2.5, backend="gloo"), "")), label="train"
    )
    line = speedup_line(gloo)
    assert "P2P/NVLink" not in line
    assert "faster" not in line
    assert "slower" not in line
    assert line.startswith("no P2P comparison on gloo")
    assert "20.0%" in line
    console = Console(record=True, width=200, color_system=None)
    console.print(RENDERERS.terminal(gloo))
    assert "P2P/NVLink: 20.0% faster" not in console.export_text()
    assert "P2P/NVLink: 20.0% faster" not in RENDERERS.markdown(gloo)
    # NCCL keeps the guide's headline
    nccl = compare_p2p(FakeRuns((train_doc(GUIDE_P2P_S), P2P_LOG), (train_doc(GUIDE_NO_P2P_S), SHM_LOG)), label="train")
    assert speedup_line(nccl).startswith("P2P/NVLink: 22.5% faster")

"""`rigcheck verify --from DIR`: the verdict on documents saved earlier (a snapshot, bench and burn results, a
DCGM diagnostic), with nothing run. The doctor checks run on the saved snapshot; each measurement found is a step
"done", each one absent a step "skipped" with the file it would have come from (the node is then incomplete: not
every stage was verified), but p2p and all-reduce on a one-GPU snapshot ("not_applicable") and the stages
``--only`` leaves out ("left_out", their documents set aside). A DCGM diagnostic is a step when there is one, or
when ``--only`` names ``dcgm`` (a DCGM run as the verification: ``--only dcgm`` leaves rigcheck's stages out).
A directory with a DCGM diagnostic and no snapshot is judged on the GPUs the diagnostic ran on
(rigcheck.readers.reference.dcgm_machine): the doctor checks have no machine to run on, so the doctor step is skipped
(left
out with ``--only``) and no ``doctor`` check is listed. The clock is the caller's (checks read none)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Final

from rigcheck.checks.doctor import run_checks
from rigcheck.checks.verdicts import drain_reason
from rigcheck.checks.verify.dcgm import measured
from rigcheck.checks.verify.judge import Judged, judge, unfinished_check, verify_document
from rigcheck.errors import UsageError
from rigcheck.model.dcgm import MACHINE_MARK
from rigcheck.model.finding import Finding
from rigcheck.model.site_config import SiteConfig
from rigcheck.model.snapshot import Snapshot
from rigcheck.model.verify import (
    DcgmSummary,
    Level,
    StepStatus,
    Verdict,
    VerifyDocument,
    VerifyInputs,
    VerifyStep,
    worst,
)

# Step name -> what `rigcheck` command saves it, for the "skipped" line.
SAVED_BY: dict[str, str] = {
    "matmul": "rigcheck bench matmul --json",
    "membw": "rigcheck bench membw --json",
    "hostlink": "rigcheck bench hostlink --json",
    "p2p": "rigcheck bench p2p --json",
    "allreduce": "rigcheck bench allreduce --json",
    "burn": "rigcheck burn --json",
}


PAIRED: Final = ("p2p", "allreduce")  # node stages that need two GPUs
NO_BAND: Final = "is not in rigcheck's catalog: its figures have no band"  # the judge's note (checks/verify/judge.py)


def _status(inputs: VerifyInputs, name: str, only: Sequence[str] | None) -> tuple[StepStatus, str | None]:
    if only is not None and name not in only:
        return "left_out", f"left out: --only {','.join(only)}"
    if getattr(inputs, name) is not None:
        return "done", None
    if name in PAIRED and not inputs.cpu and len(inputs.snapshot.gpus) == 1:
        return "not_applicable", "not applicable: one GPU"
    return "skipped", f"no {name} document in the directory (save one with `{SAVED_BY[name]} > FILE`)"


def saved_steps(inputs: VerifyInputs, only: Sequence[str] | None = None) -> list[VerifyStep]:
    """One step per measurement: done when its document was read, skipped (with how to save one) when not,
    not applicable or left out (``only``: the stages asked for) as the module docstring says."""
    steps = [_doctor_step(inputs, only)]
    for name in SAVED_BY:
        status, reason = _status(inputs, name, only)
        steps.append(VerifyStep(name=name, status=status, elapsed_s=0.0, budget_s=None, reason=reason))
    if inputs.dcgm is not None:
        steps.append(VerifyStep(name="dcgm", status="done", elapsed_s=0.0, budget_s=None, reason=None))
    elif only is not None and "dcgm" in only:  # asked for (`--only dcgm`) and not there
        why = "no DCGM diagnostic in the directory (save one with `dcgmi diag -r 3 -j > FILE`)"
        steps.append(VerifyStep(name="dcgm", status="skipped", elapsed_s=0.0, budget_s=None, reason=why))
    return steps


def from_dcgm(snapshot: Snapshot) -> bool:
    """Whether ``snapshot`` is the machine made from a DCGM diagnostic (the directory held no snapshot)."""
    return any(d.source == MACHINE_MARK for d in snapshot.diagnostics)


def _doctor_step(inputs: VerifyInputs, only: Sequence[str] | None) -> VerifyStep:
    """Done on a saved snapshot; with only a DCGM diagnostic there is no machine to run the checks on."""
    if not from_dcgm(inputs.snapshot):
        return VerifyStep(name="doctor", status="done", elapsed_s=0.0, budget_s=None, reason=None)
    why = "no snapshot in the directory (save one with `rigcheck snapshot --json > FILE`)"
    if only is not None:
        return VerifyStep(
            name="doctor",
            status="left_out",
            elapsed_s=0.0,
            budget_s=None,
            reason=f"left out: --only {','.join(only)}; {why}",
        )
    return VerifyStep(name="doctor", status="skipped", elapsed_s=0.0, budget_s=None, reason=why)


def _without_doctor(judged: Judged) -> None:
    """The judgement of a DCGM diagnostic alone: no doctor check (no snapshot to run one on, its pass would say
    nothing); a GPU that no check is left on is unjudged (DCGM judged none of its tests)."""
    for gpu in judged.gpus:
        gpu.checks = [c for c in gpu.checks if c.id != "doctor"]
        if not gpu.checks:
            judged.notes.append(f"GPU {gpu.index}: DCGM judged none of its tests: not judged")
        gpu.verdict = worst(c.verdict for c in gpu.checks) if gpu.checks else "unjudged"
    judged.node = [c for c in judged.node if c.id != "doctor"]
    judged.notes = [n for n in judged.notes if not n.endswith(NO_BAND)]  # DCGM's verdicts need no band
    verdict: Verdict = worst([*(g.verdict for g in judged.gpus), *(c.verdict for c in judged.node)])
    if verdict != judged.verdict:  # only a GPU left with no check changes it (pass -> unjudged: exit 0 both)
        judged.verdict = verdict
        judged.drain_reason = drain_reason(verdict, [])


def dcgm_summary(inputs: VerifyInputs) -> DcgmSummary | None:
    """The document's ``dcgm`` key: which DCGM diagnostic was judged; None (the key absent) without one."""
    diag = inputs.dcgm
    if diag is None:
        return None
    return DcgmSummary(
        file=inputs.dcgm_file or "", version=diag.version, driver=diag.driver, tests=[t.name for t in diag.tests]
    )


def verify_saved(
    inputs: VerifyInputs,
    *,
    site: SiteConfig | None,
    baseline: VerifyDocument | None,
    gpus: Sequence[int] | None,
    baseline_name: str | None,
    site_name: str | None,
    clock: Callable[[], float],
    started: float,
    only: Sequence[str] | None = None,
) -> VerifyDocument:
    """Judge what ``inputs`` holds (the doctor checks run here on its snapshot) into a ``source: files`` document.

    ``gpus`` naming a GPU the snapshot does not have is a UsageError: judging nothing must not read as a pass.
    ``only``: the stages asked for (`--only`); the documents of the others are set aside, not judged."""
    dcgm_only = from_dcgm(inputs.snapshot)
    if gpus and not inputs.cpu:
        known = {g.index for g in inputs.snapshot.gpus}
        unknown = sorted(set(gpus) - known)
        if unknown:
            have = ", ".join(str(i) for i in sorted(known)) or "none"
            whose = "the DCGM diagnostic ran on" if dcgm_only else "the saved snapshot has"
            raise UsageError(f"--gpus {','.join(map(str, unknown))}: {whose} GPUs {have}")
    steps = saved_steps(inputs, only)
    for step in steps:
        if step.status == "left_out" and getattr(inputs, step.name, None) is not None:  # doctor: no document
            setattr(inputs, step.name, None)
            inputs.notes.append(f"the {step.name} document in the directory is not judged: {step.reason}")
    inputs.findings = [] if dcgm_only else run_checks(inputs.snapshot, config=site)
    judged = judge(inputs, site=site, baseline=baseline, gpus=gpus)
    if dcgm_only:
        _without_doctor(judged)
    if all(getattr(inputs, name) is None for name in SAVED_BY) and not measured(inputs.dcgm):
        # Only the doctor checks ran (and DCGM's software tests, or its skips): a verdict on measurements cannot
        # pass with none of them.
        also = " and DCGM's deployment tests" if inputs.dcgm is not None else ""
        what = "DCGM's deployment tests" if dcgm_only else f"the doctor checks{also}"
        judged.node.append(unfinished_check(f"no measurement in the directory: only {what} were judged"))
        if judged.verdict in ("pass", "unjudged"):
            judged.verdict = "incomplete"
            judged.drain_reason = drain_reason("incomplete", ["no measurement saved"])
    return verify_document(
        judged,
        level=None,
        source="files",
        elapsed_s=round(clock() - started, 3),
        budget_s=None,
        steps=steps,
        host=inputs.snapshot.host.hostname,
        baseline_name=baseline_name,
        site_name=site_name,
        dcgm=dcgm_summary(inputs),
    )


def verify_unmeasured(
    snapshot: Snapshot,
    findings: list[Finding],
    *,
    reason: str,
    level: Level,
    host: str | None,
    budget_s: float | None,
    only: Sequence[str] | None = None,
    stuck: list[str] | None = None,
) -> VerifyDocument:
    """A live run on a machine where nothing can be measured (no usable GPU: ``reason`` says why): the doctor
    checks judged (the no-GPU or driver finding fails the node), every stage asked for skipped with ``reason``,
    and a drain reason that says it; never a pass, and still one document for `--json` and `--slurm`.
    ``stuck``: what did not answer (a probe past its deadline): the node check ``driver`` fails on it."""
    judged = judge(VerifyInputs(snapshot=snapshot, findings=findings, stuck=stuck))
    steps = [VerifyStep(name="doctor", status="done", elapsed_s=0.0, budget_s=0.0, reason=None)]
    for name in SAVED_BY:
        left_out = only is not None and name not in only
        status: StepStatus = "left_out" if left_out else "skipped"
        why = f"left out: --only {','.join(only or ())}" if left_out else "nothing to measure it on (no usable GPU)"
        steps.append(VerifyStep(name=name, status=status, elapsed_s=0.0, budget_s=0.0, reason=why))
    doc = verify_document(
        judged,
        level=level,
        source="live",
        elapsed_s=0.0,
        budget_s=budget_s,
        steps=steps,
        host=host,
        baseline_name=None,
        site_name=None,
    )
    verdict = worst([doc.verdict, "incomplete"])
    return doc.model_copy(update={"verdict": verdict, "drain_reason": drain_reason(verdict, [reason])})

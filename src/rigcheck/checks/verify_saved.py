"""`rigcheck verify --from DIR`: the verdict on documents saved earlier (a snapshot, bench and burn results, a
DCGM diagnostic), with nothing run. The doctor checks run on the saved snapshot; each measurement found is a step
"done", each one absent a step "skipped" with the file it would have come from (a DCGM diagnostic is a step only
when there is one). The clock is the caller's (checks read none)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rigcheck.checks import run_checks
from rigcheck.checks.verify import drain_reason, judge, unfinished_check, verify_document
from rigcheck.checks.verify_dcgm import measured
from rigcheck.errors import UsageError
from rigcheck.model.site_config import SiteConfig
from rigcheck.model.verify import DcgmSummary, VerifyDocument, VerifyInputs, VerifyStep

# Step name -> what `rigcheck` command saves it, for the "skipped" line.
SAVED_BY: dict[str, str] = {
    "matmul": "rigcheck bench matmul --json",
    "membw": "rigcheck bench membw --json",
    "hostlink": "rigcheck bench hostlink --json",
    "p2p": "rigcheck bench p2p --json",
    "allreduce": "rigcheck bench allreduce --json",
    "burn": "rigcheck burn --json",
}


def saved_steps(inputs: VerifyInputs) -> list[VerifyStep]:
    """One step per measurement: done when its document was read, skipped (with how to save one) when not."""
    steps = [VerifyStep(name="doctor", status="done", elapsed_s=0.0, budget_s=None, reason=None)]
    for name, saved_by in SAVED_BY.items():
        present = getattr(inputs, name) is not None
        reason = None if present else f"no {name} document in the directory (save one with `{saved_by} > FILE`)"
        steps.append(
            VerifyStep(name=name, status="done" if present else "skipped", elapsed_s=0.0, budget_s=None, reason=reason)
        )
    if inputs.dcgm is not None:
        steps.append(VerifyStep(name="dcgm", status="done", elapsed_s=0.0, budget_s=None, reason=None))
    return steps


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
) -> VerifyDocument:
    """Judge what ``inputs`` holds (the doctor checks run here on its snapshot) into a ``source: files`` document.

    ``gpus`` naming a GPU the snapshot does not have is a UsageError: judging nothing must not read as a pass."""
    if gpus and not inputs.cpu:
        known = {g.index for g in inputs.snapshot.gpus}
        unknown = sorted(set(gpus) - known)
        if unknown:
            have = ", ".join(str(i) for i in sorted(known)) or "none"
            raise UsageError(f"--gpus {','.join(map(str, unknown))}: the saved snapshot has GPUs {have}")
    inputs.findings = run_checks(inputs.snapshot, config=site)
    judged = judge(inputs, site=site, baseline=baseline, gpus=gpus)
    if all(getattr(inputs, name) is None for name in SAVED_BY) and not measured(inputs.dcgm):
        # Only the doctor checks ran (and DCGM's software tests, or its skips): a verdict on measurements cannot
        # pass with none of them.
        also = " and DCGM's deployment tests" if inputs.dcgm is not None else ""
        judged.node.append(
            unfinished_check(f"no measurement in the directory: only the doctor checks{also} were judged")
        )
        if judged.verdict == "pass":
            judged.verdict = "incomplete"
            judged.drain_reason = drain_reason("incomplete", ["no measurement saved"])
    return verify_document(
        judged,
        level=None,
        source="files",
        elapsed_s=round(clock() - started, 3),
        budget_s=None,
        steps=saved_steps(inputs),
        host=inputs.snapshot.host.hostname,
        baseline_name=baseline_name,
        site_name=site_name,
        dcgm=dcgm_summary(inputs),
    )

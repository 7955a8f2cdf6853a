"""The verdict contract of doctor and verify: one place that says, for every finding family and every outcome
of a verify step or check, doctor's outcome, verify's verdict, the node's outcome and the drain-reason text.

An outcome is a kind (``ok`` or ``problems``), not a number: cli/exits.py alone maps it to the exit code (doctor's
through exit_code_for, verify's and fleet's through exit_code_for_verdict). verify's ``doctor`` check
(checks/verify) and verify's node verdict (checks/verify.verify_document) ask this module too. docs/verdicts.md
holds the same tables, word for word (their exit codes through cli/exits.py's map):
tests/contracts/test_verdict_contract.py keeps them equal.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Literal

from rigcheck.checks.doctor import FINDING_IDS
from rigcheck.checks.doctor.driver import DRIVER_IDS
from rigcheck.model.finding import Finding, Severity
from rigcheck.model.verdict import StepStatus, Verdict, worst

Outcome = Literal["ok", "problems"]  # what a run's findings or verdict make of it; cli/exits.py says the exit code


@dataclass(frozen=True)
class SeverityRule:
    """What one finding severity means, whichever family the finding is of."""

    doctor: Outcome
    strict: Outcome  # doctor --strict
    verify: Verdict  # the verdict it gives verify's ``doctor`` check
    drain: str  # its words in the drain reason ("" = none)


SEVERITY_RULES: Final[dict[Severity, SeverityRule]] = {
    Severity.FAIL: SeverityRule("problems", "problems", "fail", "[gpuN ]doctor <finding id>"),
    Severity.WARN: SeverityRule("ok", "problems", "pass", ""),
    Severity.UNKNOWN: SeverityRule("ok", "ok", "pass", ""),
    Severity.INFO: SeverityRule("ok", "ok", "pass", ""),
    Severity.OK: SeverityRule("ok", "ok", "pass", ""),
}

# Findings a `verify --cpu` run does not count: a CPU run needs no GPU and no driver, and says so in a note.
CPU_EXEMPT: Final[frozenset[str]] = frozenset(DRIVER_IDS)


def family(finding_id: str) -> str:
    """A finding id's family: its prefix (``health.ecc-uncorrected`` -> ``health``)."""
    return finding_id.split(".", 1)[0]


def counts_in_verify(finding: Finding, *, cpu: bool) -> bool:
    """Whether a finding takes part in verify's ``doctor`` check (all do, but a CPU run's driver findings)."""
    return not (cpu and finding.id in CPU_EXEMPT)


def finding_verdict(finding: Finding, *, cpu: bool = False) -> Verdict:
    """The verdict one finding gives verify's ``doctor`` check."""
    if not counts_in_verify(finding, cpu=cpu):
        return "pass"
    return SEVERITY_RULES[finding.severity].verify


def doctor_outcome(findings: Iterable[Finding], *, strict: bool = False) -> Outcome:
    """doctor's outcome: ``problems`` when any finding's severity gives it (``strict``: warnings count too)."""
    rules = (SEVERITY_RULES[f.severity] for f in findings)
    return "problems" if any((r.strict if strict else r.doctor) == "problems" for r in rules) else "ok"


# --- verify: the steps, the checks, the node ------------------------------------------------------------


@dataclass(frozen=True)
class StepRule:
    """What a step's status makes of the node's verdict."""

    node: Verdict  # the best the node can be with a step so ("pass": no effect)
    when: str


STEP_RULES: Final[dict[StepStatus, StepRule]] = {
    "done": StepRule("pass", "the step ran to its end"),
    "not_applicable": StepRule(
        "pass", "the step does not apply: p2p and all-reduce on one GPU, hostlink, p2p and burn on a CPU run"
    ),
    "left_out": StepRule(
        "pass",
        "the user scoped the run without it (`--only`), or the level does not run it (`--level prolog` runs matmul, "
        "membw and allreduce only)",
    ),
    "skipped": StepRule("incomplete", "the step applies and was not run (no document of it in `--from DIR`)"),
    "cut_short": StepRule("incomplete", "the budget, Ctrl-C or the set-up budget ended it before its end"),
    "failed": StepRule("incomplete", "it raised or its workers failed: it measured nothing to judge"),
}

# A check's verdict from how its figure was judged (checks/verify._figure_check decides it).
CHECK_RULES: Final[tuple[tuple[str, Verdict], ...]] = (
    ("a rule (band, peers, baseline, result, findings, dcgm) failed", "fail"),
    ("no figure: its step failed, was cut short or ended early", "incomplete"),
    ("a figure that no band, peer or baseline judged (a CPU run; a GPU with no band and no peer)", "unjudged"),
    ("every rule that judged it passed", "pass"),
)

# The node's (and a GPU's) verdict is the worst of its checks' and its steps', in model.verdict.VERDICT_ORDER.


@dataclass(frozen=True)
class NodeRule:
    outcome: Outcome
    drain: str  # the drain reason's shape ("" = none: --slurm prints nothing)
    means: str


NODE_RULES: Final[dict[Verdict, NodeRule]] = {
    "pass": NodeRule("ok", "", "every stage of the level ran (or does not apply, or was left out) and passed"),
    "unjudged": NodeRule(
        "ok",
        "",
        "everything ran and nothing failed, but some figure was held against no band: a CPU run, an unknown SKU",
    ),
    "incomplete": NodeRule(
        "problems",
        "rigcheck verify: incomplete <check or step> ...",
        "a stage was skipped, cut short or failed: the node was not verified",
    ),
    "fail": NodeRule(
        "problems",
        "rigcheck verify: fail <gpuN> <check> <why>; ...",
        "a check failed (a figure under its band or peers, wrong results, a failing finding, no GPU visible)",
    ),
}


def node_verdict(checks: Iterable[Verdict], steps: Iterable[StepStatus]) -> Verdict:
    """The node's verdict: the worst of its checks' verdicts and of what its steps allow."""
    return worst([*checks, *(STEP_RULES[s].node for s in steps)])


def step_verdict(status: StepStatus) -> Verdict:
    """The best verdict a node can have with a step that ended so."""
    return STEP_RULES[status].node


def node_outcome(verdict: Verdict) -> Outcome:
    """verify's outcome for its node verdict (cli/exits.py makes it the exit code)."""
    return NODE_RULES[verdict].outcome


def slurm_line(verdict: Verdict, drain_reason: str | None) -> str | None:
    """What `verify --slurm` prints: the drain reason whenever the outcome is ``problems`` (exit 1; never an empty
    line), and nothing when it is ``ok`` (exit 0)."""
    if node_outcome(verdict) == "ok":
        return None
    return drain_reason or f"rigcheck verify: {verdict}"  # a reason of no words still names the verdict


# --- the tables of docs/verdicts.md -------------------------------------------------------------------


def _drain_cell(text: str) -> str:
    return f"`{text}`" if text else "none"


def finding_table(exits: Mapping[Outcome, int]) -> list[tuple[str, ...]]:
    """One row per finding family: what each severity of it does to doctor and verify (``exits``: the CLI's
    exit code of each outcome)."""
    fail, warn = SEVERITY_RULES[Severity.FAIL], SEVERITY_RULES[Severity.WARN]
    unknown = SEVERITY_RULES[Severity.UNKNOWN]
    rows: list[tuple[str, ...]] = [
        ("family", "fail", "warn", "unknown, info, ok", "drain-reason text", "not counted by `verify --cpu`")
    ]
    for name in sorted(FINDING_IDS):
        exempt = sorted(i for i in CPU_EXEMPT if family(i) == name)
        rows.append(
            (
                f"`{name}`",
                f"doctor exit {exits[fail.doctor]}; verify {fail.verify}",
                f"doctor exit {exits[warn.doctor]} ({exits[warn.strict]} with --strict); verify {warn.verify}",
                f"doctor exit {exits[unknown.doctor]}; verify {unknown.verify}",
                _drain_cell(fail.drain),
                ", ".join(f"`{i}`" for i in exempt) or "-",
            )
        )
    return rows


def step_table() -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = [("step status", "node verdict at best", "when")]
    rows += [(f"`{status}`", rule.node, rule.when) for status, rule in STEP_RULES.items()]
    return rows


def check_table() -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = [("a check whose", "verdict")]
    rows += [(when, verdict) for when, verdict in CHECK_RULES]
    return rows


def node_table(exits: Mapping[Outcome, int]) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = [("node verdict", "exit code", "drain reason (`--slurm`)", "means")]
    rows += [(v, str(exits[r.outcome]), _drain_cell(r.drain), r.means) for v, r in NODE_RULES.items()]
    return rows


@dataclass(frozen=True)
class BrokenState:
    """A machine that is not ready or broken: the finding that fails it, and the action its advice gives, kept
    apart from the reason (waiting fixes a registering fabric; reseating fixes nothing a driver reload would)."""

    state: str
    finding_id: str
    action: str


# Each fails (doctor exit 1, verify fail, named in the drain reason); tests/contracts/test_verdict_contract.py runs a
# real
# input of each through the checks and holds the finding, its severity and its action.
BROKEN_STATES: Final[tuple[BrokenState, ...]] = (
    BrokenState(
        "GPU fabric still registering (`In Progress`, `Not Started`): CUDA answers 802 until it completes",
        "fabric.not-registered",
        "wait a minute and re-check",
    ),
    BrokenState(
        "Fabric Manager failed or not running on an NVSwitch system",
        "fabric.manager-failed",
        "restart the service and read its log",
    ),
    BrokenState("NVIDIA GPUs on the PCI bus, no working driver", "health.driver-not-loaded", "load the driver"),
    BrokenState(
        "the driver took no GPU (probe routine not called, nouveau holds them)",
        "xid.driver-no-device",
        "load the NVIDIA driver on them",
    ),
    BrokenState("a GPU fell off the bus (Xid 79)", "xid.hardware", "reseat the card; RMA it if it falls off again"),
    BrokenState(
        "a PCIe link narrower than its slot allows", "pcie.width-below-max", "move it to a full x16 slot, reseat it"
    ),
)


def broken_table() -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = [("not ready or broken", "finding (fail)", "action")]
    rows += [(b.state, f"`{b.finding_id}`", b.action) for b in BROKEN_STATES]
    return rows


def contract_tables(exits: Mapping[Outcome, int]) -> list[list[tuple[str, ...]]]:
    """Every table of docs/verdicts.md, in its order, header row first; ``exits``: the CLI's exit code of each
    outcome (cli/exits.OUTCOME_EXITS)."""
    return [finding_table(exits), broken_table(), step_table(), check_table(), node_table(exits)]


# --- the drain reason -------------------------------------------------------------------------------------

DRAIN_MAX: Final = 200  # Slurm keeps a reason short; rigcheck's line stays under this
_UNQUOTE: Final = {ord(c): " " for c in "\"'`\\"}  # quotes would end the reason= argument early


def drain_reason(verdict: Verdict, items: Sequence[str]) -> str | None:
    """One short ASCII line for `scontrol update ... reason=`: no quotes, no line breaks, at most DRAIN_MAX
    characters (cut with "..."); None where the verdict's outcome is ``ok`` (pass, unjudged: exit 0)."""
    if node_outcome(verdict) == "ok":
        return None
    text = f"rigcheck verify: {verdict}" + (f" {'; '.join(items)}" if items else "")
    text = text.encode("ascii", "replace").decode("ascii")
    text = " ".join(text.translate(_UNQUOTE).split())
    if len(text) > DRAIN_MAX:
        text = text[: DRAIN_MAX - 3].rstrip() + "..."
    return text

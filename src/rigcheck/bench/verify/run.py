"""The runner of `rigcheck verify`: every measurement in one time budget, judged, in one document.

Steps, in order: ``doctor`` (run by the caller before: recorded with 0 s), ``matmul`` (the dtype each GPU's
SKU is judged on: bf16 where it has it, else fp16; one worker per GPU), ``membw`` (device copy, one worker per
GPU), ``fingerprint`` (one seeded workload per GPU, its outputs hashed and compared across identical GPUs bit for
bit; those the peers cannot settle run again with a float64 CPU reference: rigcheck.bench.fingerprint),
``hostlink`` (host↔GPU copies, one GPU at a time in this process), ``p2p`` (peer copies between every
pair, two or more GPUs), ``allreduce`` (NCCL across the node's GPUs, sizes up to 1 GiB, two or more GPUs) and
``burn`` (a sustained load sampled by the ``burn_poller`` the caller opened: power, clocks, throttle reasons,
wrong results). What each measures per level is rigcheck.bench.verify.steps.PLANS.

Budget (``quick`` 180 s, ``full`` 900 s, ``--cpu`` 60 s; ``budget_s`` overrides). Each step gets a share:

    step         quick   full    --cpu
    matmul       15 %    12 %    25 %
    membw         9 %     5 %    20 %
    fingerprint   6 %     4 %    15 %
    hostlink      8 %    10 %     -
    p2p           8 %    12 %     -
    allreduce    14 %    10 %    25 %
    burn         38 %    40 %     -
    (left)        2 %     7 %    15 %   re-measuring figures just under their floor

A step may use the smaller of its share and what is left of the budget. A launched step (matmul, membw,
allreduce) gets that as its workers' timeout, counted from when its workers are in the process group: their
set-up (spawn, torch's import, the group's init) has ``Plan.setup_s`` of its own (60 s, 30 s on CPU), outside the
share and the budget, so a busy machine's slow start does not cut the measurement short (the run's wall time is
the budget plus the set-up, which a note gives). One that hits its timeout is ``cut_short`` and keeps the rows
measured before (its document is partial); one whose workers do not join within the set-up budget is
``failed``. The burn's load is sized to fit (the level's load, or less: a load cut under half the level's is
``cut_short``). hostlink and p2p run in this process and cannot be stopped midway:
their sizes are chosen to fit their shares, they start only with their whole share left, and a note says
when one overran. A step that would start with less than the plan's ``min_start_s`` left (hostlink, p2p and
re-measures: their share) is ``cut_short`` with "budget spent"; one that raises BenchError or
UsageError is ``failed`` with its one line. Ctrl-C / SIGTERM (KeyboardInterrupt) ends the running step as
cut short, skips the rest and still returns the document; the CLI exits with the signal's code.

After the first judgement, figures just under their floor (``Judged.near_floor``) are measured once more if
the step's share is still left (only that step; only those GPUs where the benchmark can run them alone:
hostlink; matmul and membw run ranks 0..g, keeping the first figures of the others; p2p and allreduce whole),
then judged again with the earlier figures passed as ``remeasured``. A re-measure is recorded as the step
"<name> re-measure"; one that does not run to its end leaves the first figures alone.

``gpus``: only those are judged, and hostlink runs on those only. matmul and membw run one worker per GPU
from GPU 0 (the launcher's ranks are CUDA devices 0..n-1), p2p and allreduce are node checks over every GPU,
and the burn loads the poller's GPUs; the notes say what was measured on GPUs that are not judged. GPU
indices are taken to be the same in NVML and CUDA, as the judge takes them.

``cpu``: matmul (2 gloo ranks, small shapes), membw (one process, small sizes), the fingerprint (a rank per GPU
given with ``gpus``, else 2) and allreduce (2 gloo ranks, small sizes) on CPU processes;
hostlink, p2p and burn are ``not_applicable`` ("needs a GPU"), and the figures are
``unjudged`` (no GPU band holds a CPU's). It takes ~7 s on two cores. On one GPU, p2p and allreduce are
``not_applicable`` too ("not applicable: one GPU"): the node can pass. ``only`` (`--only`): the stages not named
are ``left_out``; neither keeps the node from passing, while a step ``skipped`` does (docs/verdicts.md).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rigcheck.bench.burn import BurnOutcome, burn_outcome, run_burn
from rigcheck.bench.collectives import run_collective
from rigcheck.bench.device.hostlink import run_hostlink
from rigcheck.bench.device.matmul import run_matmul
from rigcheck.bench.device.membw import run_membw
from rigcheck.bench.device.p2p import run_p2p
from rigcheck.bench.fingerprint import fingerprint_runs
from rigcheck.bench.launcher import SetupBudget, setup_budget
from rigcheck.bench.verify.steps import (
    BURN_DONE_FRACTION,
    BURN_MIN_LOAD_S,
    BURN_OVERHEAD_S,
    Plan,
    fingerprint_dtypes,
    launched_status,
    matmul_dtypes,
    merge_rows,
    parse_only,
    plan_for,
)
from rigcheck.checks.verify.judge import Judged, NearFloor, judge, verify_document
from rigcheck.errors import (
    BenchError,
    NotAnswering,
    ProbeError,
    UsageError,
    interrupt_behind,
    interrupted_text,
    signal_of,
    was_interrupted,
)
from rigcheck.model.bench import CollectiveDocument, HostlinkDocument, MatmulDocument, MembwDocument, P2PDocument
from rigcheck.model.burn import BurnDocument
from rigcheck.model.finding import Finding
from rigcheck.model.site_config import SiteConfig
from rigcheck.model.snapshot import Snapshot
from rigcheck.model.telemetry import Sample
from rigcheck.model.verify import Level, StepStatus, VerifyDocument, VerifyInputs, VerifyStep
from rigcheck.monitor.sampler import Poller

LEVEL_BUDGET_S = {"quick": 180.0, "full": 900.0, "prolog": 10.0}
CPU_BUDGET_S = 60.0
NEEDS_GPU = "not applicable: a CPU run (it needs a GPU)"


def _reading(read_counters: Callable[[], list[Sample]], runner: _Runner) -> list[Sample] | None:
    """One counter reading; None when NVML did not give it (one that did not answer in time is the driver's)."""
    try:
        return read_counters()
    except NotAnswering as exc:  # a deadline past: the driver is what does not answer
        runner.inputs.stuck = [*(runner.inputs.stuck or []), " ".join(str(exc).split())]
    except ProbeError as exc:  # NVML's own error: the counters go unjudged, and a note says why
        runner.notes.append(f"error counters not read: {' '.join(str(exc).split())}")
    return None


def level_budget(level: str, *, cpu: bool) -> float:
    """The level's budget in seconds: the prolog's 10 s on CPU ranks too; quick and full on CPU ranks 60 s."""
    if level == "prolog":
        return LEVEL_BUDGET_S["prolog"]
    return CPU_BUDGET_S if cpu else LEVEL_BUDGET_S[level]


def control_note(error: str | None) -> str:
    """What the all-reduce's control arm (NCCL_P2P_DISABLE=1) says of the one that failed."""
    if error is None:
        return (
            "allreduce: failed over P2P and passed with NCCL_P2P_DISABLE=1: the peer-to-peer path is what fails "
            "(ACS or IOMMU redirection on the PCIe switches, a broken NVLink); `rigcheck doctor` names its cause"
        )
    return f"allreduce: failed with NCCL_P2P_DISABLE=1 too ({error}): not the P2P path, the GPUs or NCCL itself"


def one_gpu(n: int) -> str:
    """Why p2p and all-reduce do not apply: a pair needs two GPUs (not a skip: the node can still pass)."""
    return "not applicable: one GPU" if n == 1 else f"not applicable: {n} GPUs (it needs two or more)"


@dataclass(frozen=True)
class Outcome:
    """How one step ended."""

    status: StepStatus
    reason: str | None = None
    interrupted: bool = False  # Ctrl-C / SIGTERM ended it: the steps after it are skipped


def _launched(error: str | None) -> Outcome:
    """The outcome of a launched benchmark, from its document's ``error``."""
    status, reason = launched_status(error)
    return Outcome(status, reason, interrupted=was_interrupted(error))


Body = Callable[[float], Outcome]  # given the seconds it may take


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


class _Runner:
    """One verify run: the budget's clock, the steps recorded so far, the measurements for the judge."""

    def __init__(
        self,
        *,
        snapshot: Snapshot,
        findings: list[Finding],
        plan: Plan,
        cpu: bool,
        budget_s: float,
        level: str = "quick",
        gpus: Sequence[int] | None,
        burn_poller: Poller | None,
        say: Callable[[str], None],
        clock: Callable[[], float],
        only: Sequence[str] | None = None,
        burn_exit_code: Callable[[BurnOutcome], int] | None = None,
    ) -> None:
        self.snapshot, self.plan, self.cpu, self.budget_s = snapshot, plan, cpu, budget_s
        self.level = level
        self.only = tuple(only) if only is not None else None
        self.gpus = sorted(set(gpus)) if gpus is not None else None
        self.poller, self.say, self.clock = burn_poller, say, clock
        self.burn_exit_code = burn_exit_code
        self.start = clock()
        self.setup_s = 0.0  # seconds the launched steps spent starting workers and joining the process group
        self.inputs = VerifyInputs(snapshot=snapshot, findings=list(findings), cpu=cpu)
        self.steps = [VerifyStep(name="doctor", status="done", elapsed_s=0.0, budget_s=0.0, reason=None)]
        self.notes: list[str] = []
        self.interrupted: str | None = None  # the one line of a Ctrl-C / SIGTERM: the rest is skipped
        self.node_gpus = len(snapshot.gpus)
        # matmul and membw: one worker per device, ranks 0..n-1 (covering the highest GPU asked for)
        if cpu:
            self.ranks = plan.cpu_ranks
        else:
            self.ranks = max(self.gpus) + 1 if self.gpus else max(1, self.node_gpus)
        self.dtypes = ("bf16",) if cpu else matmul_dtypes(snapshot, self.gpus)

    def elapsed(self) -> float:
        """The run's clock: time since the start, less the launches' set-up (it has a budget of its own)."""
        return self.clock() - self.start - self.setup_s

    def left(self) -> float:
        return self.budget_s - self.elapsed()

    def _clock_text(self) -> str:
        return f"{self.elapsed():.0f}/{self.budget_s:.0f} s"

    def _record(self, name: str, outcome: Outcome, elapsed_s: float, budget_s: float, *, first: bool) -> None:
        self.steps.append(
            VerifyStep(
                name=name,
                status=outcome.status,
                elapsed_s=round(elapsed_s, 3),
                budget_s=round(budget_s, 3),
                reason=outcome.reason,
            )
        )
        if not first:  # a re-measure that went wrong leaves the first figures as they were
            return
        if outcome.status == "failed":
            self.inputs.failed[name] = outcome.reason or "failed"
        elif outcome.status == "cut_short":
            self.inputs.cut_short.add(name)

    def step(self, name: str, body: Body, *, skip: Outcome | None = None, again: bool = False) -> Outcome:
        """Run one step within its share of what is left, and record it (``again``: a re-measure; ``skip``: how
        a step that does not run ends: not applicable, left out by --only, skipped)."""
        label = f"{name} re-measure" if again else name
        share_s = self.plan.shares.get(name, 0.0) * self.budget_s
        if not again and name not in self.plan.steps:
            skip = Outcome("left_out", f"left out: the {self.level} level runs {', '.join(self.plan.steps)} only")
        elif not again and self.only is not None and name not in self.only:
            skip = Outcome("left_out", f"left out: --only {','.join(self.only)}")
        if skip is not None or self.interrupted is not None:
            # Not applicable here (a CPU run, one GPU), left out by --only, or skipped; not run because Ctrl-C
            # ended the run: cut short, so the node is not passed on the steps that did run.
            outcome = skip if skip is not None else Outcome("cut_short", self.interrupted)
            status = outcome.status
            self._record(label, outcome, 0.0, 0.0, first=not again)
            said = outcome.reason if status in ("not_applicable", "left_out") else None  # it says so itself
            self.say(f"verify: {label} {said or status.replace('_', ' ') + ': ' + str(outcome.reason)}")
            return outcome
        left = self.left()
        # A step that cannot be stopped midway (in this process), and a re-measure (optional: it must not
        # overrun), start only with their whole share left; the others with the plan's minimum.
        if left < (share_s if again or name in IN_PROCESS else self.plan.min_start_s):
            outcome = Outcome("cut_short", "budget spent")
            self._record(label, outcome, 0.0, max(0.0, min(share_s, left)), first=not again)
            self.say(f"verify: {label} not started: budget spent ({self._clock_text()})")
            return outcome
        allowed = min(share_s, left)
        self.say(f"verify: {label} started, up to {allowed:.0f} s ({self._clock_text()})")
        started = self.clock()
        setup = SetupBudget(self.plan.setup_s)
        try:
            with setup_budget(self.plan.setup_s) as setup:
                outcome = body(allowed)
        except (BenchError, UsageError) as exc:
            outcome = Outcome("failed", _one_line(exc))
        except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM as the CLI raises it: keep what was measured
            outcome = Outcome("cut_short", interrupted_text(signal_of(exc)), interrupted=True)
        except RuntimeError as exc:  # the same, landed inside an import (see interrupt_behind); else a bug
            interrupt = interrupt_behind(exc)
            if interrupt is None:
                raise
            outcome = Outcome("cut_short", interrupted_text(signal_of(interrupt)), interrupted=True)
        self.setup_s += setup.used_s  # set-up is not the step's time nor the run's budget (its own, per launch)
        took = max(0.0, self.clock() - started - setup.used_s)
        if outcome.interrupted:
            self.interrupted = outcome.reason or "interrupted"
        self._record(label, outcome, took, allowed, first=not again)
        if took > allowed * 1.1 + 1.0 and name in ("hostlink", "p2p"):
            self.notes.append(
                f"{label} took {took:.0f} s, over its {allowed:.0f} s share: it runs in this process and "
                "cannot be stopped midway"
            )
        why = f": {outcome.reason}" if outcome.reason else ""
        self.say(f"verify: {label} {outcome.status.replace('_', ' ')} in {took:.1f} s ({self._clock_text()}){why}")
        return outcome

    # --- the measurements (each returns its document; the first run's bodies keep it for the judge) -------

    def measure_matmul(self, timeout_s: float, ranks: int) -> tuple[Outcome, MatmulDocument]:
        doc = run_matmul(
            dtypes=self.dtypes,
            cpu=self.cpu,
            shapes=self.plan.matmul_shapes,
            warmup=self.plan.matmul_warmup,
            repeats=self.plan.matmul_repeats,
            warmup_s=self.plan.matmul_warmup_s,
            world_size=ranks,
            timeout_s=timeout_s,
            snapshot=self.snapshot,
            on_progress=self.say,
        )
        return _launched(doc.error), doc

    def measure_membw(self, timeout_s: float, ranks: int) -> tuple[Outcome, MembwDocument]:
        doc = run_membw(
            cpu=self.cpu,
            sizes=self.plan.membw_sizes,
            repeats=self.plan.membw_repeats,
            world_size=ranks,
            timeout_s=timeout_s,
            snapshot=self.snapshot,
            on_progress=self.say,
        )
        return _launched(doc.error), doc

    def measure_hostlink(self, gpus: Sequence[int] | None) -> tuple[Outcome, HostlinkDocument]:
        doc = run_hostlink(
            gpus=gpus,
            size_bytes=self.plan.hostlink_size,
            repeats=self.plan.hostlink_repeats,
            warmup=1,
            numa=True,
            snapshot=self.snapshot,
            on_progress=self.say,
        )
        return Outcome("done"), doc

    def measure_p2p(self) -> tuple[Outcome, P2PDocument]:
        doc = run_p2p(
            size_bytes=self.plan.p2p_size,
            repeats=self.plan.p2p_repeats,
            warmup=1,
            modes=("peer",),  # the judged copy; staged copies would double the time for no verdict
            snapshot=self.snapshot,
            on_progress=self.say,
        )
        return Outcome("done"), doc

    def measure_allreduce(self, timeout_s: float) -> tuple[Outcome, CollectiveDocument]:
        started = self.clock()
        doc = self._allreduce(timeout_s, None)
        outcome = _launched(doc.error)
        if outcome.status == "failed" and self.plan.control_arm and not self.cpu:
            # The control arm: the same all-reduce with P2P off. Passing there, the P2P path (ACS/IOMMU
            # redirection, a broken NVLink) is what failed; failing there too, the GPUs or NCCL itself.
            left = max(1.0, timeout_s - (self.clock() - started))
            self.say("verify: allreduce failed: once more with NCCL_P2P_DISABLE=1 (the control arm)")
            control = self._allreduce(left, {"NCCL_P2P_DISABLE": "1"})
            self.notes.append(control_note(control.error))
        return outcome, doc

    def _allreduce(self, timeout_s: float, env: dict[str, str] | None) -> CollectiveDocument:
        doc, _nccl_log = run_collective(
            "allreduce",
            cpu=self.cpu,
            world_size=self.plan.cpu_ranks if self.cpu else self.node_gpus,
            sizes=self.plan.allreduce_sizes,
            warmup=self.plan.allreduce_warmup,
            repeats=self.plan.allreduce_repeats,
            timeout_s=timeout_s,
            snapshot=self.snapshot,
            env=env,
            on_progress=self.say,
        )
        return doc

    def fingerprint(self, timeout_s: float) -> Outcome:
        """The workload on every GPU (CPU rank) at once; the GPUs their peers cannot settle once more with the
        float64 reference, in what is left of the step's time."""
        # CPU: a rank per GPU asked for (`--cpu --gpus 0,1,2,3`: four ranks); GPUs: one per GPU from GPU 0
        ranks = (len(self.gpus) if self.gpus else self.plan.cpu_ranks) if self.cpu else self.ranks
        dtypes = None if self.cpu else fingerprint_dtypes(self.snapshot, self.gpus)
        runs = fingerprint_runs(
            cpu=self.cpu,
            world_size=ranks,
            timeout_s=timeout_s,
            dtypes=dtypes,
            on_progress=self.say,
            on_rerun=lambda again: self.say(
                f"verify: fingerprint: {_join(again)} re-run with a float64 reference (their peers disagree)"
            ),
            clock=self.clock,
        )
        self.inputs.fingerprint = runs.first.rows
        self.inputs.fingerprint_again = runs.again_rows
        return _launched(runs.error)

    def burn(self, allowed_s: float) -> Outcome:
        poller, exit_code_of = self.poller, self.burn_exit_code
        if poller is None or exit_code_of is None:  # the step is skipped without a poller; kept for mypy
            return Outcome("skipped", NO_POLLER)
        load_s = min(self.plan.burn_load_s, allowed_s - BURN_OVERHEAD_S)
        if load_s < BURN_MIN_LOAD_S:
            return Outcome("cut_short", f"budget spent: {allowed_s:.0f} s left, too little for a load")
        run = run_burn(
            poller,
            minutes=load_s / 60.0,
            dtype=self.dtypes[-1],  # fp16 when a GPU of the run has no bf16
            on_progress=self.say,
            uuids=getattr(poller, "uuids", None),  # NvmlPoller's: finds each GPU in CUDA's order
        )
        self.inputs.burn = BurnDocument.of_run(run, exit_code_of(burn_outcome(run)))  # the CLI's code
        if run.interrupted:
            return Outcome("cut_short", "interrupted: the load was stopped early", interrupted=True)
        if load_s < self.plan.burn_load_s * BURN_DONE_FRACTION:
            return Outcome("cut_short", f"the budget left {load_s:.0f} s of load, not {self.plan.burn_load_s:.0f} s")
        return Outcome("done")

    # --- the run ---------------------------------------------------------------------------------------

    def measure_all(self) -> None:
        inputs, n = self.inputs, self.node_gpus

        def matmul(timeout_s: float) -> Outcome:
            outcome, inputs.matmul = self.measure_matmul(timeout_s, self.ranks)
            return outcome

        def membw(timeout_s: float) -> Outcome:
            # CPU: one process; two would share (and halve) the same memory bandwidth
            outcome, inputs.membw = self.measure_membw(timeout_s, 1 if self.cpu else self.ranks)
            return outcome

        def hostlink(_allowed_s: float) -> Outcome:
            outcome, inputs.hostlink = self.measure_hostlink(self.gpus)
            return outcome

        def p2p(_allowed_s: float) -> Outcome:
            outcome, inputs.p2p = self.measure_p2p()
            return outcome

        def allreduce(timeout_s: float) -> Outcome:
            outcome, inputs.allreduce = self.measure_allreduce(timeout_s)
            return outcome

        gpu = Outcome("not_applicable", NEEDS_GPU) if self.cpu else None
        pair = None if n >= 2 else Outcome("not_applicable", one_gpu(n))
        self.step("matmul", matmul)
        self.step("membw", membw)
        self.step("fingerprint", self.fingerprint)
        self.step("hostlink", hostlink, skip=gpu)
        self.step("p2p", p2p, skip=gpu or pair)
        self.step("allreduce", allreduce, skip=None if self.cpu else pair)
        no_poller = Outcome("skipped", NO_POLLER) if self.poller is None else None
        self.step("burn", self.burn, skip=gpu or no_poller)

    def remeasure(self, judged: Judged) -> dict[tuple[int | None, str], list[float]]:
        """Measure each step with a figure near its floor once more (if the budget allows); the earlier
        figures of the checks whose new figure replaced them in ``inputs``."""
        by_step: dict[str, list[NearFloor]] = {}
        for item in judged.near_floor:
            by_step.setdefault(item.step, []).append(item)
        remeasured: dict[tuple[int | None, str], list[float]] = {}
        for name, items in by_step.items():
            earlier = {(i.gpu, i.check_id): v for i in items if (v := figure_of(judged, i)) is not None}
            if not earlier or name not in REMEASURABLE:
                continue
            keys = {i.gpu for i in items if i.gpu is not None}
            replaced: set[int | None] = set()

            def again(
                timeout_s: float, name: str = name, keys: set[int] = keys, replaced: set[int | None] = replaced
            ) -> Outcome:
                outcome, got = self.measure_again(name, keys, timeout_s)
                replaced.update(got)
                return outcome

            self.step(name, again, again=True)
            remeasured.update({k: [v] for k, v in earlier.items() if k[0] in replaced})
        return remeasured

    def measure_again(self, name: str, keys: set[int], timeout_s: float) -> tuple[Outcome, set[int | None]]:
        """One step measured again; the GPU keys (None: the node's) whose figures now come from it."""
        inputs = self.inputs
        note = f"{name}: figures of GPU(s) {', '.join(map(str, sorted(keys)))} re-measured (near their floor)"
        ranks = min(self.ranks, max(keys) + 1) if keys and not self.cpu else self.ranks
        # Only a re-measure that ran to its end replaces figures: a cut-short one may lack the best shape.
        if name == "matmul" and inputs.matmul is not None:
            outcome, mm = self.measure_matmul(timeout_s, ranks)
            if outcome.status == "done":
                inputs.matmul, got = merge_rows(inputs.matmul, mm, keys, note)
                return outcome, set(got)
        elif name == "membw" and inputs.membw is not None:
            outcome, mb = self.measure_membw(timeout_s, 1 if self.cpu else ranks)
            if outcome.status == "done":
                inputs.membw, got = merge_rows(inputs.membw, mb, keys, note)
                return outcome, set(got)
        elif name == "hostlink" and inputs.hostlink is not None and keys:
            outcome, hl = self.measure_hostlink(sorted(keys))
            inputs.hostlink, got = merge_rows(inputs.hostlink, hl, keys, note)
            return outcome, set(got)
        elif name == "p2p" and inputs.p2p is not None:
            outcome, p2p = self.measure_p2p()
            if p2p.results:
                inputs.p2p = p2p
                return outcome, {None, *keys}
        elif name == "allreduce" and inputs.allreduce is not None:
            outcome, ar = self.measure_allreduce(timeout_s)
            if ar.results and outcome.status == "done":
                inputs.allreduce = ar
                return outcome, {None, *keys}
        else:
            return Outcome("skipped", "nothing measured before to compare with"), set()
        return outcome, set()

    def gpus_notes(self) -> list[str]:
        """What was measured on GPUs that are not judged (``gpus`` given), from the rows that came back."""
        if self.gpus is None or self.cpu:
            return []
        chosen, inputs, notes = set(self.gpus), self.inputs, []
        for name, doc in (("matmul", inputs.matmul), ("membw", inputs.membw)):
            extra = sorted({r.gpu for r in doc.results if r.gpu is not None} - chosen) if doc is not None else []
            if extra:
                notes.append(
                    f"{name} also measured GPU(s) {_join(extra)}, not judged: its workers run one per GPU from "
                    f"GPU 0 up to the highest asked for"
                )
        measured = [name for name, doc in (("p2p", inputs.p2p), ("allreduce", inputs.allreduce)) if doc is not None]
        if measured and set(range(self.node_gpus)) - chosen:
            notes.append(f"{' and '.join(measured)}: node checks, measured over all {self.node_gpus} GPUs")
        if inputs.burn is not None and (burned := sorted({a.index for a in inputs.burn.gpus} - chosen)):
            notes.append(f"the burn also loaded GPU(s) {_join(burned)} (the poller's), not judged")
        return notes


def _join(indices: Sequence[int]) -> str:
    return ", ".join(map(str, indices))


REMEASURABLE = ("matmul", "membw", "hostlink", "p2p", "allreduce")
IN_PROCESS = ("hostlink", "p2p")  # run in this process: no timeout can stop them
NO_POLLER = "no GPU telemetry poller was handed in: the burn samples power, clocks and throttle reasons (NVML)"


def figure_of(judged: Judged, item: NearFloor) -> float | None:
    """The figure the first judgement held for a near-floor item."""
    gpu_checks = (g.checks for g in judged.gpus if g.index == item.gpu)
    checks = judged.node if item.gpu is None else next(gpu_checks, [])
    return next((c.value for c in checks if c.id == item.check_id), None)


def run_verify(
    *,
    snapshot: Snapshot,
    findings: list[Finding],
    level: Level = "quick",
    cpu: bool = False,
    gpus: Sequence[int] | None = None,
    budget_s: float | None = None,
    site: SiteConfig | None = None,
    baseline: VerifyDocument | None = None,
    baseline_name: str | None = None,
    site_name: str | None = None,
    host: str | None = None,
    burn_poller: Poller | None = None,
    burn_exit_code: Callable[[BurnOutcome], int] | None = None,
    on_progress: Callable[[str], None] | None = None,
    clock: Callable[[], float] = time.monotonic,
    only: Sequence[str] | None = None,
    stuck: Sequence[str] | None = None,
    read_counters: Callable[[], list[Sample]] | None = None,
) -> VerifyDocument:
    """Measure this node in one time budget (see the module docstring), judge it, and return the document.

    ``snapshot`` and ``findings``: the machine and the doctor's findings, as the caller probed and checked it.
    ``burn_poller``: an open telemetry poller (the CLI's NvmlPoller) for the burn; without one it is skipped.
    ``burn_exit_code``: with a poller, the CLI's exit code of a burn's outcome (cli/exits.exit_code_for_burn), the
    burn document's ``exit_code``: the library says the outcome, never the code.
    ``only``: the stages asked for (`--only`); the others are ``left_out`` and do not keep the node from passing.
    ``stuck``: what the caller found blocked in the driver before the run (processes in D state on /dev/nvidia*,
    rigcheck.probe.stuck): the node check ``driver`` fails on any. ``read_counters``: one reading of every GPU's
    error counters (the CLI's NVML poller), taken before and after the measurements: each GPU's check ``counters``.
    Raises UsageError for a budget that is not positive, a GPU the snapshot does not have or an unknown stage.
    """
    if only is not None:
        only = parse_only(",".join(only))
    budget = budget_s if budget_s is not None else level_budget(level, cpu=cpu)
    if burn_poller is not None and burn_exit_code is None:
        raise ValueError("a burn_poller needs a burn_exit_code: the burn document's exit code is the CLI's")
    if budget <= 0:
        raise UsageError(f"the time budget must be positive, not {budget:g} s")
    if gpus is not None and not cpu:
        known = {g.index for g in snapshot.gpus}
        unknown = sorted(set(gpus) - known)
        if unknown:
            raise UsageError(f"no GPU {unknown[0]} on this node (GPUs: {', '.join(map(str, sorted(known)))})")
    say = on_progress or (lambda _line: None)
    runner = _Runner(
        snapshot=snapshot,
        findings=findings,
        plan=plan_for(level, cpu=cpu),
        cpu=cpu,
        level=level,
        budget_s=budget,
        gpus=gpus,
        burn_poller=burn_poller,
        burn_exit_code=burn_exit_code,
        say=say,
        clock=clock,
        only=only,
    )
    say(f"verify: {level}{' --cpu' if cpu else ''}, budget {budget:.0f} s")
    runner.inputs.stuck = list(stuck) if stuck is not None else None
    before = _reading(read_counters, runner) if read_counters is not None else None
    started = clock()
    runner.measure_all()
    if read_counters is not None and before is not None:
        after = _reading(read_counters, runner)
        if after is not None:
            runner.inputs.counters_before, runner.inputs.counters_after = before, after
            runner.inputs.counters_s = clock() - started
    judged = judge(runner.inputs, site=site, baseline=baseline, gpus=gpus)
    if judged.near_floor and runner.interrupted is None:
        remeasured = runner.remeasure(judged)
        if remeasured:
            judged = judge(runner.inputs, site=site, baseline=baseline, gpus=gpus, remeasured=remeasured)
    doc = verify_document(
        judged,
        level=level,
        source="cpu" if cpu else "live",
        elapsed_s=round(runner.elapsed(), 3),
        budget_s=budget,
        steps=runner.steps,
        host=host if host is not None else snapshot.host.hostname,
        baseline_name=baseline_name,
        site_name=site_name,
    )
    notes = [*runner.notes, *runner.gpus_notes()]
    if runner.setup_s > 0:
        notes.append(
            f"set-up (starting the workers, joining the process group) took {runner.setup_s:.1f} s, outside the "
            f"steps' shares and the budget (each launched step has {runner.plan.setup_s:.0f} s of its own for it)"
        )
    say(f"verify: {doc.verdict} in {doc.elapsed_s:.0f} s of {budget:.0f} s")
    return doc.model_copy(update={"notes": [*doc.notes, *notes]}) if notes else doc

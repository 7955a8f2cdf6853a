"""The judge of `rigcheck verify` (pure: no I/O, no clock): figures in, a verdict per check, GPU and node out.

Each figure (checks/verify/figures.py) is held, and each judgement shown in one line naming the figures, against:

- **band**: the floor of what a healthy card of its SKU reaches (facts/bands.py, or the site file's); under it
  fails. No band (an unknown SKU, a check the SKU has no figure for) or a CPU run: not judged, and why.
- **peers**: the identical GPUs in the box (same name): with three or more, more than 10% under the median of
  them all fails (one card reading high moves no one); two must agree within 10%, else both are measured again
  and, still apart, both fail naming each other. P2P pairs are peers when their link code is the same (NV18
  with NV18, PIX with PIX). Host copies are held to the PCIe link the slot allows (a slower slot is a note).
- **baseline**: the same check of the same GPU (by UUID, else index) in an earlier `verify --json`; under
  baseline x (1 - tolerance) fails, the tolerance being the larger of 5% and the run's own spread.
- **result**: wrong results (a product, copy or reduction that differed from its reference), a GPU lost, a
  burn held back by thermal slowdown or the hardware power brake.
- **fingerprint**: the same seeded workload's output digests against the GPU's identical peers, bit for bit
  (checks/verify/fingerprint.py); a GPU the peers cannot settle is held to a float64 CPU reference.

A check fails when any judgement fails, is incomplete when it has no figure (its step failed or was cut short
before measuring it, or a partial document has nothing for its GPU), passes otherwise. A figure just under its
band floor (within NEAR_FLOOR) and failing on nothing else, or one of two identical GPUs apart, is listed in
``near_floor``, for the runner to measure again and hand back through ``remeasured``: the best of all its
figures is then judged. Each judgement carries its margin (``margin_pct``) from what it was held to.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, Literal

from rigcheck.checks import verdicts
from rigcheck.checks.doctor.driver import DRIVER_IDS
from rigcheck.checks.verdicts import finding_verdict, node_verdict, step_verdict
from rigcheck.checks.verify.bands import node_allreduce_fact, with_site_floor
from rigcheck.checks.verify.counters import judge_bracket
from rigcheck.checks.verify.dcgm import judge_dcgm
from rigcheck.checks.verify.figures import (
    Figure,
    allreduce_figure,
    band_judgement,
    baseline_judgement,
    burn_figures,
    check_verdict,
    gpu_band,
    hostlink_figures,
    matmul_figures,
    membw_figures,
    num,
    p2p_figures,
    pair_apart,
    peer_judgement,
    result_judgement,
    slot_notes,
)
from rigcheck.checks.verify.fingerprint import FINDING_ID as FINGERPRINT_FINDING
from rigcheck.checks.verify.fingerprint import FingerprintVerdict, judge_fingerprints, key_of
from rigcheck.facts import bands as facts_bands
from rigcheck.facts.allreduce_bands import is_nvswitch_board
from rigcheck.facts.catalog import GpuSpec, lookup
from rigcheck.model.finding import Finding, Severity, gpu_subject
from rigcheck.model.site_config import SiteConfig
from rigcheck.model.snapshot import P2PStatus, Snapshot
from rigcheck.model.verify import (
    Band,
    DcgmSummary,
    Judgement,
    Level,
    Verdict,
    VerifyCheck,
    VerifyDocument,
    VerifyGpu,
    VerifyInputs,
    VerifyStep,
    worst,
)

DRAIN_MAX: Final = verdicts.DRAIN_MAX  # the Slurm line's length and maker live with the verdict contract
drain_reason = verdicts.drain_reason
NEAR_FLOOR: Final = 0.05  # a band failure this close under the floor is measured again before it stands
WORST_FINDINGS: Final = 3  # failing findings named in a doctor check's line
CPU_SOURCE: Final = "CPU run: not judged against a GPU band"
GPU_STEPS: Final = ("matmul", "membw", "hostlink", "burn")
MEASURED_STEPS: Final = (*GPU_STEPS, "p2p", "allreduce")


@dataclass(frozen=True)
class NearFloor:
    """A figure under its band floor by at most NEAR_FLOOR (5%), or two identical GPUs apart: re-measured."""

    step: str  # "matmul" | "membw" | "hostlink" | "p2p" | "allreduce"
    check_id: str
    gpu: int | None  # None for node checks


@dataclass
class Judged:
    """What the judge concluded: the checks per GPU and of the node, the verdict, the Slurm line, the notes,
    and the checks worth measuring again."""

    gpus: list[VerifyGpu]
    node: list[VerifyCheck]
    verdict: Verdict
    drain_reason: str | None
    notes: list[str] = field(default_factory=list)
    near_floor: list[NearFloor] = field(default_factory=list)


@dataclass(frozen=True)
class _Unit:
    """One GPU judged (a CPU rank on a CPU run)."""

    index: int
    name: str
    uuid: str | None
    pci_bus_id: str | None
    spec: GpuSpec | None


@dataclass
class _Judge:
    """The state one judge() call shares between its rules."""

    inputs: VerifyInputs
    site: SiteConfig | None
    baseline: VerifyDocument | None
    remeasured: Mapping[tuple[int | None, str], list[float]]
    units: dict[int, _Unit]
    notes: list[str] = field(default_factory=list)
    near_floor: list[NearFloor] = field(default_factory=list)
    shorts: dict[int, str] = field(default_factory=dict)  # id(VerifyCheck) -> its words in the drain reason
    fingerprints: dict[int, FingerprintVerdict] | None = None  # judged once, on the first GPU that asks

    @property
    def cpu(self) -> bool:
        return self.inputs.cpu


# --- the GPUs judged --------------------------------------------------------------------------------------


def _units(inputs: VerifyInputs, chosen: Sequence[int] | None, notes: list[str]) -> dict[int, _Unit]:
    """The GPUs to judge, by index: the snapshot's (with any measured GPU it lacks); on CPU the ranks."""
    units: dict[int, _Unit] = {}
    if not inputs.cpu:
        for g in inputs.snapshot.gpus:
            name = g.name or f"GPU {g.index}"
            units[g.index] = _Unit(g.index, name, g.uuid, g.pci_bus_id, lookup(name) if g.name else None)
    measured: list[tuple[int | None, str | None]] = []
    if inputs.matmul is not None:
        measured += [(f.key, f.device_name) for f in matmul_figures(inputs.matmul, {})]
    if inputs.membw is not None:
        measured += [(f.key, f.device_name) for f in membw_figures(inputs.membw)]
    if inputs.hostlink is not None:
        measured += [(f.key, f.device_name) for f in hostlink_figures(inputs.hostlink)]
    if inputs.fingerprint is not None:
        measured += [(key_of(r), r.device_name) for r in inputs.fingerprint]
    for key, device in measured:
        if key is not None and key not in units:
            label = device or (f"rank {key}" if inputs.cpu else f"GPU {key}")
            units[key] = _Unit(key, label, None, None, None if inputs.cpu or device is None else lookup(device))
    if chosen is not None:
        unknown = sorted(set(chosen) - set(units))
        if unknown:
            notes.append(f"GPU {', '.join(map(str, unknown))}: not on this machine, not judged")
        units = {i: u for i, u in units.items() if i in set(chosen)}
    for u in units.values():
        if u.spec is None and not inputs.cpu:
            notes.append(f"GPU {u.index} ({u.name}) is not in rigcheck's catalog: its figures have no band")
    return dict(sorted(units.items()))


# --- bands ------------------------------------------------------------------------------------------------


def _nvswitch(snapshot: Snapshot) -> bool:
    """Whether the GPUs sit on an NVSwitch fabric: a link ends at a switch, or the host shows NVSwitches."""
    if snapshot.fabric_manager is not None and (snapshot.fabric_manager.nvswitches or 0) > 0:
        return True
    return any(link.remote_device_type == "switch" for g in snapshot.gpus for link in g.nvlinks or ())


def _p2p_band(j: _Judge, fig: Figure) -> tuple[Band | None, str]:
    """A pair's band: its link's (NVLinks x their rate, else the PCIe link both GPUs sit on), the site's floor
    for the source GPU laid over it."""
    assert fig.pair is not None
    src, dst = (j.inputs.snapshot.gpu(i) for i in fig.pair)
    unit = j.units.get(fig.pair[0])
    spec = unit.spec if unit is not None else None
    generation = next((lk.version for lk in (src.nvlinks or ()) if lk.version), None) if src is not None else None
    if generation is None and spec is not None and spec.nvlink_generation:
        generation = spec.nvlink_generation
    gens = [(g.pcie_gen_max or g.pcie_gen_current) if g is not None else None for g in (src, dst)]
    widths = [(g.pcie_width_current or g.pcie_width_max) if g is not None else None for g in (src, dst)]
    # No peer access (the copy reports it, or NVML's P2P status for the pair): copies staged through host memory.
    pair = j.inputs.snapshot.pair(*fig.pair)
    rows = j.inputs.p2p.results if j.inputs.p2p is not None else []
    staged = any(r.peer_access is False for r in rows if r.mode == "peer" and (r.src, r.dst) == fig.pair) or (
        pair is not None and pair.p2p_read not in (None, P2PStatus.OK, P2PStatus.UNKNOWN)
    )
    fact = facts_bands.p2p_band(
        nvlinks=fig.nvlinks or None,
        nvlink_generation=generation,
        pcie_gen=_least(gens),
        pcie_width=_least(widths),
        staged=staged,
    )
    name = unit.name if unit is not None else (src.name if src is not None and src.name else "")
    band = with_site_floor(fact, "p2p", j.site, gpu_name=name)
    if band is None:
        return None, f"no band: neither the NVLinks nor the PCIe link of GPU{fig.pair[0]}-GPU{fig.pair[1]} is known"
    return band, band.source


def _least(values: Sequence[int | None]) -> int | None:
    """The lower of both GPUs' link figures (the pair runs at it); None when either is unknown."""
    known = [v for v in values if v is not None]
    return min(known) if known and len(known) == len(values) else None


def _allreduce_band(j: _Judge, fig: Figure) -> tuple[Band | None, str]:
    """The node's all-reduce band for its condition (facts/allreduce_bands.py): on NVSwitch (the snapshot shows
    it, or 8 SXM GPUs of Ampere or later: an HGX board), NVLS on or off at the largest size, the site's floor
    laid over it; none for a mix of models or GPUs without NVSwitch (unless the site sets one)."""
    names = {g.name for g in j.inputs.snapshot.gpus}
    if len(names) != 1 or None in names:
        return None, "no band: the node's GPUs are not all of one known model"
    name = str(names.pop())
    spec = lookup(name)
    ranks = fig.ranks or len(j.inputs.snapshot.gpus)
    # An 8-GPU SXM board is NVSwitch, unless the snapshot shows where its NVLinks end and none ends at a switch.
    shown = any(link.remote_device_type for g in j.inputs.snapshot.gpus for link in g.nvlinks or ())
    nvswitch = _nvswitch(j.inputs.snapshot) or (
        not shown and spec is not None and is_nvswitch_board(spec.architecture, spec.form_factor, ranks)
    )
    doc = j.inputs.allreduce
    fact, why_none = (None, "")
    if spec is not None and nvswitch and doc is not None and doc.results:
        size = max(r.size_bytes for r in doc.results)
        fact, why_none = node_allreduce_fact(spec, ranks=ranks, size=size, busbw=fig.value, nccl=doc.versions.nccl)
    band = with_site_floor(fact, "allreduce", j.site, gpu_name=name)
    if band is not None:
        return band, f"floor {band.expected_min:g} ({band.basis}): {band.source}"
    if why_none:
        return None, why_none
    if spec is None:
        return None, f"no band: {name} is not in rigcheck's catalog"
    if not nvswitch:
        return None, "no band: the GPUs are not on an NVSwitch fabric (the public figures are of NVSwitch boxes)"
    return None, f"no band: no public all-reduce figure for {ranks} {spec.name} on NVSwitch"


# --- one check ----------------------------------------------------------------------------------------------


def _best(value: float | None, earlier: Sequence[float]) -> float | None:
    """The figure judged after a re-measurement: the best of them all."""
    known = [v for v in (value, *earlier) if v is not None]
    return max(known) if known else None


def _short(check: VerifyCheck, problems: Sequence[str]) -> str:
    """A failed or incomplete check in the drain reason's words: "571<712 TFLOPS"."""
    if check.verdict == "incomplete":
        return "incomplete"
    unit = f" {check.unit}" if check.unit else ""
    value = num(check.value) if check.value is not None else "?"
    words: list[str] = []
    for jd in check.judgements:
        if jd.verdict != "fail":
            continue
        if jd.rule == "band" and check.expected_min is not None:
            words.append(f"{value}<{num(check.expected_min)}{unit}")
        elif jd.rule == "peers" and jd.reference is not None:
            words.append(f"{value} vs peers {num(jd.reference)}{unit}")
        elif jd.rule == "baseline" and check.baseline is not None:
            words.append(f"{value} vs baseline {num(check.baseline)}{unit}")
        elif jd.rule == "result":
            words.append(problems[0] if problems else "wrong results")
        else:
            words.append(jd.text)
    return ", ".join(dict.fromkeys(words))


def _figure_check(
    j: _Judge,
    fig: Figure,
    *,
    key: int | None,
    value: float | None,
    band: tuple[Band | None, str] | None,
    peers: tuple[Sequence[float], str] | None,
    base: float | None,
) -> VerifyCheck:
    """One figure judged: ``band`` (the band or why none; None: no band rule), ``peers`` (the peers' figures
    and what they are; None: no peers rule), ``base`` (its figure in the baseline document)."""
    earlier = list(j.remeasured.get((key, fig.check_id), ()))
    judgements: list[Judgement] = []
    peer_best: float | None = None
    shown_band: Band | None = None
    source: str | None = None
    if band is not None:
        if j.cpu:
            source = CPU_SOURCE
        else:
            shown_band, source = band
    if value is not None:
        if band is not None:
            if j.cpu:
                judgements.append(Judgement(rule="band", verdict="not_judged", text=CPU_SOURCE))
            else:
                judgements.append(band_judgement(value, fig.unit, shown_band, source or ""))
        if peers is not None:
            if j.cpu:
                text = "CPU run: the ranks share the host's cores, not judged against each other"
                judgements.append(Judgement(rule="peers", verdict="not_judged", text=text))
            else:
                twice = (key, fig.check_id) in j.remeasured
                peer, peer_best = peer_judgement(value, fig.unit, peers[0], peers[1], remeasured=twice)
                judgements.append(peer)
                if not twice and len(peers[0]) == 1 and pair_apart(value, peers[0][0]):
                    j.near_floor.append(NearFloor(step=fig.step, check_id=fig.check_id, gpu=key))
        if j.baseline is not None and band is not None:
            judgements.append(baseline_judgement(value, fig.unit, base, fig.spread))
    judgements.append(result_judgement(fig.problems))
    verdict = check_verdict(value, judgements)
    held = [jd.verdict for jd in judgements if jd.rule in ("band", "peers", "baseline")]
    if verdict == "pass" and held and all(v == "not_judged" for v in held):
        verdict = "unjudged"  # a figure nothing was held against is not a pass (docs/verdicts.md)
    again = f"; re-measured, best of {len(earlier) + 1}" if earlier else ""
    rules = ", ".join(
        f"{jd.rule} fail ({jd.text})" if jd.verdict == "fail" else f"{jd.rule} {jd.verdict.replace('_', ' ')}"
        for jd in judgements
    )
    check = VerifyCheck(
        id=fig.check_id,
        verdict=verdict,
        value=value,
        unit=fig.unit,
        expected_min=shown_band.expected_min if shown_band is not None else None,
        expected_source=source,
        peak=shown_band.peak if shown_band is not None else None,
        peer_best=peer_best,
        baseline=base if j.baseline is not None and band is not None else None,
        judgements=judgements,
        detail=f"{fig.measured}{again}; {rules}",
        remeasured=earlier,
    )
    if verdict in ("fail", "incomplete"):
        j.shorts[id(check)] = _short(check, fig.problems)
    if shown_band is not None and value is not None and (key, fig.check_id) not in j.remeasured:
        failing = {jd.rule for jd in judgements if jd.verdict == "fail"}
        if failing == {"band"} and value >= shown_band.expected_min * (1 - NEAR_FLOOR):
            j.near_floor.append(NearFloor(step=fig.step, check_id=fig.check_id, gpu=key))
    return check


def _bare_check(
    check_id: str,
    verdict: Verdict,
    detail: str,
    *,
    value: float | None = None,
    unit: str | None = None,
    judgements: Sequence[Judgement] = (),
) -> VerifyCheck:
    """A check held to no band, peer or baseline (incomplete, the fingerprint, the driver)."""
    return VerifyCheck(
        id=check_id,
        verdict=verdict,
        value=value,
        unit=unit,
        expected_min=None,
        expected_source=None,
        peak=None,
        peer_best=None,
        baseline=None,
        judgements=list(judgements),
        detail=detail,
        remeasured=[],
    )


def _incomplete(check_id: str, unit: str | None, reason: str) -> VerifyCheck:
    return _bare_check(check_id, "incomplete", reason, unit=unit)


def _doctor_check(j: _Judge, findings: Sequence[Finding]) -> VerifyCheck:
    """The doctor's findings: any that fails fails the check (a CPU run needs no GPU driver: those are not
    counted there)."""
    fails = [f for f in findings if finding_verdict(f, cpu=j.cpu) == "fail"]  # the contract: checks/verdicts.py
    warns = sum(f.severity is Severity.WARN for f in findings)
    if fails:
        named = ", ".join(f"{f.id} ({f.subject})" for f in fails[:WORST_FINDINGS])
        more = f" and {len(fails) - WORST_FINDINGS} more" if len(fails) > WORST_FINDINGS else ""
        judgement = Judgement(rule="findings", verdict="fail", text=f"{len(fails)} failing: {named}{more}")
        short = ", ".join(f.id for f in fails[:WORST_FINDINGS]) + more
    else:
        text = f"no failing finding among {len(findings)} ({warns} warn)"
        judgement = Judgement(rule="findings", verdict="pass", text=text)
        short = ""
    check = VerifyCheck(
        id="doctor",
        verdict="fail" if fails else "pass",
        value=float(len(fails)),
        unit="failing findings",
        expected_min=None,
        expected_source=None,
        peak=None,
        peer_best=None,
        baseline=None,
        judgements=[judgement],
        detail=f"the doctor checks: {judgement.text}",
        remeasured=[],
    )
    if fails:
        j.shorts[id(check)] = short
    return check


# --- the judge --------------------------------------------------------------------------------------------


def _missing_reason(j: _Judge, step: str, partial: bool, error: str | None) -> str | None:
    """Why a step left a GPU (or the node) without a figure; None when nothing says it should have one."""
    if step in j.inputs.failed:
        return f"the {step} step failed: {j.inputs.failed[step]}"
    if step in j.inputs.cut_short:
        return f"the {step} step was cut short by the time budget before measuring it"
    if partial:
        return f"the {step} run ended early before measuring it ({error or 'a partial document'})"
    return None


def _expected_ids(step: str, unit: _Unit, cpu: bool) -> list[tuple[str, str | None]]:
    """The checks a step gives a GPU, with their units: what an incomplete step leaves unmeasured."""
    if step == "matmul":
        judged = None if cpu or unit.spec is None else facts_bands.judged_matmul_check(unit.spec)
        return [(judged or "matmul", "TFLOPS")]
    if step == "hostlink":
        return [("hostlink_h2d", "GB/s"), ("hostlink_d2h", "GB/s")]
    if step == "membw":
        return [("membw", "GB/s")]
    return [("burn", None)]


def _step_figures(j: _Judge) -> dict[str, dict[int, list[Figure]]]:
    """Each GPU step's figures per GPU (rank on CPU)."""
    inputs = j.inputs
    judged = {
        i: facts_bands.judged_matmul_check(u.spec) if u.spec is not None and not j.cpu else None
        for i, u in j.units.items()
    }
    found: dict[str, list[Figure]] = {
        "matmul": matmul_figures(inputs.matmul, judged) if inputs.matmul is not None else [],
        "membw": membw_figures(inputs.membw) if inputs.membw is not None else [],
        "hostlink": hostlink_figures(inputs.hostlink) if inputs.hostlink is not None else [],
        "burn": burn_figures(inputs.burn) if inputs.burn is not None else [],
    }
    by_step: dict[str, dict[int, list[Figure]]] = {}
    for step, figures in found.items():
        per_gpu: dict[int, list[Figure]] = {}
        for fig in figures:
            if fig.key is not None:
                per_gpu.setdefault(fig.key, []).append(fig)
        by_step[step] = per_gpu
    return by_step


def _partial(j: _Judge, step: str) -> tuple[bool, str | None]:
    """Whether the step's document says it ended early, and its error."""
    if step == "burn":
        burn = j.inputs.burn
        return (bool(burn.partial), None) if burn is not None else (False, None)
    doc = getattr(j.inputs, step)
    return (bool(doc.partial), doc.error) if doc is not None else (False, None)


def _baseline_gpu(baseline: VerifyDocument | None, unit: _Unit) -> VerifyGpu | None:
    """The same GPU in the baseline: by UUID, else by index."""
    if baseline is None:
        return None
    if unit.uuid is not None:
        same = next((g for g in baseline.gpus if g.uuid == unit.uuid), None)
        if same is not None:
            return same
    return next((g for g in baseline.gpus if g.index == unit.index), None)


def _baseline_value(checks: Sequence[VerifyCheck], check_id: str) -> float | None:
    return next((c.value for c in checks if c.id == check_id), None)


def _gpu_checks(
    j: _Judge, unit: _Unit, figures: dict[str, dict[int, list[Figure]]], values: dict[tuple[int, str], float | None]
) -> list[VerifyCheck]:
    checks: list[VerifyCheck] = []
    if not j.cpu and "doctor" not in j.inputs.failed and "doctor" not in j.inputs.cut_short:
        subject = gpu_subject(unit.index)
        checks.append(_doctor_check(j, [f for f in j.inputs.findings if f.gpu == unit.index or f.subject == subject]))
    fingerprint = _fingerprint_check(j, unit)
    if fingerprint is not None:
        checks.append(fingerprint)
    counters = _counters_check(j, unit)
    if counters is not None:
        checks.append(counters)
    base_gpu = _baseline_gpu(j.baseline, unit)
    for step in GPU_STEPS:
        got = figures[step].get(unit.index, [])
        if not got:
            reason = _missing_reason(j, step, *_partial(j, step))
            if reason is not None:
                checks += [_incomplete(cid, u, reason) for cid, u in _expected_ids(step, unit, j.cpu)]
            continue
        for fig in got:
            value = values[(unit.index, fig.check_id)]
            if step == "burn":
                checks.append(_figure_check(j, fig, key=unit.index, value=value, band=None, peers=None, base=None))
                continue
            others = [
                v
                for (k, cid), v in values.items()
                if cid == fig.check_id and k != unit.index and v is not None and k in j.units
                if j.units[k].name == unit.name
            ]
            base = _baseline_value(base_gpu.checks, fig.check_id) if base_gpu is not None else None
            gpu = None if j.cpu else j.inputs.snapshot.gpu(unit.index)
            band = gpu_band(fig.check_id, unit.spec, unit.name, gpu, j.site)
            checks.append(
                _figure_check(
                    j, fig, key=unit.index, value=value, band=band, peers=(others, "identical peers"), base=base
                )
            )
    return checks


def _fingerprint_check(j: _Judge, unit: _Unit) -> VerifyCheck | None:
    """The GPU's fingerprint against its identical peers (checks/verify/fingerprint.py); None when the step did
    not run (saved documents carry none)."""
    inputs = j.inputs
    if inputs.fingerprint is None:
        reason = _missing_reason(j, "fingerprint", False, None)
        return _incomplete("fingerprint", None, reason) if reason is not None else None
    if j.fingerprints is None:
        j.fingerprints = judge_fingerprints(inputs.fingerprint, inputs.fingerprint_again)
    got = j.fingerprints.get(unit.index)
    if got is None:
        return _incomplete("fingerprint", None, "the fingerprint run gave no result for it")
    judgement = Judgement(
        rule="fingerprint",
        verdict="not_judged" if got.verdict in ("unjudged", "incomplete") else got.verdict,
        text=got.text,
        finding=got.finding,
        first_difference=got.first_difference,
    )
    check = _bare_check("fingerprint", got.verdict, got.text, judgements=[judgement])
    if got.verdict == "fail":
        at = f" at {got.first_difference}" if got.first_difference else " vs float64"
        j.shorts[id(check)] = FINGERPRINT_FINDING + at
    return check


def _counters_check(j: _Judge, unit: _Unit) -> VerifyCheck | None:
    """The GPU's error counters over the run (checks/verify/counters.py); None where they were not read."""
    inputs = j.inputs
    if inputs.counters_before is None or inputs.counters_after is None:
        return None
    got = judge_bracket(inputs.counters_before, inputs.counters_after, inputs.counters_s).get(unit.index)
    if got is None:
        return None
    verdict: Verdict = "fail" if got.failed else "pass"
    judgement = Judgement(rule="result", verdict=verdict, text=got.text)
    check = _bare_check("counters", verdict, got.text, value=got.ecc_per_s, unit="ECC/s", judgements=[judgement])
    if got.failed:
        j.shorts[id(check)] = "error counters rose"
    return check


def _stuck_check(j: _Judge, stuck: Sequence[str]) -> VerifyCheck:
    """The node check ``driver``: what is blocked inside the driver: processes in uninterruptible sleep on
    /dev/nvidia* (rigcheck.probe.stuck), or the probe itself past its deadline (rigcheck.probe.deadline)."""
    text = (
        f"driver not responding: {'; '.join(stuck[:3])}"
        + (f" and {len(stuck) - 3} more" if len(stuck) > 3 else "")
        + ": blocked inside the driver, unkillable until it returns; a reboot or a GPU reset clears it"
    )
    judgement = Judgement(rule="result", verdict="fail", text=text)
    check = _bare_check("driver", "fail", text, value=float(len(stuck)), unit="blocked", judgements=[judgement])
    j.shorts[id(check)] = "not responding"
    return check


def _node_checks(j: _Judge, chosen: set[int]) -> list[VerifyCheck]:
    inputs = j.inputs
    checks: list[VerifyCheck] = []
    if "doctor" in inputs.failed or "doctor" in inputs.cut_short:
        checks.append(_incomplete("doctor", "failing findings", _missing_reason(j, "doctor", False, None) or ""))
    else:
        mine = [
            f
            for f in inputs.findings
            if (f.gpu is None or f.gpu in chosen) and (f.pair is None or any(g in chosen for g in f.pair))
        ]
        checks.append(_doctor_check(j, mine))
    base_node = j.baseline.node if j.baseline is not None else []
    pairs = [f for f in (p2p_figures(inputs.p2p) if inputs.p2p is not None else []) if f.pair and set(f.pair) <= chosen]
    pair_values = {f.check_id: _best(f.value, j.remeasured.get((None, f.check_id), ())) for f in pairs}
    for fig in pairs:
        others = [
            v
            for g in pairs
            if g.check_id != fig.check_id and g.link == fig.link
            if (v := pair_values[g.check_id]) is not None
        ]
        what = f"pairs over {fig.link}" if fig.link else "pairs of unknown link"
        checks.append(
            _figure_check(
                j,
                fig,
                key=None,
                value=pair_values[fig.check_id],
                band=_p2p_band(j, fig),
                peers=(others, what),
                base=_baseline_value(base_node, fig.check_id),
            )
        )
    if not pairs:
        reason = _missing_reason(j, "p2p", *_partial(j, "p2p"))
        if reason is not None:
            checks.append(_incomplete("p2p", "GB/s", reason))
    if inputs.stuck:  # a wedged driver: whatever was measured, the next job will block behind these
        checks.append(_stuck_check(j, inputs.stuck))
    fig_ar = allreduce_figure(inputs.allreduce) if inputs.allreduce is not None else None
    if fig_ar is not None:
        value = _best(fig_ar.value, j.remeasured.get((None, "allreduce"), ()))
        band = _allreduce_band(j, fig_ar)
        base = _baseline_value(base_node, "allreduce")
        checks.append(_figure_check(j, fig_ar, key=None, value=value, band=band, peers=None, base=base))
    else:
        reason = _missing_reason(j, "allreduce", *_partial(j, "allreduce"))
        if reason is not None:
            checks.append(_incomplete("allreduce", "GB/s", reason))
    return checks


def _absent_notes(j: _Judge, figures: dict[str, dict[int, list[Figure]]]) -> list[str]:
    """One note per measurement absent (not failed, not cut short: simply not made or not saved), and per
    document that has nothing for some of the GPUs judged."""
    notes: list[str] = []
    for step in MEASURED_STEPS:
        if step in j.inputs.failed or step in j.inputs.cut_short:
            continue
        if getattr(j.inputs, step) is None:
            notes.append(f"no {step} measurement")
        elif step in figures and not _partial(j, step)[0]:
            unmeasured = [str(i) for i in j.units if i not in figures[step]]
            if unmeasured and not (step == "hostlink" and j.cpu):
                who = "rank" if j.cpu else "GPU"
                notes.append(f"no {step} figure for {who} {', '.join(unmeasured)}: not judged on {step}")
    return notes


def judge(
    inputs: VerifyInputs,
    *,
    site: SiteConfig | None = None,
    baseline: VerifyDocument | None = None,
    gpus: Sequence[int] | None = None,
    remeasured: Mapping[tuple[int | None, str], list[float]] | None = None,
) -> Judged:
    """Every figure of ``inputs`` judged (see the module's docstring); ``gpus`` restricts the GPUs judged and
    listed, ``remeasured`` hands back earlier figures of checks measured again (the best of all is judged)."""
    notes: list[str] = list(inputs.notes)  # what the reader of saved documents noticed comes first
    units = _units(inputs, gpus, notes)
    j = _Judge(inputs=inputs, site=site, baseline=baseline, remeasured=remeasured or {}, units=units, notes=notes)
    if inputs.cpu and any(f.id in DRIVER_IDS and f.severity is Severity.FAIL for f in inputs.findings):
        notes.append("CPU run: the doctor's no-GPU and driver findings are expected here and not counted")
    figures = _step_figures(j)
    dcgm = None
    if inputs.dcgm is not None:
        known = {g.index for g in inputs.snapshot.gpus}
        dcgm = judge_dcgm(inputs.dcgm, gpus=units, known=known, file=inputs.dcgm_file, cpu=inputs.cpu)
    if dcgm is not None:
        j.shorts.update(dcgm.shorts)
    values: dict[tuple[int, str], float | None] = {
        (key, fig.check_id): _best(fig.value, j.remeasured.get((key, fig.check_id), ()))
        for per_gpu in figures.values()
        for key, figs in per_gpu.items()
        for fig in figs
    }
    judged_gpus: list[VerifyGpu] = []
    for unit in units.values():
        checks = _gpu_checks(j, unit, figures, values) + (dcgm.gpus.get(unit.index, []) if dcgm else [])
        judged_gpus.append(
            VerifyGpu(
                index=unit.index,
                name=unit.name,
                uuid=unit.uuid,
                pci_bus_id=unit.pci_bus_id,
                verdict=worst(c.verdict for c in checks),
                checks=checks,
            )
        )
    node = _node_checks(j, set(units)) + (dcgm.node if dcgm else [])
    notes += _absent_notes(j, figures) + (dcgm.notes if dcgm else [])
    notes += [] if inputs.cpu else slot_notes((g.index, g) for g in inputs.snapshot.gpus if g.index in units)
    verdict = worst([*(g.verdict for g in judged_gpus), *(c.verdict for c in node)])
    reason = drain_reason(verdict, _drain_items(j, judged_gpus, node))
    return Judged(
        gpus=judged_gpus, node=node, verdict=verdict, drain_reason=reason, notes=notes, near_floor=j.near_floor
    )


# --- the Slurm line -----------------------------------------------------------------------------------------


def _drain_items(j: _Judge, gpus: Sequence[VerifyGpu], node: Sequence[VerifyCheck]) -> list[str]:
    """ "gpu3 matmul_bf16 571<712 TFLOPS", failures first, then incomplete checks, GPUs before the node."""
    who = "rank" if j.cpu else "gpu"
    labelled = [(f"{who}{g.index} ", c) for g in gpus for c in g.checks] + [("", c) for c in node]
    items: list[str] = []
    for wanted in ("fail", "incomplete"):
        for label, check in labelled:
            if check.verdict == wanted:
                short = j.shorts.get(id(check), check.verdict)
                items.append(f"{label}{check.id} {short}".strip())
    return items


def verify_document(
    judged: Judged,
    *,
    level: Level | None,
    source: Literal["live", "cpu", "files"],
    elapsed_s: float,
    budget_s: float | None,
    steps: list[VerifyStep],
    host: str | None,
    baseline_name: str | None,
    site_name: str | None,
    dcgm: DcgmSummary | None = None,
) -> VerifyDocument:
    """The ``rigcheck.verify/1`` document of a judged run (a step listed as skipped, not applicable or left out
    says its own reason: the judge's "no <step> measurement" note is left out for it)."""
    said = {f"no {s.name} measurement" for s in steps if s.status in ("skipped", "not_applicable", "left_out")}
    node, verdict, drain = list(judged.node), judged.verdict, judged.drain_reason
    unfinished = [s for s in steps if step_verdict(s.status) != "pass"]
    if unfinished:
        # A run that did not finish (budget, Ctrl-C, a step that failed) or left out a stage of its level that
        # applies (a skipped step) is not a pass on what it did measure (checks/verdicts.py STEP_RULES).
        alike: dict[tuple[str, str], list[str]] = {}  # steps that ended alike for the same reason, named once
        for s in unfinished:
            alike.setdefault((s.status.replace("_", " "), s.reason or "no reason given"), []).append(s.name)
        text = "; ".join(f"{', '.join(names)} {status}: {why}" for (status, why), names in alike.items())
        node.append(unfinished_check(f"stages not run, or not to their end: {text}"))
        if verdict in ("pass", "unjudged"):
            verdict = node_verdict([verdict], [s.status for s in unfinished])
            drain = drain_reason(verdict, [f"{s.name} {s.status.replace('_', ' ')}" for s in unfinished])
    return VerifyDocument(
        verdict=verdict,
        level=level,
        source=source,
        elapsed_s=elapsed_s,
        budget_s=budget_s,
        host=host,
        gpus=judged.gpus,
        node=node,
        steps=steps,
        baseline=baseline_name,
        site_config=site_name,
        drain_reason=drain,
        notes=[n for n in judged.notes if n not in said],
        dcgm=dcgm,
    )


def unfinished_check(text: str) -> VerifyCheck:
    """The node check (id "run", verdict incomplete) that says what of the run did not happen."""
    return _incomplete("run", None, text)

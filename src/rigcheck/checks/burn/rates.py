"""Counters bracketed around load, judged as rates, and each GPU against its identical peers (issue 28).

Pure, as checks/: :func:`own_figures` turns one GPU's running figures (tally.py, counters.py) into its rates and
HBM gradient; :func:`judge_peers` compares every GPU with its peers and adds the findings (``burn.*``) to each
analysis. A finding of severity fail makes the burn exit 1 (problems.py); the rules, with their sources:

- **Peers**: the other GPUs of the trace with the same model name that were loaded. A GPU whose model the trace
  does not name, or with no such peer, is compared with none (its peer figures say why in ``missing``).
- ``burn.ecc-corrected-rate`` (fail): corrected ECC errors per second of load (the volatile counter's rise over
  the loaded samples, counters.py) >= ECC_CORRECTED_FLOOR_PER_S and >= ECC_PEER_FACTOR x its peers' median rate
  (peers at 0, or none: the floor alone). A rate at the floor that its peers share is a warn: the node, not the
  GPU.
- ``burn.ecc-uncorrected-new`` (fail): any uncorrected ECC error counted while loaded, as doctor's
  health.ecc-uncorrected-volatile.
- ``burn.nvlink-crc-rate`` (fail): a link's CRC errors >= NVLINK_CRC_FAIL_PER_S a second of load (DCGM).
- ``burn.nvlink-replay-recovery`` (fail): any NVLink replay or recovery error while loaded (DCGM).
- ``burn.pcie-replay-rate`` (warn): PCIe replays > PCIE_REPLAY_WARN_PER_MIN a minute of load (DCGM).
- ``burn.clock-below-peers``: the median SM clock while loaded >= CLOCK_TOLERANCE_PERCENT under its peers'
  median, named with the cause its clock-event reasons show beyond its peers'. Warn; fail at
  CLOCK_FAIL_PERCENT, or when its throughput (`rigcheck burn` only) is also >= THROUGHPUT_TOLERANCE_PERCENT
  under its peers'.
- ``burn.power-below-peers`` (warn): the median power while loaded >= POWER_TOLERANCE_PERCENT under its peers'.
- ``burn.hbm-gradient`` (warn): memory minus GPU temperature while loaded (median) >= HBM_GRADIENT_LIMIT_C, or
  >= HBM_PEER_EXCESS_C over its peers' median gradient.

A figure the trace cannot give is None with its reason in ``missing`` ("not in the trace", ...): no verdict.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence

from rigcheck.checks.burn.counters import LINK_SEPARATOR, CounterTrack
from rigcheck.checks.burn.tally import GpuTally
from rigcheck.model.burn import GpuBurnAnalysis
from rigcheck.model.finding import Finding, Severity, gpu_subject
from rigcheck.model.telemetry import TraceGpu, counter_median
from rigcheck.units import figure, fmt, plural

# Corrected ECC under load. DCGM#313 (https://github.com/NVIDIA/DCGM/issues/313) and NVSentinel#1748
# (https://github.com/NVIDIA/NVSentinel/issues/1748): one GB200 of four corrected ~17,700 errors a second under
# load, 0 when idle, while its three peers corrected none, and DCGM's health watch called it Healthy. The floor and
# the factor are rigcheck's: one a second is 3,600 an hour, where a sound HBM stack corrects none or a handful a
# day; ten times the peers' median keeps a rate the node's GPUs share (a node-wide cause) from naming one of them.
ECC_CORRECTED_FLOOR_PER_S = 1.0
ECC_PEER_FACTOR = 10.0
ECC_SOURCE = (
    "DCGM#313 https://github.com/NVIDIA/DCGM/issues/313 and NVSentinel#1748 "
    "https://github.com/NVIDIA/NVSentinel/issues/1748: one GB200 of four corrected ~17,700 ECC errors/s under load "
    "while its peers corrected none, and DCGM reported it Healthy; the 1/s floor and 10x the peers' median are "
    "rigcheck's"
)
UNCORRECTED_SOURCE = "doctor's health.ecc-uncorrected-volatile: any uncorrected ECC error since the driver loaded fails"
# DCGM common/DcgmGPUHardwareLimits.h: DCGM_LIMIT_MAX_NVLINK_CRC_ERROR 100.0 ("CRC errors only matter at rates of
# 100+ per second"), DCGM_LIMIT_MAX_NVLINK_ERROR 1, DCGM_LIMIT_MAX_PCIREPLAY_RATE 8 (per minute, "the maximum
# recommended by RM"); modules/health/DcgmHealthWatch.cpp fails a link at >= 100 CRC errors/s and on any replay or
# recovery error ("failures, not warnings"), and warns above 8 PCIe replays in its minute.
NVLINK_CRC_FAIL_PER_S = 100.0
PCIE_REPLAY_WARN_PER_MIN = 8.0
DCGM_LIMITS_SOURCE = (
    "DCGM common/DcgmGPUHardwareLimits.h (https://github.com/NVIDIA/DCGM/blob/master/common/DcgmGPUHardwareLimits.h)"
    " and modules/health/DcgmHealthWatch.cpp"
)
# Clocks and power against the peers: DCGM 4.5's diagnostic judges each GPU's clocks and board power against the
# other GPUs under the same load (clocks_tolerance_pcnt, power_tolerance_pcnt; "cross-GPU outliers in throughput,
# clocks, or board power": https://docs.nvidia.com/datacenter/dcgm/latest/reference/diagnostics/plugins/diagnostic.html).
# The 5% tolerance is rigcheck's. A compute-bound matmul runs at the pace of its SM clock, so the clock deficit is
# the throughput lost; the fail at 10% (twice the tolerance) is rigcheck's: a data-parallel job waits for its
# slowest GPU every step, so one GPU 10% slow costs the whole job 10%, and at 5-10% a warn names it with its cause.
CLOCK_TOLERANCE_PERCENT = 5.0
CLOCK_FAIL_PERCENT = 10.0
THROUGHPUT_TOLERANCE_PERCENT = 5.0
POWER_TOLERANCE_PERCENT = 5.0
PEER_SOURCE = (
    "DCGM 4.5 diagnostic: clocks and board power against the other GPUs under load (clocks_tolerance_pcnt, "
    "power_tolerance_pcnt), https://docs.nvidia.com/datacenter/dcgm/latest/reference/diagnostics/plugins/"
    "diagnostic.html; the 5% tolerance and the 10% fail are rigcheck's"
)
# A cause is a clock-event reason held for this share of the loaded time more than its peers held it (the 10% that
# fails a burn on software thermal slowdown, rigcheck.checks.doctor.thermal).
CAUSE_SHARE = 0.1
# HBM minus core. HBM stacks sit beside the die under one cold plate: on rigcheck's H200 capture at full load the
# memory ran 12 C under the core (63 C core, 51 C HBM, tests/fixtures/traces/dmon-h200-pucv-DT-burn.txt). Memory
# 10 C or more over the core, or 10 C more over it than on identical peers, points at the memory's side of the
# cooling (its thermal interface, the plate's mount): rigcheck's limits, a warn (the memory's own slowdown shows
# as thermal slowdown, which fails on its own).
HBM_GRADIENT_LIMIT_C = 10.0
HBM_PEER_EXCESS_C = 10.0
HBM_SOURCE = (
    "rigcheck: HBM and die share one cold plate; rigcheck's H200 capture ran its memory 12 C under the core at full "
    "load; limits 10 C over the core, or 10 C over the peers' gradient"
)

# Why a figure of these rules is None (a GpuBurnAnalysis's `missing`).
NOT_IN_TRACE = "not in the trace"
NEVER_LOADED = "the GPU was never loaded"
NOT_WHILE_LOADED = "no reading while the GPU was loaded"
ONE_READING = "fewer than two readings while the GPU was loaded"
NO_GRADIENT = "memory and GPU temperature never read together while the GPU was loaded"
NO_MODEL = "the GPU model is not in the trace"
NO_PEER = "no other loaded GPU of the same model in the trace"
PEERS_LACK = "no peer read it while loaded"

PEER_FIGURES = ("sm_clock_vs_peers_percent", "power_vs_peers_percent")
PEER_IDS = frozenset(
    {"burn.ecc-corrected-rate", "burn.clock-below-peers", "burn.power-below-peers", "burn.hbm-gradient"}
)
# The clock-event reasons that name a cause, in the words of the finding.
CAUSES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("thermal", ("sw_thermal_slowdown", "hw_thermal_slowdown")),
    ("power cap", ("sw_power_cap",)),
    ("power brake", ("hw_power_brake_slowdown",)),
    ("hardware slowdown", ("hw_slowdown",)),
    ("sync boost", ("sync_boost",)),
)

ECC_ADVICE = (
    "this GPU's memory corrects errors at a rate its peers do not, under load: drain it, read "
    "`nvidia-smi -q -d ECC,ROW_REMAPPER` (pending remaps, remap failures), reset it and run NVIDIA's field "
    "diagnostic (`dcgmi diag -r 3`); if the rate returns under load, have the GPU replaced (DCGM's health watch may "
    "still call it healthy)"
)
UNCORRECTED_ADVICE = (
    "a job on this GPU may have read corrupt memory: drain it, reset the GPU (pending row remaps apply), re-run "
    "`rigcheck doctor`, and run NVIDIA's field diagnostic (`dcgmi diag -r 3`) if errors recur"
)
NVLINK_ADVICE = (
    "reseat or replace what the link runs through (the GPU's baseboard connectors, the NVSwitch tray, its cables), "
    "clear the counters (`nvidia-smi nvlink -ec`) and burn again; `nvidia-smi nvlink -e` shows each link's counts"
)
PCIE_ADVICE = (
    "replays are retransmitted packets on the PCIe link: reseat the card (and its riser), check the slot's "
    "generation setting in the BIOS, and look for AER lines in the kernel log (`sudo dmesg | grep -i aer`)"
)
COOLING_CAUSE_ADVICE = (
    "compare its cooling with its peers': airflow or coolant flow to this GPU, the fan or pump, the heatsink's "
    "contact; at equal load identical GPUs run at the same clock"
)
HBM_ADVICE = (
    "the memory runs hot against the core: check the cold plate or heatsink contact over the memory stacks "
    "(thermal interface, mounting pressure) and the airflow or coolant over that side of the GPU"
)


def own_figures(result: GpuBurnAnalysis, st: GpuTally) -> None:
    """One GPU's counter rates and HBM gradient from its running figures, and the findings of the rules that need
    no peer; each figure left None gets its reason in ``missing``."""
    track = st.counters
    loaded = st.loaded > 0
    result.ecc_corrected_per_s = _rate(result, track, "ecc_corrected_volatile", "ecc_corrected_per_s", loaded)
    result.pcie_replays_per_min = _rate(result, track, "pcie_replays", "pcie_replays_per_min", loaded, per=60.0)
    result.ecc_uncorrected_new = _rise(result, track, ["ecc_uncorrected_volatile"], "ecc_uncorrected_new", loaded)
    crc_links = _links(track, "nvlink_crc_errors")
    rates = {link: track.rise[key] / track.seconds[key] for link, key in crc_links.items() if track.seconds.get(key)}
    if rates:
        worst = max(rates, key=lambda link: (rates[link], -link))
        result.nvlink_crc_per_s_max = round(rates[worst], 3)
    else:
        _why(result, "nvlink_crc_per_s_max", track, list(crc_links.values()), loaded)
        worst = None
    replay = _links(track, "nvlink_replay_errors")
    recovery = _links(track, "nvlink_recovery_errors")
    result.nvlink_replay_new = _rise(result, track, list(replay.values()), "nvlink_replay_new", loaded)
    result.nvlink_recovery_new = _rise(result, track, list(recovery.values()), "nvlink_recovery_new", loaded)
    gradient = counter_median(st.gradients)
    if gradient is not None:
        result.hbm_gradient_c = round(gradient, 1)
    else:
        result.missing["hbm_gradient_c"] = (
            NOT_IN_TRACE if not st.any["temp_memory"] else NEVER_LOADED if not loaded else NO_GRADIENT
        )
    findings = result.findings = [f for f in result.findings if f.id in PEER_IDS]
    index = result.index
    new = result.ecc_uncorrected_new
    if new:
        findings.append(
            _finding(
                index,
                "burn.ecc-uncorrected-new",
                Severity.FAIL,
                f"{plural(new, 'uncorrected ECC error')} counted while loaded",
                measured=str(new),
                expected="0",
                advice=UNCORRECTED_ADVICE,
                source=UNCORRECTED_SOURCE,
            )
        )
    crc = result.nvlink_crc_per_s_max
    if crc is not None and worst is not None and crc >= NVLINK_CRC_FAIL_PER_S:
        findings.append(
            _finding(
                index,
                "burn.nvlink-crc-rate",
                Severity.FAIL,
                f"NVLink CRC errors at {figure(crc)}/s on link {worst} under load "
                f"(fails at {fmt(NVLINK_CRC_FAIL_PER_S)}/s a link)",
                measured=f"{figure(crc)}/s",
                expected=f"< {fmt(NVLINK_CRC_FAIL_PER_S)}/s",
                advice=NVLINK_ADVICE,
                source=DCGM_LIMITS_SOURCE,
            )
        )
    links = sorted({link for counts in (replay, recovery) for link, key in counts.items() if track.rise[key]})
    if result.nvlink_replay_new or result.nvlink_recovery_new:
        counted = [
            plural(n, f"{word} error")
            for n, word in ((result.nvlink_replay_new, "replay"), (result.nvlink_recovery_new, "recovery"))
            if n
        ]
        findings.append(
            _finding(
                index,
                "burn.nvlink-replay-recovery",
                Severity.FAIL,
                f"NVLink {' and '.join(counted)} while loaded, on {plural(len(links), 'link')} "
                f"{', '.join(map(str, links))}",
                measured=", ".join(counted),
                expected="none",
                advice=NVLINK_ADVICE,
                source=DCGM_LIMITS_SOURCE,
            )
        )
    replays = result.pcie_replays_per_min
    if replays is not None and replays > PCIE_REPLAY_WARN_PER_MIN:
        findings.append(
            _finding(
                index,
                "burn.pcie-replay-rate",
                Severity.WARN,
                f"PCIe replays at {figure(replays)} a minute under load (DCGM warns above "
                f"{fmt(PCIE_REPLAY_WARN_PER_MIN)} a minute)",
                measured=f"{figure(replays)}/min",
                expected=f"<= {fmt(PCIE_REPLAY_WARN_PER_MIN)}/min",
                advice=PCIE_ADVICE,
                source=DCGM_LIMITS_SOURCE,
            )
        )
    _order(result)


def judge_peers(analyses: Sequence[GpuBurnAnalysis], gpus: Mapping[int, TraceGpu]) -> None:
    """Each GPU against the other loaded GPUs of its model: the peer figures, their reasons where None, and the
    findings of the peer rules (those of an earlier call replaced: `rigcheck burn` calls it again once its
    throughput is known)."""
    by_index = {a.index: a for a in analyses}
    names = {a.index: _model(gpus.get(a.index)) for a in analyses}
    for a in analyses:
        a.findings = [f for f in a.findings if f.id not in PEER_IDS]
        for key in PEER_FIGURES:
            setattr(a, key, None)
            a.missing.pop(key, None)
        name = names[a.index]
        a.peers = (
            sorted(i for i, other in by_index.items() if i != a.index and names[i] == name and other.loaded_s > 0)
            if name is not None and a.loaded_s > 0
            else []
        )
        peers = [by_index[i] for i in a.peers]
        why = NEVER_LOADED if a.loaded_s <= 0 else NO_MODEL if name is None else NO_PEER if not peers else None
        _clock(a, peers, name, why)
        _power(a, peers, name, why)
        _ecc(a, peers, name)
        _hbm(a, peers)
        _order(a)
        order = {field: k for k, field in enumerate(type(a).model_fields)}
        a.missing = dict(sorted(a.missing.items(), key=lambda item: order.get(item[0], len(order))))


# --- the peer rules --------------------------------------------------------------------------------


def _vs_peers(
    a: GpuBurnAnalysis, peers: list[GpuBurnAnalysis], key: str, own: str, why: str | None
) -> tuple[float, float] | None:
    """This GPU's figure ``own`` against its peers' median, in percent (into ``key``), and that median; None (with
    the reason in ``missing``) where there is no comparison."""
    value = getattr(a, own)
    values = [getattr(p, own) for p in peers if getattr(p, own) is not None]
    if why is None and value is None:
        why = a.missing.get(own, NOT_IN_TRACE)
    if why is None and not values:
        why = PEERS_LACK
    median = statistics.median(values) if values else 0.0
    if why is None and median <= 0:
        why = PEERS_LACK
    if why is not None:
        a.missing[key] = why
        return None
    percent = round((value - median) / median * 100, 1)
    setattr(a, key, percent)
    return percent, median


def _peer_words(peers: list[GpuBurnAnalysis], name: str | None) -> str:
    return f"{plural(len(peers), 'identical peer')} ({name}: GPU {', '.join(str(p.index) for p in peers)})"


def _clock(a: GpuBurnAnalysis, peers: list[GpuBurnAnalysis], name: str | None, why: str | None) -> None:
    found = _vs_peers(a, peers, "sm_clock_vs_peers_percent", "sm_clock_mhz_median_loaded", why)
    if found is None or found[0] > -CLOCK_TOLERANCE_PERCENT:
        return
    percent, median = found
    deficit = -percent
    slower = _throughput_deficit(a, peers)
    fails = deficit >= CLOCK_FAIL_PERCENT or (slower is not None and slower >= THROUGHPUT_TOLERANCE_PERCENT)
    cause, cause_advice = _cause(a, peers)
    lost = f"; its throughput {fmt(slower, '%', 1)} under theirs" if slower is not None and slower > 0 else ""
    a.findings.append(
        _finding(
            a.index,
            "burn.clock-below-peers",
            Severity.FAIL if fails else Severity.WARN,
            f"SM clock {fmt(a.sm_clock_mhz_median_loaded or 0.0, 'MHz')} under load, {fmt(deficit, '%', 1)} under "
            f"the {fmt(median, 'MHz')} median of its {_peer_words(peers, name)}{lost}: {cause}",
            measured=f"{fmt(percent, '%', 1)}",
            expected=f"within {fmt(CLOCK_TOLERANCE_PERCENT, '%')} of its peers (fails at {fmt(CLOCK_FAIL_PERCENT, '%')}"
            f", or {fmt(THROUGHPUT_TOLERANCE_PERCENT, '%')} with its throughput)",
            advice=cause_advice,
            source=PEER_SOURCE,
        )
    )


def _throughput_deficit(a: GpuBurnAnalysis, peers: list[GpuBurnAnalysis]) -> float | None:
    """How far this GPU's sustained TFLOPS (`rigcheck burn`) is under its peers' median, percent; None without."""
    values = [p.tflops_sustained for p in peers if p.tflops_sustained is not None]
    if a.tflops_sustained is None or not values:
        return None
    median = statistics.median(values)
    return round((median - a.tflops_sustained) / median * 100, 1) if median > 0 else None


def _share(a: GpuBurnAnalysis, names: tuple[str, ...]) -> float:
    shares = a.reasons_time_fraction
    if names == ("hw_slowdown",):  # bare: NVML raises hw_slowdown with the power brake and hw thermal slowdown
        bare = shares.get("hw_slowdown", 0.0) - shares.get("hw_power_brake_slowdown", 0.0)
        return max(0.0, bare - shares.get("hw_thermal_slowdown", 0.0))
    return max(shares.get(name, 0.0) for name in names)


def _cause(a: GpuBurnAnalysis, peers: list[GpuBurnAnalysis]) -> tuple[str, str]:
    """What held this GPU's clocks down and not its peers' (by its clock-event reasons), and the advice for it."""
    if not a.reasons_time_fraction:
        return "the cause is not in the trace (no clock-event reasons)", COOLING_CAUSE_ADVICE
    named: list[str] = []
    held: list[str] = []
    for word, reasons in CAUSES:
        share = _share(a, reasons)
        if share < CAUSE_SHARE:
            continue
        theirs = statistics.median([_share(p, reasons) for p in peers]) if peers else 0.0
        top = max(reasons, key=lambda r: a.reasons_time_fraction.get(r, 0.0))
        text = f"{word} ({top} {share:.0%} of the loaded time, its peers {theirs:.0%})"
        (named if share - theirs >= CAUSE_SHARE else held).append(text)
    if named:
        first = named[0].split(" (")[0]
        advice = {
            "thermal": COOLING_CAUSE_ADVICE,
            "power cap": "its power limit or draw holds it back more than its peers: compare "
            "`nvidia-smi -q -d POWER` with theirs (a lower limit is raised with `nvidia-smi -pl`)",
            "power brake": "the hardware power brake fired on it: check its power cables and the PSU (one independent "
            "cable per socket)",
            "hardware slowdown": "hardware slowdown without a thermal or power-brake sub-reason: check its power "
            "cables, the PSU and its cooling",
            "sync boost": "a sync-boost group holds it to the slowest GPU of the group: find that GPU's reason",
        }[first]
        return "; ".join(named), advice
    if held:
        return "no reason beyond its peers' (" + "; ".join(held) + ")", COOLING_CAUSE_ADVICE
    return "no clock-event reason held (a lower application or locked clock?)", (
        "compare its clock settings with its peers' (`nvidia-smi -q -d CLOCK`: application clocks, locked clocks)"
    )


def _power(a: GpuBurnAnalysis, peers: list[GpuBurnAnalysis], name: str | None, why: str | None) -> None:
    found = _vs_peers(a, peers, "power_vs_peers_percent", "power_draw_w_median_loaded", why)
    if found is None or found[0] > -POWER_TOLERANCE_PERCENT:
        return
    percent, median = found
    limits = [p.power_enforced_limit_w for p in peers if p.power_enforced_limit_w is not None]
    limit = a.power_enforced_limit_w
    their_limit = statistics.median(limits) if limits else None
    if limit is not None and their_limit is not None and limit < their_limit * (1 - POWER_TOLERANCE_PERCENT / 100):
        explained = f": its power limit {fmt(limit, 'W')} is under theirs ({fmt(their_limit, 'W')})"
        advice = "set its limit to its peers' (`sudo nvidia-smi -i INDEX -pl WATTS`), provided the PSU has the watts"
        advice = advice.replace("INDEX", str(a.index)).replace("WATTS", fmt(their_limit))
    else:
        clock = a.sm_clock_vs_peers_percent
        side = "under" if clock is not None and clock < 0 else "over"
        with_clock = f", its SM clock {fmt(abs(clock), '%', 1)} {side} theirs" if clock else ""
        explained = f" at the same load{with_clock}"
        advice = "a GPU drawing less than its peers at the same load is held back (cooling, its power delivery): " + (
            "see its clock-event reasons and its clock against its peers"
        )
    a.findings.append(
        _finding(
            a.index,
            "burn.power-below-peers",
            Severity.WARN,
            f"power {fmt(a.power_draw_w_median_loaded or 0.0, 'W')} under load, {fmt(-percent, '%', 1)} under the "
            f"{fmt(median, 'W')} median of its {_peer_words(peers, name)}{explained}",
            measured=f"{fmt(percent, '%', 1)}",
            expected=f"within {fmt(POWER_TOLERANCE_PERCENT, '%')} of its peers",
            advice=advice,
            source=PEER_SOURCE,
        )
    )


def _ecc(a: GpuBurnAnalysis, peers: list[GpuBurnAnalysis], name: str | None) -> None:
    rate = a.ecc_corrected_per_s
    if rate is None or rate < ECC_CORRECTED_FLOOR_PER_S:
        return
    rates = [p.ecc_corrected_per_s for p in peers if p.ecc_corrected_per_s is not None]
    median = statistics.median(rates) if rates else None
    alone = median is None or median <= 0 or rate >= ECC_PEER_FACTOR * median
    if median is None:
        against = "no identical peer read the counter to compare with"
    else:
        against = f"the median of its {_peer_words([p for p in peers if p.ecc_corrected_per_s is not None], name)} "
        against += f"is {figure(median)}/s"
    rule = f"fails at >= {fmt(ECC_CORRECTED_FLOOR_PER_S)}/s and >= {fmt(ECC_PEER_FACTOR)}x the peers' median"
    if alone:
        message = f"corrected ECC errors at {figure(rate)}/s under load, where {against} ({rule})"
        advice = ECC_ADVICE
    else:
        message = (
            f"corrected ECC errors at {figure(rate)}/s under load, as its peers ({against}): a rate the node's "
            "GPUs share points at the node, not this GPU"
        )
        advice = "compare with other nodes: corrected errors on every GPU of a node point at its environment or driver"
    a.findings.append(
        _finding(
            a.index,
            "burn.ecc-corrected-rate",
            Severity.FAIL if alone else Severity.WARN,
            message,
            measured=f"{figure(rate)}/s",
            expected=f"< {fmt(ECC_CORRECTED_FLOOR_PER_S)}/s, or < {fmt(ECC_PEER_FACTOR)}x the peers' median",
            advice=advice,
            source=ECC_SOURCE,
        )
    )


def _hbm(a: GpuBurnAnalysis, peers: list[GpuBurnAnalysis]) -> None:
    gradient = a.hbm_gradient_c
    if gradient is None:
        return
    theirs = [p.hbm_gradient_c for p in peers if p.hbm_gradient_c is not None]
    median = statistics.median(theirs) if theirs else None
    over_peers = median is not None and gradient - median >= HBM_PEER_EXCESS_C
    if gradient < HBM_GRADIENT_LIMIT_C and not over_peers:
        return
    side = "over" if gradient >= 0 else "under"
    text = f"memory {fmt(abs(gradient), 'C', 1)} {side} the GPU's temperature under load (median)"
    if median is not None:
        text += f"; its peers' memory runs {fmt(median, 'C', 1)} against their core"
    a.findings.append(
        _finding(
            a.index,
            "burn.hbm-gradient",
            Severity.WARN,
            text,
            measured=fmt(gradient, "C", 1),
            expected=f"< {fmt(HBM_GRADIENT_LIMIT_C, 'C')} over the core, and < {fmt(HBM_PEER_EXCESS_C, 'C')} over "
            "its peers' gradient",
            advice=HBM_ADVICE,
            source=HBM_SOURCE,
        )
    )


# --- helpers ---------------------------------------------------------------------------------------


def _model(gpu: TraceGpu | None) -> str | None:
    name = gpu.name.strip() if gpu is not None and gpu.name else ""
    return name or None


def _links(track: CounterTrack, name: str) -> dict[int, str]:
    """The links a per-link counter was read on: link -> its key."""
    prefix = name + LINK_SEPARATOR
    return {int(key[len(prefix) :]): key for key in sorted(track.seen) if key.startswith(prefix)}


def _why(result: GpuBurnAnalysis, field: str, track: CounterTrack, keys: list[str], loaded: bool) -> None:
    """The reason a counter figure is None."""
    if not keys:
        reason = NOT_IN_TRACE
    elif not loaded:
        reason = NEVER_LOADED
    elif not any(track.loaded_reads[key] for key in keys):
        reason = NOT_WHILE_LOADED
    else:
        reason = ONE_READING
    result.missing[field] = reason


def _rate(
    result: GpuBurnAnalysis, track: CounterTrack, key: str, field: str, loaded: bool, *, per: float = 1.0
) -> float | None:
    seconds = track.seconds.get(key)
    if seconds:
        return round(track.rise[key] / seconds * per, 3)
    _why(result, field, track, [key] if key in track.seen else [], loaded)
    return None


def _rise(result: GpuBurnAnalysis, track: CounterTrack, keys: list[str], field: str, loaded: bool) -> int | None:
    timed = [key for key in keys if key in track.seen and track.seconds.get(key)]
    if timed:
        return sum(track.rise[key] for key in timed)
    _why(result, field, track, [key for key in keys if key in track.seen], loaded)
    return None


def _finding(
    index: int,
    finding_id: str,
    severity: Severity,
    message: str,
    *,
    measured: str,
    expected: str,
    advice: str,
    source: str,
) -> Finding:
    return Finding(
        id=finding_id,
        severity=severity,
        category="burn",
        subject=gpu_subject(index),
        gpu=index,
        message=message,
        measured=measured,
        expected=expected,
        advice=advice,
        source=source,
    )


def _order(result: GpuBurnAnalysis) -> None:
    """Findings worst first, then by id (the same order whichever rule ran last)."""
    result.findings.sort(key=lambda f: (-f.severity.rank, f.id))

"""PCIe: did each GPU's link train at the speed and width the slot allows?

What "max" means, per source: NVML's nvmlDeviceGetMaxPcieLinkGeneration/Width and nvidia-smi's -q "Max" (query
field pcie.link.gen.max / pcie.link.width.max) are the link's max with this device in this system, so the
slot's limit is in them; nvmlDeviceGetGpuMaxPcieLinkGeneration, -q "Device Max" (pcie.link.gen.gpumax) is the
card's own, "Host Max" the slot's. The snapshot keeps the first as pcie_gen_max / pcie_width_max and the card's
as pcie_gen_gpu_max. (`nvidia-smi --help-query-gpu`: pcie.link.gen.max / width.max are "the maximum ... possible
with this GPU and system configuration"; the current ones "may be reduced when the GPU is not in use".)

- A width below the max fails: the width is trained once and does not idle down, so x8 where the slot allows
  x16 halves the host bandwidth for good (a slot wired or shared for fewer lanes, a riser, a badly seated card).
  Where the snapshot holds the PCIe path (live, sysfs), the port above the GPU decides what the slot allows: a
  board wired x8/x8 is x8 by design (pcie.slot-limits-width, information), not a link trained down.
- A generation below the max is normal power saving at idle (said in pcie.ok); it fails only under load
  (rigcheck.checks.doctor.thermal.is_loaded: the link should be back at its max), warns on a GPU busy but not loaded,
  and is information when whether the GPU is busy is unknown.

Finding ids: pcie.ok, pcie.link-unavailable, pcie.width-below-max, pcie.gen-below-max, pcie.slot-limits-gen,
pcie.slot-limits-width, pcie.replays.
"""

from __future__ import annotations

from rigcheck.checks.common import gpu_finding, has_problem, is_idle, missing_text, readable_gpus
from rigcheck.checks.doctor.thermal import is_loaded
from rigcheck.facts.pcie import PCIE_SOURCE, gpu_pcie_link, normalize_bdf, pcie_bandwidth_gbps
from rigcheck.model import Finding, Gpu, Severity, Snapshot
from rigcheck.units import fmt

FINDING_IDS: tuple[str, ...] = (
    "pcie.ok",
    "pcie.link-unavailable",
    "pcie.width-below-max",
    "pcie.gen-below-max",
    "pcie.slot-limits-gen",
    "pcie.slot-limits-width",
    "pcie.replays",
)


# Replay counter: any replay is a retransmitted TLP (a link-level CRC error); more than 100 since boot points at
# signal integrity. nvml.h nvmlDeviceGetPcieReplayCounter; the 100 cut is rigcheck's (DCGM's default PCIe
# replay health watch also alerts on a rising counter rather than a fixed rate).
REPLAY_WARN = 100

LINK_SOURCE = "nvml.h nvmlDeviceGetCurrPcieLinkGeneration/Width, nvmlDeviceGetMaxPcieLinkGeneration/Width"
# GPUs drop the link to a lower generation at idle and raise it under load (the width stays as trained), so a
# link is costed at its max generation and its current width (facts/pcie.gpu_pcie_link).
IDLE_GEN = "nvidia-smi(1), GPU Link Info: the current generation and width may be reduced while the GPU is not in use"


def _gbps(gen: int | None, width: int | None) -> float | None:
    return pcie_bandwidth_gbps(gen, width) if gen is not None and width is not None else None


def _bw(gen: int | None, width: int | None) -> str:
    if gen is None or width is None:
        return ""
    bw = pcie_bandwidth_gbps(gen, width)
    return f" (~{fmt(bw, 'GB/s', 1)} per direction)" if bw is not None else ""


def slot_width(snapshot: Snapshot, gpu: Gpu) -> int | None:
    """The width the port above the GPU is built for: sysfs max_link_width of the first bridge on its path (the
    root or switch port's Link Capabilities). A board that splits a CPU's x16 into x8/x8 for two cards says x8
    there; the GPU's own max (NVML, nvidia-smi) still says x16. None where the snapshot holds no PCIe path."""
    if gpu.pci_bus_id is None:
        return None
    try:
        want = normalize_bdf(gpu.pci_bus_id)
    except ValueError:
        return None
    for key, hops in snapshot.system.pcie_paths.items():
        try:
            same = normalize_bdf(key) == want
        except ValueError:
            continue
        if same:
            return hops[1].link_width_max if len(hops) > 1 else None
    return None


def check_pcie(snapshot: Snapshot) -> list[Finding]:
    findings: list[Finding] = []
    for gpu in readable_gpus(snapshot):
        findings += _check_gpu(gpu, slot_width(snapshot, gpu))
    return findings


def _check_gpu(gpu: Gpu, port_width: int | None) -> list[Finding]:
    out: list[Finding] = []
    gen, gen_max, gen_gpu = gpu.pcie_gen_current, gpu.pcie_gen_max, gpu.pcie_gen_gpu_max
    width, width_max = gpu.pcie_width_current, gpu.pcie_width_max

    missing = [
        (field, label)
        for field, label, value in (
            ("pcie_gen_current", "current PCIe generation", gen),
            ("pcie_gen_max", "maximum PCIe generation", gen_max),
            ("pcie_width_current", "current PCIe width", width),
            ("pcie_width_max", "maximum PCIe width", width_max),
        )
        if value is None
    ]
    if missing:
        out.append(
            gpu_finding(
                gpu,
                "pcie.link-unavailable",
                Severity.UNKNOWN,
                f"cannot judge the PCIe link: {missing_text(gpu, missing)}",
                measured=missing_text(gpu, missing),
                advice="read it with `nvidia-smi -q -d PCI` (or `sudo lspci -vv` for LnkCap/LnkSta)",
                source=LINK_SOURCE,
            )
        )

    top = gen_max if gen_max is not None else gen
    if width is not None and width_max is not None and port_width is not None and width == port_width < width_max:
        # The port is wired for this width (bifurcation, a x8 slot): the link is as built, the platform limits it.
        out.append(
            gpu_finding(
                gpu,
                "pcie.slot-limits-width",
                Severity.INFO,
                f"the slot is wired for x{port_width} (the card can do x{width_max}): the link trained as the slot "
                f"allows{_bw(top, width)}",
                measured=f"x{width}",
                expected=f"x{port_width} (the port above the GPU, sysfs max_link_width)",
                advice=(
                    "host copies run at half the card's lanes by design: a board that splits x16 into x8/x8 for two "
                    "cards, or a x8 slot; a slot wired x16 (see the board manual's lane map) doubles them"
                ),
                source=f"sysfs max_link_width of the upstream port; {PCIE_SOURCE}",
            )
        )
        width_max = port_width
    if width is not None and width_max is not None and width < width_max:
        now_bw, full_bw = _gbps(top, width), _gbps(top, width_max)
        out.append(
            gpu_finding(
                gpu,
                "pcie.width-below-max",
                Severity.FAIL,
                f"PCIe link trained at x{width} of x{width_max}"
                + (
                    f": ~{fmt(now_bw, 'GB/s', 1)} of ~{fmt(full_bw, 'GB/s', 1)} per direction at Gen{top}"
                    if now_bw is not None and full_bw is not None
                    else ""
                )
                + f"; the slot allows x{width_max}, and a link's width does not idle down",
                measured=f"x{width}",
                expected=f"x{width_max}",
                advice=(
                    "the card sits in a slot wired for fewer lanes, shares lanes with another slot or an M.2 drive, "
                    "or runs through a riser: move it to a full x16 slot (see the board manual's lane map), reseat "
                    "it, or drop the riser; on a two-card consumer board x8/x8 may be all the CPU has"
                ),
                source=f"{LINK_SOURCE} (max: with this device in this system); {PCIE_SOURCE}",
            )
        )

    idle = is_idle(gpu)
    # The idle reason (or P8) wins over a utilization averaged over the last second: the work just stopped.
    loaded = is_loaded(gpu) and not idle
    if gen is not None and gen_max is not None and gen < gen_max and (loaded or not idle):
        if loaded:
            severity = Severity.FAIL
            why = "under load, where the link runs at its max (idle downclocking does not explain it)"
            advice = (
                "a loaded GPU runs its link at full speed: reseat the card, drop risers or extension cables, set the "
                "slot to Gen Auto/its max in the BIOS, and check `pcie.replays` (a link that retrains down after "
                "errors)"
            )
        elif idle is None:
            severity = Severity.INFO
            why = "possibly idle power saving (whether the GPU is busy is not known)"
            advice = (
                "re-check under load: `nvidia-smi -q -d PCI` while training; a link stuck below max then is a problem"
            )
        else:
            severity = Severity.WARN
            why = "while the GPU is busy (not idle, not fully loaded: re-check under load)"
            advice = (
                "a busy GPU should run its link at full speed: reseat the card, drop risers or extension cables, "
                "set the slot to Gen Auto/its max in the BIOS, and check `pcie.replays`"
            )
        out.append(
            gpu_finding(
                gpu,
                "pcie.gen-below-max",
                severity,
                f"PCIe link at Gen{gen}, below its max Gen{gen_max}: {why}",
                measured=f"Gen{gen}{_bw(gen, width)}",
                expected=f"Gen{gen_max}{_bw(gen_max, width)}",
                advice=advice,
                source=f"{LINK_SOURCE}; {PCIE_SOURCE}",
            )
        )

    if gen_max is not None and gen_gpu is not None and gen_max < gen_gpu:
        out.append(
            gpu_finding(
                gpu,
                "pcie.slot-limits-gen",
                Severity.INFO,
                f"the slot or platform limits the link to Gen{gen_max}; the card can do Gen{gen_gpu}",
                measured=f"Gen{gen_max} max",
                expected=f"Gen{gen_gpu} (the card's own max)",
                advice=(
                    "host-to-GPU copies and P2P over PCIe run at the slot's speed; a newer board/CPU (or a BIOS "
                    "setting forcing an older generation) decides this"
                ),
                source=f"nvml.h nvmlDeviceGetGpuMaxPcieLinkGeneration vs nvmlDeviceGetMaxPcieLinkGeneration; "
                f"{PCIE_SOURCE}",
            )
        )

    replays = gpu.pcie_replay_count
    if replays is not None and replays > 0:
        severity = Severity.WARN if replays > REPLAY_WARN else Severity.INFO
        out.append(
            gpu_finding(
                gpu,
                "pcie.replays",
                severity,
                f"{replays} PCIe replays since the driver loaded (retransmitted packets after link errors)",
                measured=str(replays),
                expected=f"0 (warn above {REPLAY_WARN})",
                advice=(
                    "signal integrity: reseat the card, remove risers or extension cables, try another slot; a "
                    "rising count under load costs bandwidth"
                ),
                source=f"nvml.h nvmlDeviceGetPcieReplayCounter; the {REPLAY_WARN} cut is rigcheck's",
            )
        )

    if not has_problem(out) and None not in (gen, gen_max, width, width_max):
        link = gpu_pcie_link(gpu)
        bw = f" (~{fmt(link.gbps, 'GB/s', 1)} per direction)" if link is not None and link.gbps is not None else ""
        downshift = f"; Gen{gen} now: idle power saving (normal), it rises under load" if gen != gen_max else ""
        out.append(
            gpu_finding(
                gpu,
                "pcie.ok",
                Severity.OK,
                f"PCIe Gen{gen_max} x{width} (max Gen{gen_max} x{width_max}){bw}{downshift}"
                + (f", {replays} replays" if replays is not None else ""),
                measured=f"Gen{gen} x{width}",
                expected=f"Gen{gen_max} x{width_max}",
                source=LINK_SOURCE + (f"; {IDLE_GEN}" if downshift else ""),
            )
        )
    return out

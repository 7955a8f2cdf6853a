"""NVLink: are the links of each GPU that should have them up?

What "should" means comes from the GPU catalog (facts/catalog.py):
- SXM modules and superchips (V100/A100/H100 SXM, B200, GB200): the NVLink fabric IS the GPU interconnect, to
  the other GPUs (DGX-1's hybrid cube mesh) or to NVSwitches (HGX); a link down there is a failure;
- cards joined by an NVLink bridge (RTX 3090, A6000, A100 PCIe, ...): a bridged pair with a link down runs at a
  fraction of its NVLink bandwidth (a warning); a bridge-capable card with no active link has no bridge fitted,
  or one not seated (information: many such cards run without one).

Finding ids: nvlink.ok, nvlink.links-down, nvlink.no-bridge, nvlink.state-unknown.
"""

from __future__ import annotations

from rigcheck.checks.common import gpu_finding, host_finding, list_names, readable_gpus
from rigcheck.facts import catalog
from rigcheck.facts.catalog import GpuSpec
from rigcheck.facts.legend import nvlink_count
from rigcheck.model import Finding, Gpu, Severity, Snapshot
from rigcheck.model.links import nvlink_pairs_from_state
from rigcheck.units import fmt

FINDING_IDS: tuple[str, ...] = ("nvlink.ok", "nvlink.links-down", "nvlink.no-bridge", "nvlink.state-unknown")

STATE_SOURCE = "nvml.h nvmlDeviceGetNvLinkState (`nvidia-smi nvlink -s`: a link down prints `<inactive>`)"
FABRIC_SOURCE = (
    "NVIDIA Fabric Manager User Guide (on NVSwitch systems the GPUs' NVLinks are trained only while the fabric "
    "manager runs); NVIDIA Xid catalog: Xid 74 is an NVLink error"
)
FABRIC_ADVICE = (
    "look for NVLink errors (`nvidia-smi nvlink -e`, Xid 74 in the kernel log); on NVSwitch systems (HGX/DGX "
    "A100, H100) the fabric manager must run (`systemctl status nvidia-fabricmanager`) and `nvidia-smi -q` "
    "must show the fabric state Completed; a GPU reset or a reboot trains the links again, and links that stay "
    "down are a GPU or baseboard fault for the vendor"
)
BRIDGE_ADVICE = (
    "power off and reseat the NVLink bridge on both cards (a bridge of the right spacing for the slots); "
    "`nvidia-smi nvlink -e` shows the error counters of the links that are up"
)


def _fabric(spec: GpuSpec | None) -> bool:
    return spec is not None and spec.form_factor in ("sxm", "superchip") and spec.nvlink_links > 0


def _spec(gpu: Gpu) -> GpuSpec | None:
    return catalog.lookup(gpu.name) if gpu.name else None


def _on_nvlink(snapshot: Snapshot) -> set[int]:
    """GPUs that a pair record, the `topo -m` matrix or the link state puts in an NVLink pair."""
    found = {i for pair in snapshot.pair_table().nvlink for i in pair}
    found |= {i for pair in nvlink_pairs_from_state(snapshot.gpus) for i in pair}
    topo = snapshot.topology
    if topo is not None:
        for label, row in zip(topo.labels, topo.matrix, strict=False):
            if label.startswith("GPU") and label[3:].isdigit() and any(nvlink_count(c) for c in row):
                found.add(int(label[3:]))
    return found


def _down(down: list[int], up: list[int]) -> str:
    if not up:
        return "all down" if len(down) > 1 else "down"
    return f"link{'s' if len(down) != 1 else ''} {list_names([str(n) for n in down], limit=8)} down"


def _speed(gpu: Gpu) -> str:
    speeds = sorted({link.speed_gbps for link in gpu.nvlinks or () if link.active and link.speed_gbps is not None})
    if not speeds:
        return ""
    return f" at {' / '.join(fmt(s, 'GB/s', 3) for s in speeds)} each"


def _check_gpu(gpu: Gpu, spec: GpuSpec | None, *, on_nvlink: bool) -> list[Finding]:
    links = gpu.nvlinks or []
    up = [link.link for link in links if link.active is True]
    down = [link.link for link in links if link.active is False]
    if not up and not down:
        return []
    name = f"{gpu.name}: " if gpu.name else ""
    # nvidia-smi lists every link slot of the architecture (18 on Hopper); a card built with fewer (an H100 PCIe
    # has 12) shows the rest as inactive. Counted against the card's own links where the catalog knows them.
    total = len(up) + len(down)
    slots = ""
    if spec is not None and 0 < spec.nvlink_links < total:
        slots = f" (nvidia-smi lists {total} slots; the {spec.name} has {spec.nvlink_links} links)"
        total = spec.nvlink_links
        if len(up) >= total:
            down = []  # every link the card has is up
    counted = f"{len(up)} of {total} NVLinks active"
    if not down:
        unlisted = spec.nvlink_links - len(links) if spec is not None else 0
        return [
            gpu_finding(
                gpu,
                "nvlink.ok",
                Severity.OK,
                f"{counted}{_speed(gpu)}{slots}"
                + (
                    f"; the {spec.name} has {spec.nvlink_links}: the others are not in this input"
                    if spec and unlisted > 0
                    else ""
                ),
                measured=counted,
                expected="every link active",
                source=STATE_SOURCE,
            )
        ]
    if _fabric(spec):
        return [
            gpu_finding(
                gpu,
                "nvlink.links-down",
                Severity.FAIL,
                f"{name}{counted} ({_down(down, up)}); on an SXM board NVLink is how the GPUs reach each other "
                "(directly or through NVSwitches), so their traffic falls back to PCIe or fails",
                measured=counted,
                expected=f"all {spec.nvlink_links if spec else len(links)} links active",
                advice=FABRIC_ADVICE,
                source="; ".join(x for x in (STATE_SOURCE, spec.source if spec else None, FABRIC_SOURCE) if x),
            )
        ]
    if up or on_nvlink:
        return [
            gpu_finding(
                gpu,
                "nvlink.links-down",
                Severity.WARN,
                f"{name}{counted} ({_down(down, up)}){slots}, so this bridged pair runs at "
                f"{len(up)}/{total} of its NVLink bandwidth",
                measured=counted,
                expected="every link of the bridge active",
                advice=BRIDGE_ADVICE,
                source=STATE_SOURCE + (f"; {spec.source}" if spec else ""),
            )
        ]
    return [
        gpu_finding(
            gpu,
            "nvlink.no-bridge",
            Severity.INFO,
            f"{name}no active NVLink ({counted}): no NVLink bridge fitted, or it is not seated; this GPU reaches "
            "the others over PCIe",
            measured=counted,
            expected="links active where a bridge is fitted",
            advice=(
                "an NVLink bridge joins two cards of the same model; if this card should have one, power off and "
                "reseat it — the guide measured NVLink making gpt2 DDP training ~23% faster"
            ),
            source=STATE_SOURCE + (f"; {spec.source}" if spec else ""),
        )
    ]


def check_nvlink(snapshot: Snapshot) -> list[Finding]:
    gpus = readable_gpus(snapshot)
    on_nvlink = _on_nvlink(snapshot)
    out: list[Finding] = []
    blind: list[str] = []
    for gpu in gpus:
        spec = _spec(gpu)
        found = _check_gpu(gpu, spec, on_nvlink=gpu.index in on_nvlink)
        out += found
        if not found and _fabric(spec) and gpu.index not in on_nvlink and not gpu.nvlinks:
            reason = gpu.missing.get("nvlinks")
            blind.append(f"GPU{gpu.index} ({reason.value if reason is not None else 'none listed'})")
    # One SXM GPU alone (a VM given one GPU of a board) needs no NVLink; two or more do.
    if len(blind) > 1:
        out.append(
            host_finding(
                "nvlink.state-unknown",
                Severity.UNKNOWN,
                f"cannot tell whether the NVLink fabric of {len(blind)} SXM GPUs is up: their link state is not in "
                f"this input ({list_names(blind)})",
                measured=list_names(blind),
                expected="every NVLink active",
                advice="read it with `nvidia-smi nvlink -s` (add the saved output with another --from)",
                source=STATE_SOURCE,
            )
        )
    return out

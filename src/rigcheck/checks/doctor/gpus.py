"""The GPUs as a set: are they all the same model, and do the cards of one model run one VBIOS?

Data-parallel training (DDP, ZeRO, FSDP) all-reduces gradients every step, and an all-reduce finishes when the
last rank arrives: every step runs at the pace of the slowest card, and the batch that fits is the one that
fits the smallest card's memory. A box of mixed models trains like a box of its weakest model.

Cards of one model flashed with different VBIOS versions are a box that was not set up as one (a replaced card,
a card flashed apart from the others); cards of different models have different VBIOS anyway and are not compared.

Finding ids: gpus.mixed-models, gpus.mixed-vbios.
"""

from __future__ import annotations

from collections import defaultdict

from rigcheck.checks.common import host_finding, list_names, readable_gpus
from rigcheck.facts import catalog
from rigcheck.model import Finding, Gpu, Severity, Snapshot

FINDING_IDS: tuple[str, ...] = ("gpus.mixed-models", "gpus.mixed-vbios")

SYNC_SOURCE = (
    "PyTorch docs, DistributedDataParallel: gradients are all-reduced during backward, a synchronisation point "
    "every step, so each step waits for the slowest rank; the guide: DDP syncs gradients every step"
)

VBIOS_SOURCE = (
    "NVML API reference, nvmlDeviceGetVbiosVersion (nvidia-smi -q 'VBIOS Version'); NVIDIA DGX H100/H200 "
    "firmware update guide: the GPU tray's firmware, VBIOS included, is updated with nvfwupd; that cards of one "
    "model should run one VBIOS is rigcheck's judgement (rigcheck)"
)


def _model(gpu: Gpu) -> str | None:
    """The model a GPU is: the catalog's canonical name where it knows the card (so a name nvidia-smi truncated
    and the full one agree), else the name as printed without case and vendor prefixes."""
    if not gpu.name:
        return None
    spec = catalog.lookup(gpu.name)
    return spec.name if spec is not None else catalog.normalize(gpu.name)


def _by_model(snapshot: Snapshot) -> dict[str, list[Gpu]]:
    by_model: dict[str, list[Gpu]] = defaultdict(list)
    for gpu in readable_gpus(snapshot):
        model = _model(gpu)
        if model is not None:
            by_model[model].append(gpu)
    return by_model


def check_gpus(snapshot: Snapshot) -> list[Finding]:
    by_model = _by_model(snapshot)
    return _mixed_models(by_model) + [f for gpus in by_model.values() if (f := _mixed_vbios(gpus)) is not None]


def _mixed_models(by_model: dict[str, list[Gpu]]) -> list[Finding]:
    if len(by_model) < 2:
        return []
    groups = sorted(by_model.values(), key=lambda gs: (-len(gs), gs[0].index))
    parts = [f"{len(gs)}x {gs[0].name} ({list_names([f'GPU{g.index}' for g in gs])})" for gs in groups]
    return [
        host_finding(
            "gpus.mixed-models",
            Severity.WARN,
            f"{len(by_model)} GPU models in one box: {'; '.join(parts)}",
            measured="; ".join(parts),
            expected="one GPU model for the GPUs that train together",
            advice=(
                "data-parallel training runs every step at the pace of the slowest card, and each rank fits only "
                "what the smallest card holds: train on one model's GPUs (CUDA_VISIBLE_DEVICES) and leave the odd "
                "card to other work (a display, inference, evaluation)"
            ),
            source=SYNC_SOURCE,
        )
    ]


def _mixed_vbios(gpus: list[Gpu]) -> Finding | None:
    """``gpus.mixed-vbios`` (warn): GPUs of one model on more than one VBIOS version; GPUs whose version is not
    known are left out, and fewer than two that know it compare nothing."""
    by_version: dict[str, list[Gpu]] = defaultdict(list)
    for gpu in gpus:
        version = (gpu.vbios_version or "").strip()
        if version:
            by_version[version].append(gpu)
    if len(by_version) < 2:
        return None
    groups = sorted(by_version.items(), key=lambda item: (-len(item[1]), item[1][0].index))
    parts = [f"{version} on {list_names([f'GPU{g.index}' for g in gs])}" for version, gs in groups]
    known = sum(len(gs) for gs in by_version.values())
    return host_finding(
        "gpus.mixed-vbios",
        Severity.WARN,
        f"{len(by_version)} VBIOS versions among {known} {gpus[0].name} GPUs: {'; '.join(parts)}",
        measured="; ".join(parts),
        expected=f"one VBIOS version on every {gpus[0].name}",
        advice=(
            "bring the cards to one version with the system or board vendor's firmware package (nvfwupd on "
            "DGX/HGX systems, the vendor's flash tool on a PCIe card), or ask the vendor whether the versions are "
            "meant to differ; until then, compare the odd cards' power limits and clocks with the others' "
            "(`rigcheck power`)"
        ),
        source=VBIOS_SOURCE,
    )

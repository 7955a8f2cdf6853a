"""The GPUs as a set: are they all the same model?

Data-parallel training (DDP, ZeRO, FSDP) all-reduces gradients every step, and an all-reduce finishes when the
last rank arrives: every step runs at the pace of the slowest card, and the batch that fits is the one that
fits the smallest card's memory. A box of mixed models trains like a box of its weakest model.

Finding ids: gpus.mixed-models.
"""

from __future__ import annotations

from collections import defaultdict

from rigcheck.checks.common import host_finding, list_names, readable_gpus
from rigcheck.facts import catalog
from rigcheck.model import Finding, Gpu, Severity, Snapshot

FINDING_IDS: tuple[str, ...] = ("gpus.mixed-models",)

SYNC_SOURCE = (
    "PyTorch docs, DistributedDataParallel: gradients are all-reduced during backward, a synchronisation point "
    "every step, so each step waits for the slowest rank; the guide: DDP syncs gradients every step"
)


def _model(gpu: Gpu) -> str | None:
    """The model a GPU is: the catalog's canonical name where it knows the card (so a name nvidia-smi truncated
    and the full one agree), else the name as printed without case and vendor prefixes."""
    if not gpu.name:
        return None
    spec = catalog.lookup(gpu.name)
    return spec.name if spec is not None else catalog.normalize(gpu.name)


def check_gpus(snapshot: Snapshot) -> list[Finding]:
    by_model: dict[str, list[Gpu]] = defaultdict(list)
    for gpu in readable_gpus(snapshot):
        model = _model(gpu)
        if model is not None:
            by_model[model].append(gpu)
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

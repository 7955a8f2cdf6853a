"""`bench … --gpus 0,2`: the GPUs a run measures, named as rigcheck names them everywhere (nvidia-smi's, NVML's
index), and where CUDA finds them.

CUDA numbers GPUs its own way (fastest first unless CUDA_DEVICE_ORDER=PCI_BUS_ID, and from 0 among those
CUDA_VISIBLE_DEVICES shows), so an NVML index is not a CUDA ordinal. Two ways across, one per kind of run:

- spawned workers (the launcher: collectives, matmul, membw, train): :func:`place_gpus` gives each worker
  CUDA_VISIBLE_DEVICES = the selected GPUs' UUIDs in the order given, so rank r's ``cuda:r`` is the r-th GPU
  given, and the rank -> NVML index map the rows are labelled with;
- this process (hostlink, p2p): :func:`cuda_index` finds the CUDA ordinal of an NVML index by its UUID.

No torch at import: the placement is pure (tests build it from fake snapshots).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from rigcheck.errors import BenchError, UsageError
from rigcheck.model.selection import select_gpus
from rigcheck.model.snapshot import Snapshot

CUDA_VISIBLE_DEVICES = "CUDA_VISIBLE_DEVICES"
CUDA_DEVICE_ORDER = "CUDA_DEVICE_ORDER"


def no_uuid_note(indices: Sequence[int]) -> str:
    return (
        f"--gpus: the snapshot has no UUID for GPU {', '.join(map(str, indices))}: the workers were given "
        "CUDA_VISIBLE_DEVICES by index with CUDA_DEVICE_ORDER=PCI_BUS_ID (nvidia-smi numbers GPUs by PCI bus id; "
        "CUDA by default does not)"
    )


@dataclass(frozen=True)
class GpuPlacement:
    """The GPUs a run uses: ``indices[r]`` is the NVML index of rank r's GPU (the order given), ``env`` what
    each worker's environment gets so that its ``cuda:r`` is that GPU, ``snapshot`` the machine narrowed to
    them (``gpu_selection`` set), ``note`` what the document should say about the placement (or None)."""

    indices: tuple[int, ...]
    env: Mapping[str, str]
    snapshot: Snapshot
    uuids: Mapping[int, str] = field(default_factory=dict)
    note: str | None = None

    def index_of(self, rank: int) -> int:
        """The NVML index of rank ``rank``'s GPU."""
        return self.indices[rank]

    def worker_env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """The placement's variables, then ``extra`` (a run's own: NCCL_P2P_DISABLE for --compare-p2p)."""
        return {**self.env, **(extra or {})}

    def world_size(self, requested: int | None) -> int:
        """One worker per GPU: ``requested`` (-n) must be None or that count."""
        return workers_for(self.indices, requested)


def workers_for(indices: Sequence[int], requested: int | None) -> int:
    """The world size of a run on ``indices`` (one worker per GPU); a different ``requested`` is a UsageError."""
    count = len(indices)
    if requested is not None and requested != count:
        chosen = ",".join(map(str, indices))
        raise UsageError(
            f"--world-size {requested} and --gpus {chosen} disagree: --gpus starts one worker per GPU ({count}); "
            "drop --world-size"
        )
    return count


def _cuda_uuid(uuid: str) -> str:
    # NVML prints "GPU-<uuid>" (a MIG instance "MIG-<uuid>"); CUDA_VISIBLE_DEVICES takes the same spelling.
    return uuid if uuid.upper().startswith(("GPU-", "MIG-")) else f"GPU-{uuid}"


def place_gpus(snapshot: Snapshot, indices: Sequence[int]) -> GpuPlacement:
    """The placement of ``indices`` (NVML indices, in rank order) on this machine's ``snapshot``.

    A repeated index, or one the snapshot lacks (the message every --gpus gives: model/selection.py), is a
    UsageError. Every GPU with a UUID: CUDA_VISIBLE_DEVICES=GPU-<uuid>,… (exact whatever CUDA's order); else
    the indices themselves, with CUDA_DEVICE_ORDER=PCI_BUS_ID, nvidia-smi's order, and a note saying so.
    """
    chosen = tuple(indices)
    if not chosen:
        raise UsageError("--gpus: name at least one GPU index (e.g. 0,1)")
    if len(set(chosen)) != len(chosen) or any(i < 0 for i in chosen):
        raise UsageError(f"--gpus: indices must be distinct and not negative: {','.join(map(str, chosen))!r}")
    narrowed = select_gpus(snapshot, chosen)
    uuids = {i: g.uuid for i in chosen if (g := snapshot.gpu(i)) is not None and g.uuid}
    lacking = [i for i in chosen if i not in uuids]
    if not lacking:
        env = {CUDA_VISIBLE_DEVICES: ",".join(_cuda_uuid(uuids[i]) for i in chosen)}
        return GpuPlacement(indices=chosen, env=env, snapshot=narrowed, uuids=uuids)
    env = {CUDA_VISIBLE_DEVICES: ",".join(map(str, chosen)), CUDA_DEVICE_ORDER: "PCI_BUS_ID"}
    return GpuPlacement(indices=chosen, env=env, snapshot=narrowed, uuids=uuids, note=no_uuid_note(lacking))


class _RankedRow(Protocol):
    rank: int
    gpu: int | None

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Any: ...


RowT = TypeVar("RowT", bound=_RankedRow)


def label_rows(rows: Sequence[RowT], placement: GpuPlacement | None) -> list[RowT]:
    """Rows a worker labelled with its CUDA ordinal (``gpu``), labelled with their rank's NVML index instead;
    as they are without a placement (a run without --gpus keeps CUDA's numbering, as before)."""
    if placement is None:
        return list(rows)
    return [r.model_copy(update={"gpu": placement.index_of(r.rank)}) for r in rows]


def same_index_note(placement: GpuPlacement | None) -> str | None:
    """What an in-process run (hostlink, p2p) says when the snapshot has no UUID for a GPU --gpus names:
    :func:`cuda_index` then took CUDA's device of the same index (None: every GPU had its UUID)."""
    lacking = [i for i in placement.indices if i not in placement.uuids] if placement is not None else []
    if not lacking:
        return None
    return (
        f"--gpus: the snapshot has no UUID for GPU {', '.join(map(str, lacking))}: CUDA's device of the same "
        "index was measured (CUDA may order GPUs differently from nvidia-smi)"
    )


def cuda_index(torch: Any, nvml_index: int, uuid: str | None) -> int:
    """CUDA's index of the GPU NVML calls ``nvml_index``: matched by UUID (CUDA orders GPUs differently
    and CUDA_VISIBLE_DEVICES renumbers them), else the same index."""
    if uuid is not None:
        want = uuid.lower().removeprefix("gpu-")
        seen = 0  # CUDA devices that reported a UUID (str(props.uuid) has no "GPU-" prefix)
        for i in range(torch.cuda.device_count()):
            got = getattr(torch.cuda.get_device_properties(i), "uuid", None)
            if got is None:
                continue
            seen += 1
            if str(got).lower().removeprefix("gpu-") == want:
                return i
        if seen:
            # CUDA gave UUIDs and none is this GPU's: CUDA_VISIBLE_DEVICES hides it. Falling back to the
            # same index would load a *different* card than the one asked for (CUDA renumbers the
            # visible GPUs from 0), and the figures would describe the wrong GPU.
            raise BenchError(f"GPU {nvml_index} ({uuid}) is not visible to CUDA (CUDA_VISIBLE_DEVICES?)")
    if nvml_index >= torch.cuda.device_count():
        raise BenchError(f"GPU {nvml_index} is not visible to CUDA (CUDA_VISIBLE_DEVICES?)")
    return nvml_index

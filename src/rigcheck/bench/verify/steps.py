"""What each level of `rigcheck verify` measures (:data:`PLANS`), and the pure helpers of its runner.

The runner itself (budget, steps, re-measuring) is rigcheck.bench.verify.run; this module holds the parameters
of every step per level, the matmul dtype each GPU is judged on, the mapping of a launched benchmark's
``error`` to a step status, and the merge of a re-measured GPU's rows into the first document.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Final, TypeVar

from rigcheck.bench.collectives import sweep
from rigcheck.bench.device.common import GIB, MIB
from rigcheck.bench.device.matmul import CPU_QUICK_SHAPES, GPU_QUICK_SHAPES, GPU_SHAPES, GPU_WARMUP_S
from rigcheck.bench.device.membw import GPU_SIZES
from rigcheck.bench.fingerprint import gpu_dtypes
from rigcheck.checks.verify.figures import row_key
from rigcheck.errors import UsageError, was_interrupted
from rigcheck.facts import catalog
from rigcheck.facts.bands import judged_matmul_check
from rigcheck.model.bench import HostlinkDocument, HostlinkRow, MatmulDocument, MatmulRow, MembwDocument, MembwRow
from rigcheck.model.snapshot import Gpu, Snapshot
from rigcheck.model.verify import StepStatus

MEASURED_STEPS: Final = ("matmul", "membw", "fingerprint", "hostlink", "p2p", "allreduce", "burn")


def parse_only(text: str | None, known: tuple[str, ...] = MEASURED_STEPS) -> tuple[str, ...] | None:
    """`verify --only matmul,membw`: the stages asked for, in the run's order; None for every stage. An unknown
    or empty name is a UsageError (a typo must not scope the run to nothing)."""
    if text is None:
        return None
    names = [n.strip() for n in text.split(",")]
    bad = [n for n in names if n not in known]
    if bad or not names:
        raise UsageError(f"--only takes stages among {', '.join(known)}, not {', '.join(map(repr, bad))}")
    return tuple(n for n in known if n in names)


# launcher.hung_text: the words of a run ended by its timeout (as opposed to a worker that failed)
TIMED_OUT_TEXT: Final = "did not finish within"


@dataclass(frozen=True)
class Plan:
    """The parameters of every step at one level (or of the CPU pipeline)."""

    shares: Mapping[str, float]  # step -> fraction of the budget; what is not shared is left for re-measuring
    min_start_s: float  # a step does not start with less budget than this left ("budget spent")
    matmul_shapes: tuple[tuple[int, int, int], ...]
    matmul_warmup: int
    matmul_repeats: int
    matmul_warmup_s: float  # seconds of products before the first timed shape (clocks up from idle)
    membw_sizes: tuple[int, ...]
    membw_repeats: int
    hostlink_size: int
    hostlink_repeats: int
    p2p_size: int
    p2p_repeats: int
    allreduce_sizes: tuple[int, ...]
    allreduce_warmup: int
    allreduce_repeats: int
    burn_load_s: float  # seconds of load the burn aims for (less when the budget leaves less)
    cpu_ranks: int = 2  # --cpu: gloo processes for matmul and all-reduce
    # The measured steps the level runs; the others are left out (the prolog's three). Default: every one.
    steps: tuple[str, ...] = MEASURED_STEPS
    control_arm: bool = False  # a failed all-reduce is run again with NCCL_P2P_DISABLE=1, to name the P2P path
    # A launched step's set-up (spawning its workers, importing torch, joining the process group) is not counted
    # in its share or the run's budget: it has this many seconds of its own (NCCL's init on 8 GPUs takes ~10-15 s;
    # a busy 2-core machine needs several seconds per gloo worker).
    setup_s: float = 60.0


# quick: 180 s on an 8-GPU node. Launched steps (matmul, membw, all-reduce) pay ~10-15 s to start 8
# workers with CUDA and a process group, so their shares are mostly start-up; hostlink (256 MiB copies)
# and p2p (128 MiB, peer copies only: 56 ordered pairs on 8 GPUs) run in this process and are sized to
# fit their shares; the burn takes the biggest share for its minute of load.
QUICK: Final = Plan(
    shares={
        "matmul": 0.15,
        "membw": 0.09,
        "fingerprint": 0.06,
        "hostlink": 0.08,
        "p2p": 0.08,
        "allreduce": 0.14,
        "burn": 0.38,
    },
    min_start_s=5.0,
    matmul_shapes=GPU_QUICK_SHAPES,
    matmul_warmup=10,
    matmul_repeats=20,
    matmul_warmup_s=GPU_WARMUP_S,
    membw_sizes=GPU_SIZES,
    membw_repeats=10,
    hostlink_size=256 * MIB,
    hostlink_repeats=3,
    p2p_size=128 * MIB,
    p2p_repeats=3,
    allreduce_sizes=tuple(sweep(MIB, GIB)),
    allreduce_warmup=2,
    allreduce_repeats=10,
    burn_load_s=60.0,
)
# full: 900 s. The benchmarks' own full sweeps (matmul's 17 shapes, all-reduce 8 B to 1 GiB), 1 GiB host
# copies, 512 MiB peer copies and five minutes of burn.
FULL: Final = Plan(
    shares={
        "matmul": 0.12,
        "membw": 0.05,
        "fingerprint": 0.04,
        "hostlink": 0.10,
        "p2p": 0.12,
        "allreduce": 0.10,
        "burn": 0.40,
    },
    min_start_s=5.0,
    matmul_shapes=GPU_SHAPES,
    matmul_warmup=10,
    matmul_repeats=20,
    matmul_warmup_s=GPU_WARMUP_S,
    membw_sizes=GPU_SIZES,
    membw_repeats=20,
    hostlink_size=GIB,
    hostlink_repeats=5,
    p2p_size=512 * MIB,
    p2p_repeats=5,
    allreduce_sizes=tuple(sweep(8, GIB)),
    allreduce_warmup=5,
    allreduce_repeats=20,
    burn_load_s=300.0,
)
# --cpu (either level): the same pipeline on gloo processes, small enough for a 2-core CI runner (~7 s in
# all: each launch starts its processes in ~1.5 s); hostlink, p2p and burn need a GPU.
CPU: Final = Plan(
    shares={
        "matmul": 0.25,
        "membw": 0.20,
        "fingerprint": 0.15,
        "hostlink": 0.0,
        "p2p": 0.0,
        "allreduce": 0.25,
        "burn": 0.0,
    },
    min_start_s=1.0,
    matmul_shapes=CPU_QUICK_SHAPES,
    matmul_warmup=1,
    matmul_repeats=3,
    matmul_warmup_s=0.0,
    membw_sizes=(4 * MIB, 32 * MIB),
    membw_repeats=3,
    hostlink_size=0,
    hostlink_repeats=0,
    p2p_size=0,
    p2p_repeats=0,
    allreduce_sizes=tuple(sweep(1 << 10, MIB)),
    allreduce_warmup=1,
    allreduce_repeats=5,
    burn_load_s=0.0,
    setup_s=30.0,
)
# prolog: 10 s at every job start (a Slurm prolog, a pod's init): the doctor's passive checks, a 2-s matmul and
# device-copy bracket per GPU, one small all-reduce over the node's GPUs (with its NCCL_P2P_DISABLE=1 control arm
# only when it fails); nothing that takes minutes. Its launched steps' set-up has its own small allowance.
PROLOG_STEPS: Final = ("matmul", "membw", "allreduce")
PROLOG: Final = Plan(
    shares={"matmul": 0.25, "membw": 0.15, "allreduce": 0.30},
    min_start_s=0.5,
    matmul_shapes=((8192, 8192, 8192),),
    matmul_warmup=2,
    matmul_repeats=5,
    matmul_warmup_s=1.0,
    membw_sizes=(GIB,),
    membw_repeats=5,
    hostlink_size=0,
    hostlink_repeats=0,
    p2p_size=0,
    p2p_repeats=0,
    allreduce_sizes=(64 * MIB,),
    allreduce_warmup=2,
    allreduce_repeats=5,
    burn_load_s=0.0,
    steps=PROLOG_STEPS,
    control_arm=True,
    setup_s=30.0,
)
# --cpu at the prolog level: the same steps and shares, sized for CPU ranks (as CPU is to QUICK).
CPU_PROLOG: Final = replace(
    PROLOG,
    matmul_shapes=((256, 256, 256),),
    matmul_warmup=1,
    matmul_repeats=3,
    matmul_warmup_s=0.0,
    membw_sizes=(4 * MIB,),
    membw_repeats=3,
    allreduce_sizes=(64 << 10,),
    allreduce_warmup=1,
    allreduce_repeats=3,
    setup_s=20.0,
)
PLANS: Final[dict[str, Plan]] = {"quick": QUICK, "full": FULL, "cpu": CPU, "prolog": PROLOG, "cpu-prolog": CPU_PROLOG}


def plan_for(level: str, *, cpu: bool) -> Plan:
    """The plan of a level (on CPU ranks with ``cpu``): quick and full share the CPU plan, the prolog has its own."""
    if level == "prolog":
        return CPU_PROLOG if cpu else PROLOG
    return CPU if cpu else PLANS[level]


# The burn's time beside its load: 2 s of idle samples first, the matrices, 1 s of cool-down, the analysis.
BURN_OVERHEAD_S: Final = 6.0
# A load shorter than this tells nothing of power or clocks under load: the burn is cut short instead.
BURN_MIN_LOAD_S: Final = 10.0
# A load shortened by the budget to at least this fraction of the level's is "done"; below, "cut_short".
BURN_DONE_FRACTION: Final = 0.5


def _compute_capability(gpu: Gpu) -> tuple[int, int] | None:
    try:
        major, minor = (gpu.compute_capability or "").split(".")
        return int(major), int(minor)
    except ValueError:
        return None


def judged_dtype(gpu: Gpu) -> str:
    """The matmul dtype a GPU is judged on: its SKU's (bf16 where the card has it, else fp16); for a card not in
    the catalogue, bf16 from compute capability 8.0 (Ampere) on, else fp16."""
    spec = catalog.lookup(gpu.name) if gpu.name else None
    check = judged_matmul_check(spec) if spec is not None else None
    if check is not None:
        return check.removeprefix("matmul_")
    cc = _compute_capability(gpu)
    return "bf16" if cc is not None and cc >= (8, 0) else "fp16"


def matmul_dtypes(snapshot: Snapshot, gpus: Sequence[int] | None = None) -> tuple[str, ...]:
    """Every dtype a GPU of the run is judged on (one, unless the box mixes SKUs), bf16 first."""
    chosen = [g for g in snapshot.gpus if gpus is None or g.index in gpus]
    found = {judged_dtype(g) for g in chosen}
    return tuple(d for d in ("bf16", "fp16") if d in found) or ("bf16",)


def fingerprint_dtypes(snapshot: Snapshot, gpus: Sequence[int] | None = None) -> tuple[str, ...]:
    """The fingerprint's chains: what every GPU of the run computes (the lowest compute capability decides)."""
    chosen = [g for g in snapshot.gpus if gpus is None or g.index in gpus]
    found = [cc for g in chosen if (cc := _compute_capability(g)) is not None]
    return gpu_dtypes(min(found) if found else None)


def launched_status(error: str | None) -> tuple[StepStatus, str | None]:
    """A launched benchmark's status from its ``error``: done; cut_short when its timeout (the step's share)
    or an interruption ended it (what it measured is kept); failed when a worker raised or died."""
    if error is None:
        return "done", None
    if was_interrupted(error):
        return "cut_short", error
    if TIMED_OUT_TEXT in error:
        return "cut_short", f"cut short by the budget: {error}"
    return "failed", error


# --- re-measured GPUs' rows into the first document ------------------------------------------------------

PerGpuDoc = TypeVar("PerGpuDoc", MatmulDocument, MembwDocument, HostlinkDocument)


def _key(row: MatmulRow | MembwRow | HostlinkRow) -> int:
    """The figure key of a row, as the judge keys it: the GPU index, the rank on a CPU run."""
    return row_key(row.gpu, row.rank) if isinstance(row, MatmulRow | MembwRow) else row.gpu


def merge_rows(old: PerGpuDoc, new: PerGpuDoc, keys: set[int], note: str) -> tuple[PerGpuDoc, set[int]]:
    """``old`` with the rows of the GPUs (ranks on CPU) in ``keys`` replaced by ``new``'s, where ``new`` has
    rows for them; and the keys replaced. The other GPUs keep their first figures."""
    got = {_key(r) for r in new.results} & keys
    if not got:
        return old, got
    kept: list[MatmulRow | MembwRow | HostlinkRow] = [r for r in old.results if _key(r) not in got]
    fresh: list[MatmulRow | MembwRow | HostlinkRow] = [r for r in new.results if _key(r) in got]
    update: dict[str, object] = {
        "results": sorted([*kept, *fresh], key=_key),  # stable: each GPU's rows keep their order
        "notes": [*old.notes, note],
    }
    if isinstance(old, MatmulDocument) and isinstance(new, MatmulDocument):
        best = [b for b in old.best if row_key(b.gpu, b.rank) not in got]
        best += [b for b in new.best if row_key(b.gpu, b.rank) in got]
        update["best"] = sorted(best, key=lambda b: row_key(b.gpu, b.rank))
    return old.model_copy(update=update), got

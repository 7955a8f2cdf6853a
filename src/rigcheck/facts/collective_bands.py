"""All-gather and reduce-scatter bus-bandwidth bands on one NVSwitch board, with the published healthy figures
each floor sits under; why broadcast has none.

All-gather and reduce-scatter move (n-1)/n of the data over every GPU's links in both of NCCL's algorithms that
a default run picks on one node (ring; NVLS only where it is faster), so their busbw is the effective NVLink rate:
~370 GB/s on NVLink4 ("which you can observe as BusBw when running non-allreduce operations", NCCL's maintainer).
NVLS forced with NCCL_ALGO is slower for these two (it sends S for a reduce-scatter of S instead of (n-1)S/n, the
maintainer in nccl #1083) and no healthy figure of it is published: such a run is left unjudged.

Bands exist for 8 GPUs on NVSwitch (an HGX/DGX board): A100 (NVLink3, 12 links) and H100/H200 (NVLink4, 18 links),
from 1 GiB (busbw still climbs under it). Each floor sits under the LOWEST published healthy figure by the margin
given beside it (``Tier.margin``), as facts/allreduce_bands.py does for the all-reduce.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from rigcheck.facts.allreduce_bands import GIB, NVSWITCH_BOARD_GPUS, Condition, Tier, size_text, tier_for

# Sources. ----------------------------------------------------------------------------------------------------
# NCCL's maintainer: "NCCL can get an effective NVLink bandwidth of 370GB/s, which you can observe as BusBw when
# running non-allreduce operations, or when running with NCCL_ALGO=RING" (8x H100).
NCCL_EFFECTIVE = "https://github.com/NVIDIA/nccl-tests/issues/212"
# 8x H100, all_gather_perf to 16 GiB: busbw saturates at ~360; the maintainer: "360 GB/s is exactly what we'd
# expect on H100".
H100_ALLGATHER = "https://github.com/NVIDIA/nccl-tests/issues/326"
# 8x H100 80GB HBM3, reduce_scatter_perf (ring): 349.36 at 1 GiB, 354.81 at 2 GiB, 357.76 at 4 GiB, 362.16 at
# 8 GiB (330.94 at 256 MiB); NVLS forced is slower (the maintainer in #1083).
H100_REDUCESCATTER = "https://github.com/NVIDIA/nccl/issues/1047"
NVLS_SLOWER = "https://github.com/NVIDIA/nccl/issues/1083"
# 8x A100-SXM4-40GB (HGX), Microsoft SuperBench's nccl-tests reference logs: all-gather 212.88 at 1 GiB, 223.39 at
# 8 GiB; reduce-scatter 223.54 at 1 GiB, 231.52 at 8 GiB (tests/calibration/cases, *-8xa100-sxm4-40gb-superbench).
SUPERBENCH_A100 = (
    "microsoft/superbenchmark tests/data/nccl_allgather.log and nccl_reducescatter.log (8x A100-SXM4-40GB), "
    "https://github.com/microsoft/superbenchmark/tree/86e14156453d256ccd03495d1fa42d2672b12475/tests/data"
)
# Broadcast: 8x H100 on NVSwitch reaches 310 GB/s on one ring and 238 on two reversed rings (nccl #1678), both
# healthy hardware; one 8x A100 figure (SuperBench, 232.81 at 8 GiB). Too few figures, too dependent on the rings.
BROADCAST_FIGURES = (
    "https://github.com/NVIDIA/nccl/issues/1678 (8x H100: 310 or 238 GB/s by the rings NCCL builds); "
    "microsoft/superbenchmark tests/data/nccl_broadcast.log (8x A100: 232.81 at 8 GiB)"
)

OPS: Final = ("allgather", "reducescatter")

# Per chip: the part's NVLink count on an 8-GPU board, and its tiers. -----------------------------------------------
HOPPER_TIERS: Final = {
    "allgather": (
        Tier(
            GIB,
            300.0,
            349.36,
            f"~360 at 16 GiB, 'exactly what we'd expect on H100' ({H100_ALLGATHER}); ~370 effective NVLink4 busbw "
            f"of non-allreduce operations ({NCCL_EFFECTIVE}); lowest published at >= 1 GiB on the same links: "
            f"reduce-scatter 349.36 at 1 GiB ({H100_REDUCESCATTER})",
        ),
    ),
    "reducescatter": (
        Tier(
            GIB,
            300.0,
            349.36,
            f"349.36 at 1 GiB, 362.16 at 8 GiB ({H100_REDUCESCATTER}); ~370 effective NVLink4 busbw of non-allreduce "
            f"operations ({NCCL_EFFECTIVE})",
        ),
    ),
}
A100_TIERS: Final = {
    "allgather": (Tier(GIB, 180.0, 212.88, f"212.88 at 1 GiB, 223.39 at 8 GiB ({SUPERBENCH_A100})"),),
    "reducescatter": (Tier(GIB, 180.0, 223.54, f"223.54 at 1 GiB, 231.52 at 8 GiB ({SUPERBENCH_A100})"),),
}
# (chip, NVLinks per GPU) -> (what the verdict calls the parts, tiers): H800/H20 (GH100 with fewer links) have none.
BOARDS: Final = {
    ("GH100", 18): ("8 H100/H200 on NVSwitch", HOPPER_TIERS),
    ("GA100", 12): ("8 A100 SXM on NVSwitch", A100_TIERS),
}


def broadcast_condition() -> Condition:
    """Broadcast is not judged: its busbw is the root's ring, and the published figures are too few for a floor."""
    return Condition(
        None,
        "no floor for broadcast: its busbw depends on the rings NCCL builds from the root (8x H100: 310 or 238 "
        f"GB/s on the same hardware) and only one 8x A100 figure is published ({BROADCAST_FIGURES})",
        None,
    )


def forced_algorithm(env: Mapping[str, str]) -> str | None:
    """The NCCL_ALGO a run forced when it leaves out ring (NVLS, tree, ...): the published figures do not cover it."""
    algo = (env.get("NCCL_ALGO") or "").strip()
    if not algo or algo.startswith("^") or "ring" in algo.lower():
        return None
    return algo


def node_condition(
    op: str, chip: str | None, nvlink_links: int, *, gpus: int, nvswitch: bool, size: int, env: Mapping[str, str]
) -> Condition:
    """One node's all-gather or reduce-scatter band: 8 A100 or H100/H200 on NVSwitch, at the largest size."""
    name = "all-gather" if op == "allgather" else "reduce-scatter"
    if not nvswitch or gpus != NVSWITCH_BOARD_GPUS:
        return Condition(None, f"no public {name} figure for {gpus} GPUs without an 8-GPU NVSwitch board", None)
    board = BOARDS.get((chip or "", nvlink_links))
    if board is None:
        return Condition(None, f"no public {name} figure for this GPU on NVSwitch", None)
    algo = forced_algorithm(env)
    if algo is not None:
        return Condition(
            None,
            f"NCCL_ALGO={algo}: the published {name} figures are of NCCL's own choice or ring (NVLS is slower for "
            f"{name}, {NVLS_SLOWER})",
            None,
        )
    parts, tiers = board
    tier = tier_for(tiers[op], size)
    if tier is None:
        smallest = min(t.min_bytes for t in tiers[op])
        return Condition(
            None,
            f"the largest size measured ({size_text(size)}) is under {size_text(smallest)}, the smallest with a "
            f"published {name} figure: run up to 8 GiB (-e 8G)",
            None,
        )
    return Condition(
        tier.floor,
        f"{name}, {parts}, >= {size_text(tier.min_bytes)}",
        f"{tier.evidence}; margin {tier.margin:.0%}",
        tier.lowest_healthy,
    )

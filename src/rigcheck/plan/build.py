"""What `rigcheck plan` makes of its options and of what its --from files hold (the CLI reads them: cli/plan.py
through readers/plan_sources.py): the plan, the guide's explanation and the offload plan added when asked, one
``rigcheck.plan/1`` document. Pure: no file, no host read.

--from may be given more than once: one all-reduce bench result or snapshot (the bus bandwidth), and, with
--offload, a `bench hostlink` and a `bench nvme` result (the offload bandwidths). The CLI checks the options
(check_options), reads each file's bench document (None for another file), sorts them (sort_sources), reads the
one left as a snapshot when it is no bench result, and builds the plan (build_comm_plan).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rigcheck.errors import UsageError
from rigcheck.model import Snapshot
from rigcheck.model.plan import PlanDocument
from rigcheck.plan.comm import DTYPES, STRATEGIES, busbw_from_bench, default_dtype, parse_params, plan_comm
from rigcheck.plan.offload import Capacity, check_offload, hostlink_from_bench, nvme_from_bench, plan_offload

# The guide's batch, when --tokens is not given: 4 sequences x 1024 tokens per GPU per step.
DEFAULT_TOKENS = 4096
DEFAULT_TOKENS_NOTE = "tokens per GPU per step: 4096 (the guide's batch: 4 sequences x 1024 tokens); set --tokens"


@dataclass
class OffloadSources:
    """What the --from files say about offload: the host link, the NVMe drive, the machine's RAM and free space."""

    host_link: tuple[float, float, str] | None = None
    nvme_bw: tuple[float, float, str] | None = None
    nvme_free: float | None = None
    nvme_path: str | None = None
    ram_gib: float | None = None
    ram_path: str | None = None


def _embedded_ram(doc: dict[str, Any]) -> float | None:
    """host.memory_total_gib of the snapshot a bench document embeds, when it has one."""
    snap = doc.get("snapshot")
    host = snap.get("host") if isinstance(snap, dict) else None
    value = host.get("memory_total_gib") if isinstance(host, dict) else None
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) and value > 0 else None


def _read_offload_doc(doc: dict[str, Any], path: str, found: OffloadSources) -> None:
    kind = str(doc["benchmark"])
    if (kind == "hostlink" and found.host_link is not None) or (kind == "nvme" and found.nvme_bw is not None):
        raise UsageError(f"--from: two bench {kind} results; give one")
    if kind == "hostlink":
        found.host_link = hostlink_from_bench(doc, path)
    else:
        rd, wr, src, free = nvme_from_bench(doc, path)
        found.nvme_bw = (rd, wr, src)
        if free is not None:
            found.nvme_free, found.nvme_path = free, path
    ram = _embedded_ram(doc)
    if ram is not None and found.ram_gib is None:
        found.ram_gib, found.ram_path = ram, path


@dataclass(frozen=True)
class GivenRam:
    """The target's RAM as --ram gave it: a number of GiB, or this machine's (``--ram local``, read by the CLI;
    ``gib`` None when /proc/meminfo is unreadable)."""

    gib: float | None
    source: str


NO_RAM = "pass the target's --ram GIB, --from its snapshot (host memory), or --ram local (the machine running plan)"


def parse_ram(text: str) -> float | None:
    """--ram: a positive number of GiB, or None for ``local`` (this machine's, read by the CLI)."""
    if text.strip().lower() == "local":
        return None
    try:
        gib = float(text.strip().lower().removesuffix("gib").removesuffix("g"))
    except ValueError:
        gib = math.nan
    if not (gib > 0 and math.isfinite(gib)):
        raise UsageError(f"--ram {text!r}: expected GiB of the target's RAM (e.g. 512) or 'local'")
    return gib


def _ram(snap: Snapshot | None, snap_path: str | None, found: OffloadSources, given: GivenRam | None) -> Capacity:
    """The target's CPU RAM: --ram, else the snapshot given with --from, else the one a bench result embeds; never
    the machine running plan unless --ram local asked for it."""
    if given is not None:
        if given.gib is None:
            return Capacity(None, None, f"{given.source}: unreadable (/proc/meminfo); pass --ram GIB")
        return Capacity(given.gib * 2**30, given.source, "")
    if snap is not None:
        gib = snap.host.memory_total_gib
        if gib is None:
            return Capacity(None, None, f"the snapshot ({snap_path}) has no host.memory_total_gib")
        return Capacity(gib * 2**30, f"the snapshot ({snap_path})", "")
    if found.ram_gib is not None:
        return Capacity(found.ram_gib * 2**30, f"the machine of {found.ram_path}", "")
    return Capacity(None, None, NO_RAM)


def _largest_layer(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        return parse_params(text)
    except UsageError:
        raise UsageError(f"--largest-layer {text!r}: expected a count such as 131M or 131072000") from None


NO_FREE_SPACE = (
    "free space unknown: pass --nvme-path DIR (where DeepSpeed's nvme_path will point), or --from a bench nvme "
    "result that names it"
)


def check_options(  # noqa: PLR0917 - the command's options, one for one
    strategy: str,
    dtype: str | None,
    busbw: float | None,
    sources: int,
    offload: str | None,
    nodes: int,
    largest_layer: str | None,
    nvme_path: bool,
    ram: str | None = None,
) -> None:
    """The options alone, before any --from file is read (``sources``: how many; ``nvme_path``: given; ``dtype``
    None: the default). UsageError for bad ones."""
    if strategy not in STRATEGIES:
        raise UsageError(f"--strategy {strategy!r}: choose one of {', '.join(STRATEGIES)}")
    if dtype is not None and dtype not in DTYPES:
        raise UsageError(f"--dtype {dtype!r}: choose one of {', '.join(DTYPES)}")
    if offload is not None:
        check_offload(strategy, offload)
        if ram is not None:
            parse_ram(ram)
    elif nodes != 1 or largest_layer is not None or nvme_path or ram is not None:
        raise UsageError("--nodes, --largest-layer, --nvme-path and --ram go with --offload")
    if busbw is not None and sources and offload is None:
        raise UsageError("give --busbw or --from, not both")


@dataclass
class PlanSources:
    """The --from files sorted: the offload figures of bench hostlink / nvme results, and the one file left (an
    all-reduce bench result or a snapshot) with its bench document (None: a snapshot, read by the CLI)."""

    found: OffloadSources = field(default_factory=OffloadSources)
    plain: str | None = None
    plain_bench: dict[str, Any] | None = None


def sort_sources(
    files: Sequence[tuple[str, dict[str, Any] | None]], *, busbw: float | None, offload: str | None
) -> PlanSources:
    """Each --from file (its path, and its rigcheck.bench document or None) to what it gives the plan."""
    sorted_ = PlanSources()
    plain: list[tuple[str, dict[str, Any] | None]] = []
    for path, doc in files:
        if doc is None or doc.get("benchmark") not in {"hostlink", "nvme"}:
            plain.append((path, doc))
        elif offload is None:
            raise UsageError(f"--from {path}: a bench {doc['benchmark']} result is read with --offload")
        else:
            _read_offload_doc(doc, path, sorted_.found)
    if len(plain) > 1:
        raise UsageError("--from: one all-reduce bench result or snapshot at a time (beside bench hostlink / nvme)")
    if busbw is not None and plain:
        raise UsageError("give --busbw or --from, not both")
    if plain:
        sorted_.plain, sorted_.plain_bench = plain[0]
    return sorted_


def build_comm_plan(  # noqa: PLR0917 - the command's options, one for one
    params: str,
    gpus: int,
    strategy: str,
    dtype: str | None,
    busbw: float | None,
    sources: PlanSources,
    snapshot: Snapshot | None,
    link: str | None,
    gpu: str | None,
    tokens: int | None,
    tflops: float | None,
    *,
    explain_guide: bool = False,
    offload: str | None = None,
    nodes: int = 1,
    largest_layer: str | None = None,
    nvme_free: tuple[float, str] | None = None,
    ram: GivenRam | None = None,
) -> PlanDocument:
    """The document `rigcheck plan` prints, from its options (checked by check_options) and what its --from files
    hold. UsageError / InputError for bad ones.

    ``dtype`` None: the default (default_dtype). ``snapshot``: the one plain --from file read as a snapshot (when
    it is no bench result). ``nvme_free``: bytes free under --nvme-path and that path; ``ram``: the target's RAM
    as --ram gave it (the command reads both)."""
    found, plain = sources.found, sources.plain
    bw, bw_src, snap = busbw, None, snapshot
    if sources.plain_bench is not None:
        bw, src = busbw_from_bench(sources.plain_bench)
        bw_src = f"{src}: {plain}"
    stated: list[str] = []
    if dtype is None:
        dtype, why = default_dtype(gpu, explain_guide=explain_guide)
        stated.append(why)
    if tokens is None:
        tokens = DEFAULT_TOKENS
        stated.append(DEFAULT_TOKENS_NOTE)
    plan = plan_comm(
        parse_params(params),
        gpus,
        strategy,
        dtype,
        busbw_gbps=bw,
        tokens_per_step_per_gpu=tokens,
        achieved_tflops=tflops,
        snapshot=snap,
        busbw_source=bw_src,
        gpu=gpu,
        link=link,
        assumptions=stated,
    )
    if explain_guide:
        from rigcheck.plan.guide import guide_rig_explanation

        plan.guide = guide_rig_explanation()
    if offload is not None:
        free = Capacity(None, None, NO_FREE_SPACE)
        if nvme_free is not None:
            free = Capacity(nvme_free[0], f"--nvme-path {nvme_free[1]}", "")
        elif found.nvme_free is not None:
            free = Capacity(found.nvme_free, f"the drive of {found.nvme_path}", "")
        plan.offload = plan_offload(
            plan.inputs.params,
            gpus,
            strategy,
            dtype,
            offload,
            nodes=nodes,
            largest_layer=_largest_layer(largest_layer),
            ram=_ram(snap, plain, found, ram),
            nvme_free=free,
            host_link=found.host_link,
            nvme_bw=found.nvme_bw,
            compute_time_s=plan.compute_time_s,
            compute_reason=plan.compute_time_reason or "no compute time in the plan",
        )
    return plan

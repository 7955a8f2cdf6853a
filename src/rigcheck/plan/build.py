"""What `rigcheck plan` runs: its options read (a bench result or a snapshot from --from, the default tokens),
the plan made, the guide's explanation and the offload plan added when asked: one ``rigcheck.plan/1`` document.

--from may be given more than once: one all-reduce bench result or snapshot (the bus bandwidth), and, with
--offload, a `bench hostlink` and a `bench nvme` result (the offload bandwidths).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rigcheck.errors import InputError, UsageError
from rigcheck.model import Snapshot
from rigcheck.model.plan import CommPlan
from rigcheck.plan.comm import DTYPES, STRATEGIES, busbw_from_bench, parse_params, plan_comm
from rigcheck.plan.offload import Capacity, check_offload, hostlink_from_bench, nvme_from_bench, plan_offload

# The guide's batch, when --tokens is not given: 4 sequences x 1024 tokens per GPU per step.
DEFAULT_TOKENS = 4096
DEFAULT_TOKENS_NOTE = "tokens per GPU per step: 4096 (the guide's batch: 4 sequences x 1024 tokens); set --tokens"


def read_plan_source(source: Path) -> tuple[float | None, str | None, Snapshot | None]:
    """--from: a bench result (its all-reduce busbw and where it came from), or anything `--from` reads
    elsewhere (a snapshot, topo -m ...) as a snapshot."""
    from rigcheck.readers.from_file import load_file, read_text

    path = str(source)
    text = read_text(path, "a bench result, a snapshot or a topo -m file")
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):  # not JSON, or hostile JSON: load_file below says which in one line
        data = None
    if isinstance(data, dict) and str(data.get("schema", "")).startswith("rigcheck.bench/"):
        bw, src = busbw_from_bench(data)
        return bw, f"{src}: {path}", None
    try:
        return None, None, load_file(path)
    except InputError as exc:
        raise InputError(
            f"neither a rigcheck.bench/1 result nor a snapshot/topology: {exc.detail}", path=path
        ) from None


@dataclass
class OffloadSources:
    """What the --from files say about offload: the host link, the NVMe drive, the machine's RAM and free space."""

    host_link: tuple[float, float, str] | None = None
    nvme_bw: tuple[float, float, str] | None = None
    nvme_free: float | None = None
    nvme_path: str | None = None
    ram_gib: float | None = None
    ram_path: str | None = None


def _bench_json(path: Path) -> dict[str, Any] | None:
    """The file as a `bench hostlink` / `bench nvme` document, or None when it is anything else."""
    from rigcheck.readers.from_file import read_text

    text = read_text(str(path), "a bench result, a snapshot or a topo -m file")
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return None
    is_bench = isinstance(data, dict) and str(data.get("schema", "")).startswith("rigcheck.bench/")
    return data if is_bench and data.get("benchmark") in {"hostlink", "nvme"} else None


def _embedded_ram(doc: dict[str, Any]) -> float | None:
    """host.memory_total_gib of the snapshot a bench document embeds, when it has one."""
    snap = doc.get("snapshot")
    host = snap.get("host") if isinstance(snap, dict) else None
    value = host.get("memory_total_gib") if isinstance(host, dict) else None
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) and value > 0 else None


def _read_offload_doc(doc: dict[str, Any], path: Path, found: OffloadSources) -> None:
    kind = str(doc["benchmark"])
    if (kind == "hostlink" and found.host_link is not None) or (kind == "nvme" and found.nvme_bw is not None):
        raise UsageError(f"--from: two bench {kind} results; give one")
    if kind == "hostlink":
        found.host_link = hostlink_from_bench(doc, str(path))
    else:
        rd, wr, src, free = nvme_from_bench(doc, str(path))
        found.nvme_bw = (rd, wr, src)
        if free is not None:
            found.nvme_free, found.nvme_path = free, str(path)
    ram = _embedded_ram(doc)
    if ram is not None and found.ram_gib is None:
        found.ram_gib, found.ram_path = ram, str(path)


def _ram(snap: Snapshot | None, snap_path: str | None, found: OffloadSources) -> Capacity:
    """CPU RAM: the snapshot given with --from, else the one a bench result embeds, else this machine."""
    if snap is not None:
        gib = snap.host.memory_total_gib
        if gib is None:
            return Capacity(None, None, f"the snapshot ({snap_path}) has no host.memory_total_gib")
        return Capacity(gib * 2**30, f"the snapshot ({snap_path})", "")
    if found.ram_gib is not None:
        return Capacity(found.ram_gib * 2**30, f"the machine of {found.ram_path}", "")
    from rigcheck.probe.host import probe_host

    host = probe_host()
    if host.memory_total_gib is None:
        return Capacity(None, None, "this machine's RAM is unreadable (/proc/meminfo); pass --from a snapshot")
    return Capacity(host.memory_total_gib * 2**30, "this machine (/proc/meminfo)", "")


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


def build_comm_plan(  # noqa: PLR0917 - the command's options, one for one
    params: str,
    gpus: int,
    strategy: str,
    dtype: str,
    busbw: float | None,
    source: Path | Sequence[Path] | None,
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
) -> CommPlan:
    """The document `rigcheck plan` prints, from its options as given. UsageError / InputError for bad ones.

    ``nvme_free``: bytes free under --nvme-path and that path (the command reads it)."""
    if strategy not in STRATEGIES:
        raise UsageError(f"--strategy {strategy!r}: choose one of {', '.join(STRATEGIES)}")
    if dtype not in DTYPES:
        raise UsageError(f"--dtype {dtype!r}: choose one of {', '.join(DTYPES)}")
    if offload is not None:
        check_offload(strategy, offload)
    elif nodes != 1 or largest_layer is not None or nvme_free is not None:
        raise UsageError("--nodes, --largest-layer and --nvme-path go with --offload")
    sources = [source] if isinstance(source, Path) else list(source or [])
    if busbw is not None and sources and offload is None:
        raise UsageError("give --busbw or --from, not both")
    found = OffloadSources()
    plain: list[Path] = []
    for path in sources:
        doc = _bench_json(path)
        if doc is None:
            plain.append(path)
        elif offload is None:
            raise UsageError(f"--from {path}: a bench {doc['benchmark']} result is read with --offload")
        else:
            _read_offload_doc(doc, path, found)
    if len(plain) > 1:
        raise UsageError("--from: one all-reduce bench result or snapshot at a time (beside bench hostlink / nvme)")
    if busbw is not None and plain:
        raise UsageError("give --busbw or --from, not both")
    bw, bw_src, snap = busbw, None, None
    if plain:
        bw, bw_src, snap = read_plan_source(plain[0])
    stated: list[str] = []
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
            ram=_ram(snap, str(plain[0]) if plain else None, found),
            nvme_free=free,
            host_link=found.host_link,
            nvme_bw=found.nvme_bw,
            compute_time_s=plan.compute_time_s,
            compute_reason=plan.compute_time_reason or "no compute time in the plan",
        )
    return plan

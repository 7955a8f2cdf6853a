"""What `rigcheck plan` runs: its options read (a bench result or a snapshot from --from, the default tokens),
the plan made, and the guide's explanation added when asked: one ``rigcheck.plan/1`` document."""

from __future__ import annotations

import json
from pathlib import Path

from rigcheck.errors import InputError, UsageError
from rigcheck.model import Snapshot
from rigcheck.model.plan import CommPlan
from rigcheck.plan.comm import DTYPES, STRATEGIES, busbw_from_bench, parse_params, plan_comm

# The guide's batch, when --tokens is not given: 4 sequences x 1024 tokens per GPU per step.
DEFAULT_TOKENS = 4096
DEFAULT_TOKENS_NOTE = "tokens per GPU per step: 4096 (the guide's batch: 4 sequences x 1024 tokens); set --tokens"


def read_plan_source(source: Path) -> tuple[float | None, str | None, Snapshot | None]:
    """--from: a bench result (its all-reduce busbw and where it came from), or anything `--from` reads
    elsewhere (a snapshot, topo -m ...) as a snapshot."""
    from rigcheck.probe.from_file import load_file, read_text

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


def build_comm_plan(  # noqa: PLR0917 - the command's options, one for one
    params: str,
    gpus: int,
    strategy: str,
    dtype: str,
    busbw: float | None,
    source: Path | None,
    link: str | None,
    gpu: str | None,
    tokens: int | None,
    tflops: float | None,
    *,
    explain_guide: bool = False,
) -> CommPlan:
    """The document `rigcheck plan` prints, from its options as given. UsageError / InputError for bad ones."""
    if strategy not in STRATEGIES:
        raise UsageError(f"--strategy {strategy!r}: choose one of {', '.join(STRATEGIES)}")
    if dtype not in DTYPES:
        raise UsageError(f"--dtype {dtype!r}: choose one of {', '.join(DTYPES)}")
    if busbw is not None and source is not None:
        raise UsageError("give --busbw or --from, not both")
    bw, bw_src, snap = busbw, None, None
    if source is not None:
        bw, bw_src, snap = read_plan_source(source)
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
    return plan

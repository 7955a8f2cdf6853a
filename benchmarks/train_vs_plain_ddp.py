"""rigcheck's `bench train` beside a plain torch DDP loop of the same shape, and the H100 reference figures.

The issue's target: rigcheck's train within 3% of a plain DDP loop (gpt2 124M from GPT2Config(), random
weights, batch 4 x 1024 tokens, AdamW, 200 steps, DDP). Reference figures, plain torch + transformers
on one NVIDIA H100 80GB HBM3 (DDP world 1), from shared/gpu-evidence/h100-2026-11-22 (README.md and
gpt2-ddp-1gpu.jsonl): 20.15 s fp32, 8.54 s bf16 autocast.

Run:  python benchmarks/train_vs_plain_ddp.py [--bf16] [--world-size N] [--repeats R]     (GPU, NCCL)
      python benchmarks/train_vs_plain_ddp.py --tiny --cpu                                 (this laptop, gloo)
Prints one table: the plain loop's and rigcheck's train_runtime (median of R runs, alternated), the ratio,
and the reference figure where one exists. Both sides time the same span: from after a barrier before
the first step to after the last step has finished on the device.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

import torch  # noqa: TID251 — a benchmark script, not the library
import torch.distributed as dist  # noqa: TID251
import torch.multiprocessing as mp  # noqa: TID251
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: TID251
from transformers import GPT2Config, GPT2LMHeadModel, logging

from rigcheck.bench.train import run_train

logging.set_verbosity_error()

# From shared/gpu-evidence/h100-2026-11-22 (plain torch + transformers, 1 x H100, DDP world 1, 200 steps).
REFERENCE_S = {"fp32": 20.15, "bf16": 8.54}


def plain_ddp(rank: int, world: int, rendezvous: str, args: argparse.Namespace, out: str) -> None:
    """The loop a user would write: gpt2 from its config, DDP, AdamW, random tokens, 200 steps."""
    pg = {"init_method": rendezvous, "rank": rank, "world_size": world, "timeout": timedelta(seconds=300)}
    if args.cpu:
        os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")  # one host: gloo over loopback (as rigcheck's launcher)
        torch.set_num_threads(max(1, len(os.sched_getaffinity(0)) // world))  # as rigcheck does on CPU
        device = torch.device("cpu")
        dist.init_process_group("gloo", **pg)
    else:
        torch.cuda.set_device(rank)
        device = torch.device("cuda", rank)
        dist.init_process_group("nccl", device_id=device, **pg)
    if args.tiny:
        config = GPT2Config(
            n_layer=2, n_embd=64, n_head=2, n_positions=128, vocab_size=512, bos_token_id=511, eos_token_id=511
        )
        batch, seq, steps, lr = 2, 64, args.steps or 10, 1e-3
    else:
        config = GPT2Config()
        batch, seq, steps, lr = 4, 1024, args.steps or 200, 5e-5
    torch.manual_seed(0)
    model = GPT2LMHeadModel(config).to(device)
    model.train()
    ddp = DDP(model, device_ids=None if args.cpu else [rank])
    opt = torch.optim.AdamW(ddp.parameters(), lr=lr)
    data = torch.randint(0, config.vocab_size, (min(steps, 64), batch, seq), device=device)

    dist.barrier()
    if not args.cpu:
        torch.cuda.synchronize()
    start = time.perf_counter()
    for step in range(steps):
        x = data[step % len(data)]
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=args.bf16):
            loss = ddp(input_ids=x, labels=x).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    if not args.cpu:
        torch.cuda.synchronize()
    runtime = torch.tensor([time.perf_counter() - start], dtype=torch.float64, device=device)
    dist.all_reduce(runtime, op=dist.ReduceOp.MAX)
    if rank == 0:
        Path(out).write_text(str(runtime.item()))
    del ddp, opt  # DDP's reducer goes before its process group: the other order can hang at exit with gloo
    dist.barrier()
    dist.destroy_process_group()


def spawn_plain(args: argparse.Namespace, world: int) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "runtime")
        rendezvous = "file://" + os.path.join(tmp, "rendezvous")  # no port to race for
        mp.spawn(plain_ddp, args=(world, rendezvous, args, out), nprocs=world, join=True)
        return float(Path(out).read_text())


def time_plain(args: argparse.Namespace, world: int) -> float:
    """The plain loop in a fresh interpreter each time, as a user's script would run (and apart from rigcheck's)."""
    cmd = [sys.executable, __file__, "--plain-only", "--world-size", str(world), "--timeout", str(args.timeout)]
    cmd += [flag for flag, on in (("--cpu", args.cpu), ("--tiny", args.tiny), ("--bf16", args.bf16)) if on]
    if args.steps:
        cmd += ["--steps", str(args.steps)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout, check=False)
    if proc.returncode != 0:
        sys.exit(f"the plain loop failed: {proc.stderr.strip().splitlines()[-1:]}")
    return float(proc.stdout.strip().splitlines()[-1])


def time_rigcheck(args: argparse.Namespace, world: int) -> float:
    doc = run_train(
        cpu=args.cpu, world_size=world, steps=args.steps, bf16=args.bf16, tiny=args.tiny, timeout_s=args.timeout
    )
    if doc["error"] or not doc["results"]:
        sys.exit(f"rigcheck's run failed: {doc['error']}")
    return float(doc["results"][0]["train_runtime_s"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cpu", action="store_true", help="gloo on CPU processes")
    parser.add_argument("--tiny", action="store_true", help="the 2-layer CI model on 2 x 64 tokens")
    parser.add_argument("--bf16", action="store_true", help="bf16 autocast (default fp32)")
    parser.add_argument("--world-size", type=int, default=None, help="default: 1 GPU (as the reference), 2 on CPU")
    parser.add_argument("--steps", type=int, default=None, help="default 200 (tiny: 10)")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each, alternated; the median counts")
    parser.add_argument("--timeout", type=float, default=1800.0)
    parser.add_argument("--plain-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    world = args.world_size or (2 if args.cpu else 1)
    if args.plain_only:
        print(spawn_plain(args, world))
        return

    plain: list[float] = []
    ours: list[float] = []
    for i in range(args.repeats):
        # alternate which goes first, so clocks and heat left by one run do not always favour the same side
        if i % 2 == 0:
            plain.append(time_plain(args, world))
            ours.append(time_rigcheck(args, world))
        else:
            ours.append(time_rigcheck(args, world))
            plain.append(time_plain(args, world))
        print(f"run {i + 1}/{args.repeats}: plain {plain[-1]:.3f} s, rigcheck {ours[-1]:.3f} s", file=sys.stderr)
    p, r = statistics.median(plain), statistics.median(ours)
    dtype = "bf16" if args.bf16 else "fp32"
    shape = "tiny 2 x 64" if args.tiny else "gpt2 4 x 1024"
    steps = args.steps or (10 if args.tiny else 200)
    full_reference = not args.tiny and steps == 200 and world == 1
    ref = f"{REFERENCE_S[dtype]:.2f}" if full_reference else "-"
    backend = "gloo/CPU" if args.cpu else "NCCL/GPU"
    print(f"{shape}, {dtype}, {steps} steps, world {world}, {backend}; median of {args.repeats}")
    print(f"{'':28} {'plain DDP (s)':>14} {'rigcheck (s)':>13} {'rigcheck/plain':>15} {'H100 reference (s)':>19}")
    print(f"{'train_runtime':28} {p:14.3f} {r:13.3f} {r / p:15.3f} {ref:>19}")
    print(f"{'all runs, plain':28} " + " ".join(f"{t:.3f}" for t in plain))
    print(f"{'all runs, rigcheck':28} " + " ".join(f"{t:.3f}" for t in ours))
    print("target: rigcheck/plain <= 1.03 (issue 4); reference from shared/gpu-evidence/h100-2026-11-22")


if __name__ == "__main__":
    main()

"""What the telemetry sampler costs: CPU time of its thread as a share of one core, and µs per poll.

Target (issue #5): at 10 Hz on 8 GPUs, well under 1% of a core. Reference: one poll of power + temperature
+ clock + reasons takes 6.8 µs per GPU through NVML on an H100 (../shared/gpu-evidence/h100-2026-11-22).
That figure is four raw C calls; rigcheck's poll makes about eight per GPU through pynvml's Python
wrappers, so its µs per GPU is expected to be well above it: the column is there for scale, and the
verdict is on the CPU share alone.

Runs the sampler for a few seconds on 8 fake GPUs (tests/support/fakenvml.py: a pure-Python NVML, so the poll
cost is rigcheck's own Python plus the fake's bookkeeping), and on the real NVML when a GPU is present.
Run from the repository root:  python benchmarks/sampler_overhead.py [--seconds S] [--interval S]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # for tests.support.fakenvml

from rigcheck.errors import ProbeError
from rigcheck.monitor.sampler import Sampler
from rigcheck.probe.nvml import NvmlPoller

TARGET_PERCENT = 1.0
NVML_REFERENCE_US_PER_GPU = 6.8


def measure(poller: NvmlPoller, seconds: float, interval_s: float) -> dict[str, Any]:
    sampler = Sampler(poller, interval_s=interval_s)
    sampler.start()
    sampler._stop.wait(seconds)  # the benchmark's own sleep, interruptible like the sampler's
    sampler.stop()
    st = sampler.stats
    gpus = len(poller.gpus)
    mean = st.poll_us_mean or 0.0
    return {
        "gpus": gpus,
        "polls": st.polls,
        "missed": st.missed_deadlines,
        "cpu_percent": 100.0 * st.cpu_s / seconds,
        "poll_us_mean": mean,
        "poll_us_max": st.poll_us_max,
        "us_per_gpu": mean / gpus if gpus else 0.0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--interval", type=float, default=0.1)
    args = parser.parse_args()

    from tests.support.fakenvml import SCENARIOS

    rows: list[tuple[str, dict[str, Any] | None, str]] = []
    lib = SCENARIOS["healthy_8x_h100_nvlink"]()
    with NvmlPoller(lib) as poller:
        before = len(lib.calls)
        poller.poll(0.0)
        calls = len(lib.calls) - before
        rows.append(("fake NVML, 8 GPUs", measure(poller, args.seconds, args.interval), f"{calls // 8} NVML calls/GPU"))
    try:
        with NvmlPoller() as real:
            rows.append((f"real NVML, {len(real.gpus)} GPU(s)", measure(real, args.seconds, args.interval), ""))
    except ProbeError as exc:
        rows.append(("real NVML", None, f"not measured: {exc}"))

    hz = 1.0 / args.interval
    print(f"sampler at {hz:g} Hz for {args.seconds:g} s; target: well under {TARGET_PERCENT:g}% of one core")
    header = (
        f"{'backend':<24} {'polls':>5} {'missed':>6} {'CPU % of a core':>15} {'µs/poll':>8} {'max µs':>8}"
        f" {'µs/GPU':>7} {'raw NVML, 4 calls':>17}  verdict (CPU share)"
    )
    print(header)
    for label, r, extra in rows:
        if r is None:
            print(f"{label:<24} {extra}")
            continue
        verdict = "ok" if r["cpu_percent"] < TARGET_PERCENT else "OVER TARGET"
        print(
            f"{label:<24} {r['polls']:>5} {r['missed']:>6} {r['cpu_percent']:>15.3f} {r['poll_us_mean']:>8.1f}"
            f" {r['poll_us_max']:>8.1f} {r['us_per_gpu']:>7.1f} {NVML_REFERENCE_US_PER_GPU:>17.1f}  {verdict}"
            + (f"  ({extra})" if extra else "")
        )


if __name__ == "__main__":
    main()

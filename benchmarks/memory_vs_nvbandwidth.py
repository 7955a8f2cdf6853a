"""rigcheck's membw and hostlink beside nvbandwidth's figures on an H100 SXM (PCIe Gen5 x16).

Targets (issue #4): >= 95% of nvbandwidth's device_local_copy (1489.5 GB/s) and of its copy-engine
host->device / device->host figures (49.47 / 54.36 GB/s).
Run:  python benchmarks/memory_vs_nvbandwidth.py [--repeats N]
Prints one line per figure: rigcheck's median, the reference, the ratio and the verdict (plain-torch figures
taken on the same machine are shown for the rows nvbandwidth has no test for). Without a GPU it says so and
runs the CPU path of membw (small sizes, no reference) so the script itself is exercised.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from rigcheck.bench.device.common import MIB
from rigcheck.bench.device.hostlink import run_hostlink
from rigcheck.bench.device.membw import run_membw
from rigcheck.bench.env import require_torch

SOURCE = "shared/gpu-evidence/h100-2026-11-22 (nvbandwidth v0.8, mamf-finder)"
REFERENCE_GPU = "NVIDIA H100 80GB HBM3"
TARGET = 0.95
# nvbandwidth v0.8 on the reference machine (GB/s, bytes copied once). Source: SOURCE.
NVB_DEVICE_LOCAL_COPY = 1489.5
NVB_H2D_CE = 49.47
NVB_D2H_CE = 54.36
# Plain torch on the same machine, 1 GiB, CUDA events (no nvbandwidth test for pageable memory). Source: SOURCE.
TORCH_H2D_PAGEABLE = 22.2


def _note(message: str) -> None:
    sys.stderr.write(f"  {message}\n")


def _line(label: str, ours: float | None, ref: float | None, ref_name: str, checked: bool) -> bool:
    """Print one comparison; True unless it is a checked figure below the target."""
    if ours is None:
        print(f"{label:<44} {'-':>10} {ref or '-':>10} {'-':>7}  not measured")
        return not checked
    ratio = ours / ref if ref else None
    ok = ratio is None or ratio >= TARGET or not checked
    verdict = ("PASS" if ok else "FAIL") if checked and ratio is not None else "info"
    ratio_text = f"{ratio:.3f}" if ratio is not None else "-"
    ref_text = f"{ref:.2f}" if ref is not None else "-"
    print(f"{label:<44} {ours:>10.2f} {ref_text:>10} {ratio_text:>7}  {verdict} ({ref_name})")
    return ok


def _pick(rows: list[dict[str, Any]], direction: str, memory: str, bound: bool) -> float | None:
    for r in rows:
        if (r["direction"], r["memory"], r["numa_bound"], r["gpu"]) == (direction, memory, bound, 0):
            value = r["gbps"]
            return float(value) if value is not None else None
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--repeats", type=int, default=None)
    args = parser.parse_args()

    torch: Any = require_torch()
    if not torch.cuda.is_available():
        print("no CUDA GPU here: running membw's CPU path (small sizes) so the script is exercised; no reference")
        print("hostlink needs an NVIDIA GPU: skipped")
        doc = run_membw(cpu=True, sizes=[4 * MIB, 64 * MIB], repeats=args.repeats, on_progress=_note)
        print(f"{'size':>10} {'copy GB/s':>10} {'read+write GB/s':>16} {'correct':>8}")
        for r in doc["results"]:
            print(f"{r['size_bytes']:>10} {r['copy_gbps']:>10.2f} {r['read_write_gbps']:>16.2f} {r['correct']!s:>8}")
        return

    name = torch.cuda.get_device_name(0)
    if name != REFERENCE_GPU:
        print(f"warning: this GPU is {name!r}; the reference figures were taken on an {REFERENCE_GPU}")
    mem = run_membw(repeats=args.repeats, on_progress=_note)
    host = run_hostlink(gpus=[0], repeats=args.repeats or 5, on_progress=_note)
    copy = mem["results"][0] if mem["results"] else None
    rows = host["results"]
    print(f"reference: {SOURCE}; target >= {TARGET} of the nvbandwidth figures")
    print(f"{'figure (GPU 0)':<44} {'rigcheck':>10} {'reference':>10} {'ratio':>7}")
    ok = _line(
        "device-local copy 1 GiB, GB/s copied once",
        copy["copy_gbps"] if copy else None,
        NVB_DEVICE_LOCAL_COPY,
        "nvbandwidth device_local_copy",
        True,
    )
    ok &= _line(
        "host->GPU pinned, GB/s",
        _pick(rows, "h2d", "pinned", False),
        NVB_H2D_CE,
        "nvbandwidth host_to_device_memcpy_ce",
        True,
    )
    ok &= _line(
        "GPU->host pinned, GB/s",
        _pick(rows, "d2h", "pinned", False),
        NVB_D2H_CE,
        "nvbandwidth device_to_host_memcpy_ce",
        True,
    )
    _line("host->GPU pageable, GB/s", _pick(rows, "h2d", "pageable", False), TORCH_H2D_PAGEABLE, "plain torch", False)
    _line("GPU->host pageable, GB/s", _pick(rows, "d2h", "pageable", False), None, "no reference", False)
    for direction, memory in (("h2d", "pinned"), ("d2h", "pinned"), ("h2d", "pageable"), ("d2h", "pageable")):
        bound = _pick(rows, direction, memory, True)
        if bound is not None:
            _line(f"{direction} {memory}, NUMA-bound, GB/s", bound, None, "no reference", False)
    theoretical = rows[0]["pcie_theoretical_gbps"] if rows else None
    print(f"PCIe theoretical per direction ({rows[0]['pcie_link'] if rows else '-'}): {theoretical} GB/s")
    for line in host.get("notes", []):
        if line.startswith("GPU 0:"):
            print(line)
    if mem["error"]:
        print(f"membw error: {mem['error']}")
    sys.exit(0 if ok and not mem["error"] else 1)


if __name__ == "__main__":
    main()

"""`rigcheck bench nvme` beside dd (and fio where installed) on the same directory, in the same run.

Check (issue #16): rigcheck's read and write figures within 30% of `dd ... iflag=direct` / `oflag=direct` with
1 MiB blocks, or of fio where installed. rigcheck's headline rows (nvme_read / nvme_write) are dd's passes:
1 MiB, one request at a time, the write into a new file (truncated first, so block allocation is inside the
timing, as dd's). Its sweep (4 requests in flight) overwrites the laid-out file, as fio does; it is held
against fio at the same queue depth where fio is installed, and against dd conv=notrunc (an overwrite).

Run:  python benchmarks/nvme_vs_dd.py [--path DIR] [--size 1G]
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

TOLERANCE = 0.30
_DD_RATE = re.compile(r"(\d+) bytes .* copied, ([0-9.]+) s")


def rigcheck(path: Path, size: str, *extra: str) -> dict[str, float]:
    """The rows of one `rigcheck bench nvme --json` run, name -> GB/s."""
    argv = [sys.executable, "-m", "rigcheck", "bench", "nvme", "--path", str(path), "--size", size, "--json", *extra]
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"rigcheck failed ({proc.returncode}): {proc.stderr.strip()[-500:]}")
    doc: dict[str, Any] = json.loads(proc.stdout)
    return {r["name"]: float(r["value"]) for r in doc["results"]}


def dd(args: list[str]) -> float:
    """GB/s (1e9) from dd's summary line."""
    proc = subprocess.run(["dd", *args], capture_output=True, text=True, check=True)
    m = _DD_RATE.search(proc.stderr)
    if m is None:
        raise SystemExit(f"cannot read dd's output: {proc.stderr!r}")
    return int(m.group(1)) / float(m.group(2)) / 1e9


def fio(target: Path, rw: str, count: int) -> float | None:
    """fio at rigcheck's 1 MiB row settings (libaio, 4 in flight, direct); None without fio."""
    if shutil.which("fio") is None:
        return None
    argv = ["fio", "--name=nvme", f"--filename={target}", f"--rw={rw}", "--bs=1M", f"--size={count}M",
            "--direct=1", "--ioengine=libaio", "--iodepth=4", "--output-format=json"]  # fmt: skip
    out = json.loads(subprocess.run(argv, capture_output=True, text=True, check=True).stdout)
    job = out["jobs"][0]["read" if rw == "read" else "write"]
    return float(job["bw_bytes"]) / 1e9


def line(label: str, ours: float | None, ref: float | None, ref_name: str) -> bool:
    if ours is None or ref is None:
        print(f"{label:<38} {'-':>8} {ref_name:<26} {'-' if ref is None else f'{ref:.3f}':>8}  not measured")
        return True
    ratio = ours / ref
    ok = abs(ratio - 1) <= TOLERANCE
    print(f"{label:<38} {ours:>8.3f} {ref_name:<26} {ref:>8.3f}  x{ratio:.2f} {'ok' if ok else 'OFF'}")
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--path", type=Path, default=Path("."))
    parser.add_argument("--size", default="1G", help="1G: dd's count=1024 of 1 MiB")
    args = parser.parse_args()
    count = int(args.size.rstrip("Gg")) * 1024 if args.size.upper().endswith("G") else 1024
    target = args.path / ".nvme_vs_dd.tmp"
    try:
        default = rigcheck(args.path, args.size)
        dd_write = dd(["if=/dev/zero", f"of={target}", "bs=1M", f"count={count}", "oflag=direct"])
        dd_read = dd([f"if={target}", "of=/dev/null", "bs=1M", "iflag=direct"])
        dd_overwrite = dd(["if=/dev/zero", f"of={target}", "bs=1M", f"count={count}", "oflag=direct", "conv=notrunc"])
        fio_write, fio_read = fio(target, "write", count), fio(target, "read", count)
    finally:
        target.unlink(missing_ok=True)
    left = [p.name for p in args.path.iterdir() if p.name.startswith(".rigcheck-nvme")]
    print(f"{'GB/s (1e9 B/s)':<38} {'rigcheck':>8} {'reference':<26} {'value':>8}  ratio")
    ok = line("nvme_read (1 MiB, QD 1, as dd)", default.get("nvme_read"), dd_read, "dd iflag=direct")
    ok &= line("nvme_write (1 MiB, QD 1, new file)", default.get("nvme_write"), dd_write, "dd oflag=direct")
    line("write 1 MiB QD 4 (overwrite)", default.get("nvme_write_direct_1m"), dd_overwrite, "dd oflag=direct notrunc")
    line("read 1 MiB QD 4", default.get("nvme_read_direct_1m"), fio_read, "fio libaio iodepth 4")
    line("write 1 MiB QD 4", default.get("nvme_write_direct_1m"), fio_write, "fio libaio iodepth 4")
    print(f"buffered (page cache possible): read {default.get('nvme_read_buffered', 0):.3f}, "
          f"write {default.get('nvme_write_buffered', 0):.3f}")  # fmt: skip
    print(f"files left by rigcheck: {left or 'none'}")
    return 0 if ok and not left else 1


if __name__ == "__main__":
    raise SystemExit(main())

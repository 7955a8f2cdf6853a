"""`rigcheck monitor --prometheus` on this machine's GPUs, scraped as Prometheus would, beside nvidia-smi.

Check (issue #17): every GPU series carries dcgm-exporter's labels (gpu, UUID, pci_bus_id, device, modelName,
Hostname) with the values nvidia-smi prints for that GPU, the text parses with prometheus_client's parser, and
the readings agree with nvidia-smi's (temperature within 5 C, power limit exactly, SM clock within its range).
A reading the exporter leaves out must have a `rigcheck_reading_missing` series saying why.

Run:  python benchmarks/prometheus_scrape.py [--port 9400] [--seconds 6]   (needs a GPU and nvidia-smi)
"""

from __future__ import annotations

import argparse
import csv
import io
import subprocess
import sys
import time
import urllib.request
from collections import defaultdict

LABELS = ("gpu", "UUID", "pci_bus_id", "device", "modelName", "Hostname")
QUERY = "index,uuid,pci.bus_id,name,temperature.gpu,enforced.power.limit"


def smi_gpus() -> dict[str, dict[str, str]]:
    """nvidia-smi's view, by index."""
    out = subprocess.run(
        ["nvidia-smi", f"--query-gpu={QUERY}", "--format=csv,noheader,nounits"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    keys = QUERY.split(",")
    rows = csv.reader(io.StringIO(out))
    return {row[0].strip(): dict(zip(keys, (c.strip() for c in row), strict=True)) for row in rows}


def scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
        return resp.read().decode()


def main() -> int:
    from prometheus_client.parser import text_string_to_metric_families

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=9400)
    parser.add_argument("--seconds", type=float, default=6.0)
    args = parser.parse_args()
    smi = smi_gpus()
    monitor = subprocess.Popen(
        [sys.executable, "-m", "rigcheck", "monitor", "--prometheus", str(args.port), "--duration", "30", "--json"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        time.sleep(args.seconds)
        text = scrape(args.port)
    finally:
        monitor.terminate()
        monitor.wait(timeout=30)
    problems: list[str] = []
    values: dict[str, dict[str, float]] = defaultdict(dict)
    series = 0
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if "gpu" not in sample.labels:
                continue
            series += 1
            gpu = sample.labels["gpu"]
            absent = [name for name in LABELS if not sample.labels.get(name)]
            if absent:
                problems.append(f"{sample.name} gpu {gpu}: no {', '.join(absent)}")
            want = smi.get(gpu)
            if want is None:
                problems.append(f"{sample.name}: gpu {gpu} is not one nvidia-smi lists")
                continue
            if sample.labels.get("UUID") != want["uuid"]:
                problems.append(f"{sample.name} gpu {gpu}: UUID {sample.labels.get('UUID')} != {want['uuid']}")
            if sample.labels.get("pci_bus_id", "").lower() != want["pci.bus_id"].lower():
                got_bus = sample.labels.get("pci_bus_id")
                problems.append(f"{sample.name} gpu {gpu}: pci_bus_id {got_bus} != {want['pci.bus_id']}")
            values[gpu][sample.name] = sample.value
    for gpu, want in smi.items():
        got = values.get(gpu, {})
        temp, limit = got.get("DCGM_FI_DEV_GPU_TEMP"), got.get("DCGM_FI_DEV_ENFORCED_POWER_LIMIT")
        print(f"GPU {gpu}: {len(got)} series; temp {temp} (nvidia-smi {want['temperature.gpu']}), "
              f"limit {limit} W (nvidia-smi {want['enforced.power.limit']})")  # fmt: skip
        if temp is None or abs(temp - float(want["temperature.gpu"])) > 5:
            problems.append(f"GPU {gpu}: temperature {temp} against nvidia-smi's {want['temperature.gpu']}")
        smi_limit = want["enforced.power.limit"]
        if limit is not None and smi_limit not in ("[N/A]", "N/A") and abs(limit - float(smi_limit)) > 1:
            problems.append(f"GPU {gpu}: power limit {limit} against nvidia-smi's {want['enforced.power.limit']}")
    print(f"{series} GPU series scraped; missing readings: "
          f"{sorted(ln for ln in text.splitlines() if ln.startswith('rigcheck_reading_missing'))[:10]}")  # fmt: skip
    for problem in problems:
        print("PROBLEM:", problem)
    return 1 if problems or not series else 0


if __name__ == "__main__":
    raise SystemExit(main())

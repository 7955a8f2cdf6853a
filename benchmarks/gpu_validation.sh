#!/usr/bin/env bash
# Every check that needs a real GPU, in one run, for docs/gpu-validation.md. Usage:
#   bash benchmarks/gpu_validation.sh OUTDIR
# Writes each command's output to OUTDIR and prints a summary. Nothing here changes the card's settings.
set -uo pipefail
out=${1:?usage: gpu_validation.sh OUTDIR}
mkdir -p "$out"
run() {  # run NAME CMD...: keep stdout+stderr and the exit code
    local name=$1; shift
    echo "== $name: $*"
    ( time "$@" ) >"$out/$name.txt" 2>&1
    echo "exit $?" | tee -a "$out/$name.txt"
}
nvidia-smi -q -x >"$out/smi-q.xml" 2>&1
nvidia-smi -q >"$out/smi-q.txt" 2>&1
run doctor          rigcheck doctor --html "$out/doctor.html"
run snapshot        rigcheck snapshot -o "$out/snapshot.json"
run pytest-gpu      python -m pytest -q -m gpu -p no:cacheprovider
run startup-speed   python benchmarks/startup_speed.py --runs 10
run matmul          python benchmarks/matmul_vs_mamf.py
run memory          python benchmarks/memory_vs_nvbandwidth.py
run allreduce       rigcheck bench allreduce --json --html "$out/allreduce.html"
run train-fp32      python benchmarks/train_vs_plain_ddp.py
run train-bf16      python benchmarks/train_vs_plain_ddp.py --bf16
run burn            rigcheck burn --minutes 1 --csv "$out/burn.csv" --json --html "$out/burn.html"
run sampler         python benchmarks/sampler_overhead.py --seconds 10
grep -H "^exit" "$out"/*.txt

#!/usr/bin/env bash
# The checks that need a real GPU, for docs/gpu-validation.md, one PART at a time. Usage:
#   bash benchmarks/gpu_validation.sh PART [OUTDIR]      PART: probe matmul memory collectives train burn verify fingerprint monitor tests
# Each part fits in 6 minutes (under a 10-minute limit per command) and every step has its own
# timeout; a step that runs over ends with exit 124 and the next step still runs. Everything a part writes
# goes under OUTDIR/PART/ (OUTDIR default gpu-run), with summary.txt: each step's exit code and seconds.
#
# It runs rigcheck from this source tree (python3 -m rigcheck, PYTHONPATH=src), with the machine's own
# python3 (its torch) and nothing installed: what that Python lacks comes as wheels from
# benchmarks/fetch_wheels.sh, found in $WHEELS (default .whl) and unpacked into /tmp/rigcheck-site.
# Nothing here changes the card's settings.
set -uo pipefail
part=${1:?usage: gpu_validation.sh PART [OUTDIR]   (PART: probe matmul memory collectives train burn verify fingerprint monitor tests)}
case $part in probe | matmul | memory | collectives | train | burn | verify | fingerprint | monitor | tests) ;; *)
    echo "unknown part '$part': probe matmul memory collectives train burn verify fingerprint monitor tests" >&2; exit 2 ;;
esac
root=$(cd "$(dirname "$0")/.." && pwd)
out=${2:-gpu-run}/$part
wheels=${WHEELS:-$root/.whl}
site=/tmp/rigcheck-site
cd "$root" || exit 2
mkdir -p "$out"
summary=$out/summary.txt
: >"$summary"

if [ -d "$wheels" ] && [ ! -e "$site/.done" ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$site" \
        "$wheels"/*.whl && touch "$site/.done" || { echo "installing the wheels from $wheels failed" >&2; exit 2; }
fi
export PYTHONPATH="$root/src:$site${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1
if ! python3 -c "import pydantic, typer, rich, pynvml, rigcheck" 2>"$out/imports.txt"; then
    echo "rigcheck cannot be imported (see $out/imports.txt): run benchmarks/fetch_wheels.sh .whl where pip can download and copy .whl here" >&2
    exit 2
fi
rc=(python3 -m rigcheck)

step() {  # step NAME SECONDS CMD...: stdout+stderr to OUTDIR/PART/NAME.txt; exit code and time to summary.txt
    local name=$1 limit=$2; shift 2
    local t0=$SECONDS code
    echo "== $name (limit ${limit}s): $*"
    timeout --kill-after=15 "$limit" "$@" >"$out/$name.txt" 2>&1
    code=$?
    printf '%-16s exit %3d  %4ds  %s\n' "$name" "$code" "$((SECONDS - t0))" "$*" | tee -a "$summary"
}

case $part in
    probe)  # ~2 min: what NVML and nvidia-smi say, the agreement test, the sampler's cost
        step smi-q-xml   60 nvidia-smi -q -x
        step smi-q       60 nvidia-smi -q
        step doctor      90 "${rc[@]}" doctor --html "$out/doctor.html"
        step snapshot    60 "${rc[@]}" snapshot -o "$out/snapshot.json"
        step agreement  120 python3 -m pytest -q -o addopts="-ra --strict-markers" -m gpu -p no:cacheprovider tests/checks/test_gpu_agreement.py
        step sampler     60 python3 benchmarks/sampler_overhead.py --seconds 10
        step startup     60 python3 benchmarks/startup_speed.py --runs 10
        ;;
    matmul)  # ~6 min: the shape sweep against mamf-finder's method, then a quick one on GPU 0 picked by --gpus
        step matmul     330 python3 benchmarks/matmul_vs_mamf.py
        step matmul-gpus 90 "${rc[@]}" bench matmul --quick --gpus 0 --json
        ;;
    memory)  # ~3 min: device copy and host link against nvbandwidth's method
        step memory     180 python3 benchmarks/memory_vs_nvbandwidth.py
        step hostlink   120 "${rc[@]}" bench hostlink --json
        ;;
    collectives)  # ~3 min: NCCL all-reduce (one GPU: busbw 0 by definition) and the P2P comparison
        step allreduce  150 "${rc[@]}" bench allreduce --json --html "$out/allreduce.html"
        step compare    150 "${rc[@]}" bench allreduce --compare-p2p --json
        ;;
    train)  # ~6 min: gpt2 200 steps under rigcheck against a plain DDP loop, fp32 then bf16
        step train-fp32 230 python3 benchmarks/train_vs_plain_ddp.py
        step train-bf16 130 python3 benchmarks/train_vs_plain_ddp.py --bf16
        ;;
    burn)  # ~3 min: one minute of load with the 10 Hz poller, then the trace read back
        step burn       150 "${rc[@]}" burn --minutes 1 --csv "$out/burn.csv" --json --html "$out/burn.html"
        step analyze     60 "${rc[@]}" burn --analyze "$out/burn.csv" --json
        ;;
    verify)  # ~4 min: the verdict at level quick (its own budget: 180 s), then the bands it was judged against
        step verify     240 "${rc[@]}" verify --level quick --json --html "$out/verify.html"
        step prolog      30 "${rc[@]}" verify --level prolog --json   # #29: within 10 s wall on the GPUs
        step prolog-time 90 python3 benchmarks/prolog_time.py --gpu --runs 3
        step explain     30 "${rc[@]}" verify --explain --model "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)"
        ;;
    fingerprint)  # ~5 min: 20 clean fingerprint runs (no false alarm may come), then a flipped bit that must fail
        for i in $(seq -w 1 20); do
            step "clean-$i" 60 "${rc[@]}" verify --only fingerprint --json
        done
        # a flipped exponent bit on GPU 0 must fail (exit 1, the step then exits 0; anything else is a failure)
        step flipped 60 bash -c '"$@"; test $? -eq 1' _ env RIGCHECK_TEST_FLIP=0:1:persistent \
            "${rc[@]}" verify --only fingerprint --json
        ;;
    monitor)  # ~1 min: the Prometheus exporter scraped beside nvidia-smi; the plain CSV read back by burn --analyze
        step prometheus  90 python3 benchmarks/prometheus_scrape.py --seconds 6
        step monitor-csv 40 "${rc[@]}" monitor --duration 10 --csv "$out/monitor.csv" --json
        step csv-read    40 "${rc[@]}" burn --analyze "$out/monitor.csv" --json
        ;;
    tests)  # ~5 min: every gpu-marked test (figures asserted against shared/gpu-evidence on an H100)
        step pytest-gpu 330 python3 -m pytest -q -o addopts="-ra --strict-markers" -m gpu -p no:cacheprovider -rs
        ;;
esac
cat "$summary"
! grep -qv ' exit   0 ' "$summary"  # the script's own exit: 0 only when every step exited 0

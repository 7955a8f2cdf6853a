#!/usr/bin/env bash
# Download the wheels rigcheck needs beside what a GPU machine without internet access already has, for that
# machine's Python (3.12, x86-64 Linux); copy the folder there with the source tree. Usage:
#   bash benchmarks/fetch_wheels.sh .whl
# Then, on that machine, benchmarks/gpu_validation.sh installs them into /tmp/rigcheck-site (never into its
# own Python). The folder is ignored by git (.gitignore: /.whl/); never commit wheels.
set -euo pipefail
dir=${1:?usage: fetch_wheels.sh DIR}
mkdir -p "$dir"
# The dependencies are resolved for the target (with --only-binary pip does so for another platform); the
# floors are pyproject.toml's, jsonschema the dev one the schema tests use.
python3 -m pip download --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 --platform manylinux1_x86_64 --platform any \
    -d "$dir" \
    "pydantic>=2.6" "typer>=0.12" "rich>=13.7" "nvidia-ml-py>=13.580.65" "typing-extensions>=4.6" "prometheus-client>=0.17" \
    "jsonschema>=4.20"
ls "$dir"
du -sh "$dir"

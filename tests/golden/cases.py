"""The command lines whose output is held fixed across refactors: every `--json` document on the real inputs,
one terminal rendering per named test rig (ANSI stripped, fixed width), and the terminal suite: doctor, verify,
fleet, topo and plan as a person reads them at 60, 80 and 160 columns, both piped and on a terminal.

``python -m tests.golden.cases`` (from the repository root) rewrites tests/golden/out/ from the current code;
tests/contracts/test_golden.py runs the same command lines and compares. Change a golden file only in the commit that
changes the documented output (docs/commands.md) on purpose.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
OUT = Path(__file__).resolve().parent / "out"
FIX = "tests/fixtures"
CORPUS = f"{FIX}/corpus"
WIDTH = "160"


@dataclass(frozen=True)
class Case:
    name: str
    argv: tuple[str, ...]
    width: str = WIDTH  # COLUMNS, as a terminal (or a user) sets it
    tty: bool = False  # stdout is a terminal (FORCE_COLOR=1, as rich reads it), not a pipe

    @property
    def is_json(self) -> bool:
        return "--json" in self.argv or self.argv[0] == "snapshot"


def _files(pattern: str) -> list[str]:
    return sorted(str(p.relative_to(ROOT)) for p in ROOT.glob(pattern))


def _stem(path: str) -> str:
    return re.sub(r"[^A-Za-z0-9.-]+", "_", Path(path).name)[:64]


def cases() -> list[Case]:
    """Every case, in a stable order; names are file names under out/."""
    machine_inputs = (
        _files(f"{FIX}/snapshots/*.json")
        + _files(f"{CORPUS}/smi/*.txt")
        + _files(f"{CORPUS}/smi-q/*.txt")
        + _files(f"{CORPUS}/smi-xml/*.xml")
        + _files(f"{CORPUS}/nvlink/*.txt")
        + _files(f"{CORPUS}/smi-err/*.txt")
        + _files(f"{CORPUS}/driver-errors/*.txt")
        + [f"{CORPUS}/h100-vm/{n}" for n in ("q.txt", "q.xml", "nvidia-smi.txt", "nvlink-s.txt", "topo-m.txt")]
    )
    out: list[Case] = []
    for src in machine_inputs:
        for cmd in ("doctor", "power", "thermal", "topo"):
            out.append(Case(f"{cmd}--{_stem(src)}.json", (cmd, "--from", src, "--json")))
        out.append(Case(f"snapshot--{_stem(src)}.json", ("snapshot", "--from", src)))
        out.append(Case(f"doctor-md--{_stem(src)}.md", ("doctor", "--from", src, "--format", "markdown")))
    for src in _files(f"{CORPUS}/topo/*.txt"):
        out.append(Case(f"topo--{_stem(src)}.json", ("topo", "--from", src, "--json")))
        out.append(Case(f"doctor--{_stem(src)}.json", ("doctor", "--from", src, "--json")))
    for src in _files(f"{FIX}/snapshots/*.json"):  # the named test rigs, as a person reads them
        for cmd in ("doctor", "power", "thermal", "topo"):
            out.append(Case(f"{cmd}--{_stem(src)}.txt", (cmd, "--from", src)))
    for src in _files(f"{CORPUS}/topo/*.txt")[:6]:
        out.append(Case(f"topo--{_stem(src)}.txt", ("topo", "--from", src)))
    for src in _files(f"{CORPUS}/kernel-log/*.txt"):  # Xid/SXid events: the doctor's verdict and the events read
        out.append(Case(f"doctor--{_stem(src)}.json", ("doctor", "--from", src, "--json")))
        out.append(Case(f"snapshot--{_stem(src)}.json", ("snapshot", "--from", src)))
    for src in [  # issue #11: fabric, recovery action, NVLink error counters, Fabric Manager
        *_files(f"{CORPUS}/smi-q-fabric/*.txt")[:2],  # the third is --query-gpu CSV: not a snapshot input
        *_files(f"{CORPUS}/nvlink-errors/201-*.txt"),
        *_files(f"{CORPUS}/fabricmanager/*.txt"),
    ]:
        out.append(Case(f"doctor--{_stem(src)}.json", ("doctor", "--from", src, "--json")))
        out.append(Case(f"snapshot--{_stem(src)}.json", ("snapshot", "--from", src)))
    for src in [
        *_files(f"{CORPUS}/nccl-log/*.txt"),
        *_files(f"{FIX}/nccl-extra/*.txt"),
        f"{CORPUS}/h100-vm/nccl-info-1rank-gpt2-ddp.txt",
    ]:
        out.append(Case(f"nccl-log--{_stem(src)}.json", ("nccl-log", src, "--json")))
        out.append(Case(f"nccl-log--{_stem(src)}.txt", ("nccl-log", src)))
    traces = [*_files(f"{CORPUS}/telemetry/*.csv"), *_files(f"{FIX}/traces/*.csv"), f"{CORPUS}/h100-vm/query.csv"]
    for src in traces:
        out.append(Case(f"burn-analyze--{_stem(src)}.json", ("burn", "--analyze", src, "--json")))
        out.append(Case(f"burn-analyze--{_stem(src)}.txt", ("burn", "--analyze", src)))
    h100_topo = f"{CORPUS}/topo/007-8xh100-nv18-2numa-no-nics-spaces.txt"
    plans = {
        "gpt2-ddp": ("--params", "gpt2", "--gpus", "2"),
        "124m-zero3-titan": ("--params", "124M", "--gpus", "2", "--strategy", "zero3", "--gpu", "TITAN RTX"),
        "7b-fsdp-busbw": ("--params", "7B", "--gpus", "8", "--strategy", "fsdp", "--busbw", "120", "--dtype", "bf16"),
        "1.3b-zero2-link": ("--params", "1.3B", "--gpus", "4", "--strategy", "zero2", "--link", "PCIe3x16"),
        "gpt2-guide": ("--params", "gpt2", "--gpus", "2", "--link", "NV2", "--gpu", "TITAN RTX", "--explain-guide"),
        "topo-h100": ("--params", "7B", "--gpus", "8", "--from", h100_topo),
        "snap-titan": ("--params", "124M", "--gpus", "2", "--from", f"{FIX}/snapshots/2x-titan-rtx-nv2.json"),
    }
    for name, args in plans.items():
        out.append(Case(f"plan--{name}.json", ("plan", *args, "--json")))
        out.append(Case(f"plan--{name}.txt", ("plan", *args)))
    power_plans = {
        "2-titan": ("--gpu", "TITAN RTX", "--count", "2"),
        "2-titan-psu": ("--gpu", "TITAN RTX", "--count", "2", "--psu-watts", "1000"),
        "4-4090-small-psu": ("--gpu", "RTX 4090", "--count", "4", "--psu-watts", "1200"),
        "8-h100": ("--gpu", "H100 SXM", "--count", "8"),
    }
    for name, args in power_plans.items():
        out.append(Case(f"power-plan--{name}.json", ("power", "plan", *args, "--json")))
        out.append(Case(f"power-plan--{name}.txt", ("power", "plan", *args)))
    # several --from files combined into one snapshot (readers/merge.py); same machine unless the name says not
    combined = {
        "h100-xml-topo": ("doctor", f"{CORPUS}/h100-vm/q.xml", f"{CORPUS}/h100-vm/topo-m.txt"),
        "h100-all": (
            "snapshot",
            *(f"{CORPUS}/h100-vm/{n}" for n in ("q.xml", "topo-m.txt", "nvlink-s.txt", "q.txt", "topo-p2p-r.txt")),
        ),
        "3xa6000-topo-nvlink": (
            "doctor",
            f"{CORPUS}/topo/014-3xa6000-nv4-bridge-pair-plus-pcie-ansi.txt",
            f"{CORPUS}/nvlink/002-3xa6000-bridge-pair-third-inactive.txt",
        ),
        "4xada-table-topo": (
            "snapshot",
            f"{CORPUS}/smi/001-4x-rtx6000ada-575-truncated-names.txt",
            f"{CORPUS}/topo/004-4x-rtx6000ada-node-sys-4nic-spaces.txt",
        ),
        "h100-table-q": (
            "power",
            f"{CORPUS}/smi/003-1xh100-545.txt",
            f"{CORPUS}/smi-q/001-1xh100-545-full-event-reasons-tlimit.txt",
        ),
        "2x5090-topo-p2p": (
            "topo",
            f"{CORPUS}/topo/017-2x5090-phb-tabs.txt",
            f"{CORPUS}/topo-p2p/201-2x5090-p2p-rw-gns-tabs-dr-legend.txt",
        ),
        "a5000-xml-nv2-topo-two-machines": (
            "doctor",
            f"{CORPUS}/smi-xml/005-2xa5000-590-v13.xml",
            f"{CORPUS}/topo/006-2gpu-nv2-minimal-no-legend.txt",
        ),
        "refused-two-machines": (
            "doctor",
            f"{CORPUS}/smi/002-2x2080ti-550.txt",
            f"{CORPUS}/smi-xml/005-2xa5000-590-v13.xml",
        ),
    }
    for name, (cmd, *files) in combined.items():
        argv = (cmd, *(a for f in files for a in ("--from", f)))
        out.append(Case(f"{cmd}--combined-{name}.json", argv if cmd == "snapshot" else (*argv, "--json")))
    two_2080ti = ("--from", f"{CORPUS}/smi/002-2x2080ti-550.txt", "--from", f"{CORPUS}/topo/010-2x2080ti-pix-numa1.txt")
    out.append(Case("doctor--combined-2x2080ti-table-topo.txt", ("doctor", *two_2080ti)))
    out += _saved_judgements()
    out += _terminal_suite()
    return out


TERMINAL_WIDTHS = ("60", "80", "160")


def _terminal_suite() -> list[Case]:
    """The reports a person reads, line for line at three widths, piped and on a terminal (escapes stripped, the
    layout kept): a wrap, a folded column or a cut cell shows here. Named term-COMMAND--INPUT--wWIDTH-MODE.txt."""
    lines = {
        "doctor--2x-3090-phb-throttling": ("doctor", "--from", f"{FIX}/snapshots/2x-3090-phb-throttling.json"),
        "doctor--gpu-lost": ("doctor", "--from", f"{FIX}/snapshots/gpu-lost.json"),
        "verify--h100x8-gpu3-slow": ("verify", "--from", f"{FIX}/verify/h100x8-gpu3-slow"),
        "fleet--4-nodes": ("fleet", "--from", f"{FIX}/fleet/4-nodes"),
        "topo--healthy-8x-h100": ("topo", "--from", f"{FIX}/snapshots/healthy-8x-h100.json"),
        "plan--124m-2gpu-ddp-nv2-titan-rtx": (
            "plan",
            *("--params", "124M", "--gpus", "2", "--strategy", "ddp", "--link", "NV2", "--gpu", "TITAN RTX"),
        ),
    }
    return [
        Case(f"term-{name}--w{width}-{'tty' if tty else 'pipe'}.txt", argv, width, tty)
        for name, argv in lines.items()
        for width in TERMINAL_WIDTHS
        for tty in (False, True)
    ]


def _both(name: str, argv: tuple[str, ...]) -> list[Case]:
    """The JSON document and the terminal report of one command line."""
    return [Case(f"{name}.json", (*argv, "--json")), Case(f"{name}.txt", argv)]


def _saved_judgements() -> list[Case]:
    """What verify, fleet and bench judge from saved outputs (--from), and the bands verify --explain states."""
    calibration = "tests/calibration/cases"
    out: list[Case] = []
    verify_dirs = [  # rigcheck's own saved documents, and saved dcgmi diag outputs (text table and -j JSON)
        *_files(f"{FIX}/verify/*"),
        *(
            f"{calibration}/{name}"
            for name in (
                "dcgmi-4xa10g-r3-all-pass",
                "dcgmi-4xa10g-r3-gpu1-targeted-power-fail",
                "dcgmi-8xh100-r3-fabricmanager-down",
                "dcgm-gb10-r2-dcgm4.5.2-software-fail",
            )
        ),
    ]
    for src in verify_dirs:
        out += _both(f"verify--{_stem(src)}", ("verify", "--from", src))
    out += _both("fleet--4-nodes", ("fleet", "--from", f"{FIX}/fleet/4-nodes"))
    bench = {  # (command, saved output of the reference tool, extra options)
        "allreduce": [
            f"{CORPUS}/nccl-tests/{n}"
            for n in (
                "001-2x2080ti-allreduce-pcie-no-p2p.txt",
                "002-awsbatch-allreduce-mpirun-tag-output.txt",
                "004-gb200-nvl72-2racks-fragment.txt",
            )
        ]
        + [
            f"{FIX}/nccl-tests-extra/{n}"
            for n in (
                "new-allreduce-16xh100-2hosts-markdown.txt",
                "new-allreduce-4xh200-cuda-failure-no-rows.txt",
            )
        ],
        "allgather": [f"{FIX}/nccl-tests-extra/old-allgather-12xv100-dgx2-oob-4-failed.txt"],
        "p2p": [  # nvbandwidth (text and -j JSON) and p2pBandwidthLatencyTest; the 1-GPU run has no pair
            *(p for p in _files(f"{FIX}/reference-tools/nvbandwidth-*") if "1xh100" not in p and "-cut" not in p),
            *_files(f"{FIX}/reference-tools/p2p-*.txt"),
            f"{CORPUS}/p2p/001-2x2080ti-cannot-access-peer.txt",
        ],
        "membw": [f"{FIX}/reference-tools/nvbandwidth-1xh100-vm-v0.8.txt"],
        "matmul": _files(f"{FIX}/mamf/*.txt"),
        "hostlink": [f"{FIX}/reference-tools/nvbandwidth-1xh100-vm-v0.8.txt", *_files(f"{FIX}/bandwidth-test/*.txt")],
    }
    for command, sources in bench.items():
        for src in sources:
            out.append(Case(f"bench-{command}--{_stem(src)}.json", ("bench", command, "--from", src, "--json")))
        out.append(Case(f"bench-{command}--{_stem(sources[0])}.txt", ("bench", command, "--from", sources[0])))
    for gpu in ("H100 SXM5", "A100 SXM4 80GB", "RTX 4090"):
        out += _both(f"verify-explain--{_stem(gpu)}", ("verify", "--explain", "--gpu", gpu))
    return out


# What rich reads to decide whether stdout is a terminal (FORCE_COLOR: https://force-color.org/; TTY_COMPATIBLE
# since rich 14), and the width: each case sets them, whatever the shell running the tests has.
_TERMINAL_ENV = ("COLUMNS", "FORCE_COLOR", "TTY_COMPATIBLE")
# Colour and style (SGR), any other control sequence, and an OSC string such as a hyperlink.
_ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")


@contextlib.contextmanager
def terminal_env(case: Case) -> Iterator[None]:
    """The environment of a user's terminal (or pipe) of ``case.width`` columns, restored afterwards."""
    old = {k: os.environ.get(k) for k in _TERMINAL_ENV}
    for k in _TERMINAL_ENV:
        os.environ.pop(k, None)
    os.environ["COLUMNS"] = case.width
    if case.tty:
        os.environ["FORCE_COLOR"] = "1"
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def run(case: Case) -> tuple[int, str]:
    """Run ``rigcheck ARGV`` in this process from the repository root; (exit code, stdout without escapes)."""
    from rigcheck.cli.app import main

    out, err = io.StringIO(), io.StringIO()
    old_cwd = os.getcwd()
    os.chdir(ROOT)
    code: int | str | None = 0
    try:
        with terminal_env(case), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main(list(case.argv))
            except SystemExit as exc:
                code = exc.code
    finally:
        os.chdir(old_cwd)
    text = _ESCAPES.sub("", out.getvalue())
    if "\x1b" in text:
        raise AssertionError(f"{case.name}: an escape sequence the golden files do not strip")
    return int(code or 0), text


def _without_wall_time(doc: Any) -> Any:
    """``doc`` with every ``elapsed_s`` at 0: how long a run took is the one figure that differs between runs."""
    if isinstance(doc, dict):
        return {k: 0 if k == "elapsed_s" else _without_wall_time(v) for k, v in doc.items()}
    if isinstance(doc, list):
        return [_without_wall_time(v) for v in doc]
    return doc


def record(case: Case) -> str:
    """What a golden file holds: the exit code on the first line, then stdout (JSON re-indented stably; the wall
    time of verify and fleet set to 0)."""
    code, text = run(case)
    if case.is_json and code != 2:
        doc = _without_wall_time(json.loads(text))
        text = json.dumps(doc, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    else:
        text = re.sub(r"\(saved files, [0-9.]+ s\)", "(saved files, 0.0 s)", text)
    return f"exit {code}\n{text}"


if __name__ == "__main__":
    OUT.mkdir(exist_ok=True)
    for old in OUT.iterdir():
        old.unlink()
    for c in cases():
        (OUT / c.name).write_text(record(c), encoding="utf-8")
    sys.stdout.write(f"wrote {len(cases())} golden files to {OUT}\n")

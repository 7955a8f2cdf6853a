"""Mutations of the real corpus and the readers they go through, shared by tests/contracts/test_fuzz.py (a fixed-seed
sample in CI) and benchmarks/fuzz.py (the long run).

The property every reader must keep: a clean read, or rigcheck's own error (RigcheckError, exit 2) — never
another exception, never a hang. A mutation is a (name, seed) pair so that hypothesis can shrink a failing
input to the few mutations that matter and the long run can print one line per failure that reproduces it.
"""

from __future__ import annotations

import random
import signal
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from rigcheck.errors import RigcheckError

FIXTURES = Path(__file__).parent.parent / "fixtures"
CORPUS = FIXTURES / "corpus"

# Cells the tools really print where a number belongs, and numbers no real output holds.
SENTINELS = [b"ERR!", b"N/A", b"[Unknown Error]", b"[Not Supported]", b"[GPU is lost]", b"[N/A]", b"Unknown"]
ODD_NUMBERS = [
    b"9" * 5000,  # over Python's 4,300-digit int() limit
    b"-" + b"9" * 5000,
    b"99999999999999999999999",
    b"-1",
    b"-700",
    b"1e309",  # inf as a float
    b"nan",
    b"inf",
    b"\xc2\xb9",  # superscript one: str.isdigit() is true, int() refuses it
    b"\xd9\xa3",  # Arabic-Indic three: int() accepts it
    b"0x10",
    b"",
]
# A digit run, possibly with a decimal part, as the mutators find numbers in the text.
_NUMBER = __import__("re").compile(rb"\d+(?:\.\d+)?")


def _lines(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True) or [data]


def _truncate(data: bytes, rng: random.Random) -> bytes:
    return data[: rng.randrange(len(data) + 1)]


def _flip_bytes(data: bytes, rng: random.Random) -> bytes:
    if not data:
        return bytes([rng.randrange(256)])
    buf = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        buf[rng.randrange(len(buf))] = rng.randrange(256)
    return bytes(buf)


def _drop_lines(data: bytes, rng: random.Random) -> bytes:
    lines = _lines(data)
    for _ in range(rng.randint(1, 4)):
        if lines:
            del lines[rng.randrange(len(lines))]
    return b"".join(lines)


def _duplicate_lines(data: bytes, rng: random.Random) -> bytes:
    lines = _lines(data)
    for _ in range(rng.randint(1, 4)):
        i = rng.randrange(len(lines))
        lines.insert(rng.randrange(len(lines) + 1), lines[i] * rng.choice([1, 1, 2, 50]))
    return b"".join(lines)


def _shuffle_lines(data: bytes, rng: random.Random) -> bytes:
    lines = _lines(data)
    i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
    lines[i], lines[j] = lines[j], lines[i]
    return b"".join(lines)


def _ansi(data: bytes, rng: random.Random) -> bytes:
    codes = [b"\x1b[1m", b"\x1b[0m", b"\x1b[4m", b"\x1b[31;1m", b"\x1b]0;title\x07", b"\x1b[2K\r", b"\x1b["]
    lines = _lines(data)
    for _ in range(rng.randint(1, 6)):
        i = rng.randrange(len(lines))
        cut = rng.randrange(len(lines[i]) + 1)
        lines[i] = lines[i][:cut] + rng.choice(codes) + lines[i][cut:]
    return b"".join(lines)


def _crlf(data: bytes, rng: random.Random) -> bytes:
    return data.replace(b"\n", rng.choice([b"\r\n", b"\r", b"\n\r"]))


def _encoding(data: bytes, rng: random.Random) -> bytes:
    text = data.decode("utf-8", errors="replace")
    kind = rng.randrange(6)
    if kind == 0:
        return text.encode("utf-16")  # with its BOM, as PowerShell writes
    if kind == 1:
        return text.encode("utf-16-le")  # no BOM
    if kind == 2:
        return b"\xef\xbb\xbf" + data
    if kind == 3:
        return (text + "é").encode("latin-1", errors="replace")
    if kind == 4:
        cut = rng.randrange(len(data) + 1)
        return data[:cut] + b"\xff\xfe\x80" + data[cut:]
    return text.encode("utf-32")


def _nul(data: bytes, rng: random.Random) -> bytes:
    cut = rng.randrange(len(data) + 1)
    return data[:cut] + b"\x00" * rng.randint(1, 3) + data[cut:]


def _replace_numbers(data: bytes, rng: random.Random, pool: Sequence[bytes]) -> bytes:
    spans = [m.span() for m in _NUMBER.finditer(data)]
    if not spans:
        return data + rng.choice(pool)
    for start, end in sorted(rng.sample(spans, min(len(spans), rng.randint(1, 4))), reverse=True):
        data = data[:start] + rng.choice(pool) + data[end:]
    return data


def _odd_numbers(data: bytes, rng: random.Random) -> bytes:
    return _replace_numbers(data, rng, ODD_NUMBERS)


def _sentinels(data: bytes, rng: random.Random) -> bytes:
    return _replace_numbers(data, rng, SENTINELS)


def _deep_json(data: bytes, rng: random.Random) -> bytes:
    depth = rng.choice([1000, 100_000])
    opener = rng.choice([b"[", b'{"a":'])
    closer = b"]" if opener == b"[" else b"}"
    nested = opener * depth + b"1" + closer * depth
    positions = [i for i, c in enumerate(data) if c in b"[{"] or [0]
    cut = rng.choice(positions)
    return data[:cut] + nested + data[cut:] if rng.random() < 0.5 else nested


def _long_field(data: bytes, rng: random.Random) -> bytes:
    cut = rng.randrange(len(data) + 1)
    return data[:cut] + rng.choice([b"x", b"7", b'"', b","]) * rng.choice([140_000, 2_000_000]) + data[cut:]


def _empty(data: bytes, rng: random.Random) -> bytes:
    return rng.choice([b"", b"\n", b"   \n\n", b"\xef\xbb\xbf"])


MUTATIONS: dict[str, Callable[[bytes, random.Random], bytes]] = {
    "truncate": _truncate,
    "flip": _flip_bytes,
    "drop-lines": _drop_lines,
    "dup-lines": _duplicate_lines,
    "swap-lines": _shuffle_lines,
    "ansi": _ansi,
    "crlf": _crlf,
    "encoding": _encoding,
    "nul": _nul,
    "numbers": _odd_numbers,
    "sentinels": _sentinels,
    "deep-json": _deep_json,
    "long-field": _long_field,
    "empty": _empty,
}


def mutate(data: bytes, steps: Sequence[tuple[str, int]]) -> bytes:
    for name, seed in steps:
        data = MUTATIONS[name](data, random.Random(seed))
    return data


# --- the readers -----------------------------------------------------------------------------------------------


def _files(*globs: str) -> list[Path]:
    out: list[Path] = []
    for pattern in globs:
        out.extend(p for p in sorted(FIXTURES.glob(pattern)) if p.name not in {"README.md", "MANIFEST.md"})
    return out


SNAPSHOT_SEEDS = _files(
    "corpus/smi/*", "corpus/smi-err/*", "corpus/smi-q/*", "corpus/smi-xml/*", "corpus/nvlink/*", "corpus/topo/*",
    "corpus/topo-p2p/*", "corpus/driver-errors/*", "corpus/p2p/*", "corpus/h100-vm/q.*",
    "corpus/h100-vm/nvidia-smi.txt", "corpus/h100-vm/topo-*", "corpus/h100-vm/nvlink-s.txt",
    "corpus/h100-vm/q-d.txt", "snapshots/*.json",
    "smi-extra/*", "topo-extra/*", "lspci/*.txt",
)  # fmt: skip
TRACE_SEEDS = _files(
    "corpus/telemetry/*.csv", "traces/*.csv", "traces/dmon-*.txt", "corpus/h100-vm/query.csv", "corpus/h100-vm/dmon.txt"
)
NCCL_SEEDS = _files("corpus/nccl-log/*", "nccl-extra/*", "corpus/h100-vm/nccl-info-*", "corpus/nccl-tests/*")


def _read_snapshot(path: str) -> None:
    from rigcheck.checks.doctor import run_checks
    from rigcheck.readers.from_file import load_file

    run_checks(load_file(path))


def _read_merged(path: str) -> None:
    from rigcheck.checks.doctor import run_checks
    from rigcheck.readers.from_file import load_files

    run_checks(load_files([str(CORPUS / "h100-vm" / "q.txt"), path]))


def _read_trace(path: str) -> None:
    from rigcheck.checks.burn.judge import analyze_trace
    from rigcheck.readers.trace.stream import read_trace

    analyze_trace(read_trace(path))


def _read_nccl(path: str) -> None:
    from rigcheck.readers.nccl_log import describe_transport, read_nccl_log

    describe_transport(read_nccl_log(path))


def _read_plan(path: str) -> None:
    from rigcheck.plan.comm import busbw_from_bench
    from rigcheck.readers.plan_sources import read_bench_document, read_plan_snapshot

    doc = read_bench_document(path)
    if doc is None:
        read_plan_snapshot(path)
    else:
        busbw_from_bench(doc)


@dataclass(frozen=True)
class Reader:
    name: str
    read: Callable[[str], None]
    seeds: Sequence[Path]
    # The CLI command that reads such a file, for the sample that goes through rigcheck.cli.app.main.
    argv: Callable[[str], list[str]]


READERS: list[Reader] = [
    Reader("snapshot", _read_snapshot, SNAPSHOT_SEEDS, lambda p: ["doctor", "--from", p, "--json"]),
    Reader("merge", _read_merged, SNAPSHOT_SEEDS, lambda p: ["topo", "--from", str(CORPUS / "h100-vm/q.txt"),
                                                             "--from", p]),
    Reader("trace", _read_trace, TRACE_SEEDS, lambda p: ["burn", "--analyze", p, "--json"]),
    Reader("nccl-log", _read_nccl, NCCL_SEEDS, lambda p: ["nccl-log", p, "--json"]),
    Reader("plan", _read_plan, SNAPSHOT_SEEDS, lambda p: ["plan", "--params", "7B", "--gpus", "8", "--from", p]),
]  # fmt: skip
# Every `--from` command, each reading the snapshot seeds through the CLI.
CLI_SNAPSHOT_COMMANDS = ["doctor", "topo", "power", "thermal", "snapshot"]

OK, OWN_ERROR, HANG = "ok", "rigcheck-error", "hang"


class Hang(BaseException):
    """Raised by the alarm: a BaseException so that no reader's `except ValueError` can swallow it."""


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise Hang after ``seconds`` (main thread only: SIGALRM)."""

    def _alarm(signum: int, frame: FrameType | None) -> None:
        raise Hang

    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def outcome(reader: Reader, data: bytes, workdir: Path, limit_s: float = 10.0) -> str:
    """OK or OWN_ERROR or HANG; any other exception propagates (that is the bug the fuzzing looks for)."""
    path = workdir / "input"
    path.write_bytes(data)
    try:
        with time_limit(limit_s):
            reader.read(str(path))
    except RigcheckError:
        return OWN_ERROR
    except Hang:
        return HANG
    return OK


def scratch_dir() -> tempfile.TemporaryDirectory[str]:
    return tempfile.TemporaryDirectory(prefix="rigcheck-fuzz-")


def elapsed_since(start: float) -> float:
    return time.perf_counter() - start

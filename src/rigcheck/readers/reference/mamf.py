"""The output of the maximum-achievable-matmul finder (ml-engineering's ``mamf-finder.py`` and its forks) read
as a ``rigcheck.bench/1`` matmul document (`rigcheck bench matmul --from FILE`). Nothing here knows a band:
rigcheck.checks.reference.mamf puts the best figure beside the GPU's matmul band.

The layouts read, as the tool's versions print them (stas00/ml-engineering compute/accelerator/benchmarks):

- v1: ``N |  807.5 TFLOPS @ MxNxK | best: 831.7 TFLOPS @ MxNxK (MxNxK)`` per shape (each shape's fastest
  iteration), then ``The best outcome was 821.0TFLOPS @ MxNxK (MxNxK) (tried N shapes)``;
- v2: ``N | 748.4(mean) 748.4(median) 754.8(max) @ MxNxK | best: ...`` per shape, then ``Tried N shapes =>
  the best outcomes were:`` and one ``mean:`` / ``median:`` / ``max:`` line each;
- v3 and later (and forks with MAMF/MSMF headlines): scout rows ``#  MxNxK  mean median max best [W MHz]``,
  then ``MAMF (max achievable, boost burst): 842 TFLOPS @ MxNxK`` and ``MSMF (max sustainable, ...)``.

The header gives the dtype (``** Dtype: torch.bfloat16``; else ``--dtype`` on its command line, else the
tool's default bfloat16, said so), the device (``_CudaDeviceProperties(name='NVIDIA H100 80GB HBM3', ...)``),
torch and CUDA. A run cut before its summary keeps the best-so-far its last progress line printed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from rigcheck.errors import InputError

# mamf-finder's --dtype choices (and torch's names in its "** Dtype:" line) -> rigcheck's matmul dtype; None:
# a dtype rigcheck's matmul document does not name (block-scaled fp4...).
DTYPES: dict[str, Literal["bf16", "fp16", "tf32", "fp32", "fp8"]] = {
    "bfloat16": "bf16",
    "bf16": "bf16",
    "float16": "fp16",
    "half": "fp16",
    "fp16": "fp16",
    "float32": "fp32",
    "float": "fp32",
    "fp32": "fp32",
    "tf32": "tf32",
    "float8_e4m3fn": "fp8",
    "float8_e4m3fnuz": "fp8",
    "float8_e5m2": "fp8",
    "float8_e5m2fnuz": "fp8",
    "mxfp8": "fp8",
    "fp8": "fp8",
}
DEFAULT_DTYPE = "bfloat16"  # mamf-finder's --dtype default in every version

_NUM = r"(\d+(?:\.\d+)?)"
_SHAPE = r"(\d+)x(\d+)x(\d+)"
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_V2_ROW = re.compile(
    rf"^\s*(\d+)\s*\|\s*{_NUM}\(mean\)\s+{_NUM}\(median\)\s+{_NUM}\(max\)\s*@\s*{_SHAPE}"
    rf"(?:\s*\|\s*best:\s*{_NUM}\(mean\)\s+{_NUM}\(median\)\s+{_NUM}\(max\)\s*TFLOPS)?"
)
_V1_ROW = re.compile(
    rf"^\s*(\d+)\s*\|\s*{_NUM}\s*TFLOPS(?:\s*@\s*{_SHAPE})?(?:\s*\|\s*best:\s*{_NUM}\s*TFLOPS\s*@\s*{_SHAPE})?"
)
_SCOUT_ROW = re.compile(rf"^\s*(\d+)\s+{_SHAPE}\s+{_NUM}\s+{_NUM}\s+{_NUM}\s+{_NUM}(?:\s|$)")
_SUMMARY = re.compile(rf"^(mean|median|max):\s+{_NUM}\s*TFLOPS\s*@\s*{_SHAPE}")
_V1_BEST = re.compile(rf"The best outcome was\s*{_NUM}\s*TFLOPS\s*@\s*{_SHAPE}")
_HEADLINE = re.compile(rf"^(MAMF|MSMF)\s*\([^)]*\):\s*{_NUM}\s*TFLOPS\s*@\s*{_SHAPE}")
_TRIED = re.compile(r"(?:Tried\s+(\d+)\s+shapes|\(tried\s+(\d+)\s+shapes\))")
_DTYPE = re.compile(r"^\*\*\s*Dtype:\s*(\S+)")
_CMD_DTYPE = re.compile(r"--dtype[= ]\s*(\S+)")
_AUTO_DTYPE = re.compile(r"\bdtype=([A-Za-z0-9_]+)")
_DEVICE = re.compile(r"Properties\(name=(?:'([^']+)'|\"([^\"]+)\")")
_VERSION = re.compile(r"benchmark version:?\s*(\d+)", re.IGNORECASE)
_TORCH = re.compile(r"^-?\s*torch=(\S+)")
_CUDA = re.compile(r"(?:^-?\s*|,\s*)cuda=(\S+)")
_HIP = re.compile(r"^-?\s*hip=([^,\s]+)")
_GEOMEAN = re.compile(rf"geometric mean:\s+{_NUM}")
_DEVICE_INDEX = re.compile(r"--cuda_device[= ]\s*(\d+)")
_ITERS = re.compile(r"--num_iterations[= ]\s*(\d+)")
_WARMUP = re.compile(r"--num_warmup_iterations[= ]\s*(\d+)")
_MARKERS = (_V2_ROW, _V1_ROW, _SUMMARY, _V1_BEST, _HEADLINE)


@dataclass(frozen=True)
class MamfShape:
    """One shape as the sweep printed it: mean, median and max (v1 prints one figure: its fastest iteration)."""

    m: int
    n: int
    k: int
    mean: float | None
    median: float | None
    max: float


@dataclass(frozen=True)
class MamfBest:
    """One of the summary's best figures: ``label`` is mean, median, max (v2), best (v1), MAMF or MSMF (v3+)."""

    label: str
    tflops: float
    shape: tuple[int, int, int] | None  # m, n, k; None where the line names none (v2's best so far)


@dataclass
class MamfRun:
    path: str
    version: str | None = None
    dtype_text: str | None = None  # as printed: "torch.bfloat16", "float8_e4m3fn"
    dtype_from: Literal["header", "command line", "default"] = "default"
    device_name: str | None = None
    device_index: int = 0
    command: str | None = None
    torch: str | None = None
    cuda: str | None = None
    hip: str | None = None
    iterations: int | None = None
    warmup: int | None = None
    shapes: list[MamfShape] = field(default_factory=list)
    bests: dict[str, MamfBest] = field(default_factory=dict)
    so_far: dict[str, MamfBest] = field(default_factory=dict)  # the last progress line's "best:" figures
    tried: int | None = None
    geomean: float | None = None
    cut_line: str | None = None  # the last line, left out: the text ends inside it (a figure may be cut short)
    notes: list[str] = field(default_factory=list)  # the tool's own "note:" lines, as printed

    @property
    def complete(self) -> bool:
        """The summary was printed (a run cut short has only its progress lines)."""
        return bool(self.bests)

    @property
    def dtype_name(self) -> str:
        """The dtype without torch's prefix: "bfloat16"."""
        return (self.dtype_text or DEFAULT_DTYPE).removeprefix("torch.")

    @property
    def dtype(self) -> Literal["bf16", "fp16", "tf32", "fp32", "fp8"] | None:
        return DTYPES.get(self.dtype_name.lower())


def _lines(text: str) -> list[str]:
    # The console copy rewrites its progress line with "\r"; splitlines() splits there too.
    return [_ANSI.sub("", line).rstrip() for line in text.splitlines()]


def looks_like_mamf(text: str) -> bool:
    """Whether ``text`` is a mamf-finder output (whole, or cut after its first progress line)."""
    lines = _lines(text[:1_000_000])
    if any(p.search(line) for line in lines for p in _MARKERS if p is not _V1_ROW):
        return True
    if any(_V1_ROW.search(line) and "best:" in line for line in lines):
        return True
    header = "mamf-finder" in text or "mamaf-finder" in text
    return header and any(_DTYPE.match(line) or _SCOUT_ROW.match(line) for line in lines)


def _f(value: str | None) -> float | None:
    return float(value) if value is not None else None


def _header(run: MamfRun, line: str, previous: str) -> None:
    if (found := _DTYPE.match(line)) is not None:
        run.dtype_text, run.dtype_from = found.group(1), "header"
    if previous.startswith("** Command line:") and line.strip():
        run.command = line.strip()
        if run.dtype_from != "header" and (dt := _CMD_DTYPE.search(line)) is not None:
            run.dtype_text, run.dtype_from = dt.group(1), "command line"
        if (index := _DEVICE_INDEX.search(line)) is not None:
            run.device_index = int(index.group(1))
        if (iters := _ITERS.search(line)) is not None:
            run.iterations = int(iters.group(1))
        if (warm := _WARMUP.search(line)) is not None:
            run.warmup = int(warm.group(1))
    if line.startswith("Auto search:") and run.dtype_from == "default" and (dt := _AUTO_DTYPE.search(line)):
        run.dtype_text, run.dtype_from = dt.group(1), "command line"
    if run.device_name is None and (dev := _DEVICE.search(line)) is not None:
        run.device_name = dev.group(1) or dev.group(2)
    if run.version is None and (ver := _VERSION.search(line)) is not None:
        run.version = ver.group(1)
    if (t := _TORCH.match(line)) is not None:
        run.torch = t.group(1)
    if (h := _HIP.match(line)) is not None:
        run.hip = h.group(1)
    if (c := _CUDA.search(line)) is not None and "Properties(" not in line:
        run.cuda = None if c.group(1) == "None" else c.group(1)


def _row(run: MamfRun, line: str) -> bool:
    """A progress or scout row; True when ``line`` was one."""
    if (v2 := _V2_ROW.match(line)) is not None:
        g = v2.groups()
        run.shapes.append(MamfShape(int(g[4]), int(g[5]), int(g[6]), float(g[1]), float(g[2]), float(g[3])))
        if g[7] is not None:
            run.so_far = {
                label: MamfBest(label, float(value), None)
                for label, value in zip(("mean", "median", "max"), g[7:10], strict=True)
            }
        return True
    if (v1 := _V1_ROW.match(line)) is not None and "TFLOPS" in line:
        g = v1.groups()
        if g[2] is not None:
            run.shapes.append(MamfShape(int(g[2]), int(g[3]), int(g[4]), None, None, float(g[1])))
        if g[5] is not None:
            run.so_far = {"best": MamfBest("best", float(g[5]), (int(g[6]), int(g[7]), int(g[8])))}
        return True
    if (scout := _SCOUT_ROW.match(line)) is not None:
        g = scout.groups()
        run.shapes.append(MamfShape(int(g[1]), int(g[2]), int(g[3]), float(g[4]), float(g[5]), float(g[6])))
        run.so_far = {"mean": MamfBest("mean", float(g[7]), None)}
        return True
    return False


def _shape(found: re.Match[str], first: int) -> tuple[int, int, int]:
    return int(found.group(first)), int(found.group(first + 1)), int(found.group(first + 2))


def _summary(run: MamfRun, line: str) -> None:
    if (s := _SUMMARY.match(line)) is not None:
        label = s.group(1)
        run.bests[label] = MamfBest(label, float(s.group(2)), _shape(s, 3))
    elif (b := _V1_BEST.search(line)) is not None:
        run.bests["best"] = MamfBest("best", float(b.group(1)), _shape(b, 2))
    elif (h := _HEADLINE.match(line)) is not None:
        label = h.group(1)
        run.bests[label] = MamfBest(label, float(h.group(2)), _shape(h, 3))
    if (t := _TRIED.search(line)) is not None:
        run.tried = int(t.group(1) or t.group(2))
    if (g := _GEOMEAN.search(line)) is not None:
        run.geomean = float(g.group(1))
    if line.startswith("note:"):
        run.notes.append(line.removeprefix("note:").strip())


def _cut_short(line: str) -> bool:
    """A figure line the text ends inside: it does not end where its layout does (a shape's "(MxNxK)", a
    progress row's "TFLOPS"), so its last number or shape may be cut short."""
    if not any(p.search(line) for p in (*_MARKERS, _SCOUT_ROW)):
        return False
    return "(MxNxK)" not in line and not line.rstrip().endswith(("TFLOPS", "TFLOPSPS"))


def parse_mamf(text: str, path: str) -> MamfRun:
    """The run ``text`` holds; InputError (exit 2) when it holds no figure at all (cut before its first shape)."""
    run = MamfRun(path=path)
    previous = ""
    lines = _lines(text)
    if lines and not text.endswith(("\n", "\r")) and _cut_short(lines[-1]):
        run.cut_line = lines.pop()
    for line in lines:
        _header(run, line, previous)
        if not _row(run, line):
            _summary(run, line)
        if line.strip():
            previous = line
    if not run.bests and not run.so_far:
        raise InputError(
            "mamf-finder output with no figure: it ends before its first measured shape's progress line "
            "(run it to the end, or Ctrl-C it after a few shapes: it then prints the best so far)",
            path=path,
        )
    return run

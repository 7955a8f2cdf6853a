"""gpu-burn's output (wilicc/gpu-burn): its GPUs, the progress lines and the final verdict per GPU, as printed,
and that run as a telemetry trace for `rigcheck burn --analyze`.

What gpu-burn prints (gpu_burn-drv.cpp): "GPU 0: NVIDIA GeForce GTX 1080 (UUID: GPU-…)" per GPU (newer versions),
"Burning for 60 seconds." (or "… secs"), then every few seconds one line for all GPUs::

    11.7%  proc'd: 2947 (7124 Gflop/s) - 2664 (6963 Gflop/s)   errors: 0 - 0   temps: 56 C - 73 C

an error count being "N  (WARNING!)" when its comparison found wrong results and "N  (DIED!)" when the GPU's
process died; then "Tested 2 GPUs:" and "GPU 0: OK" / "GPU 0: FAULTY" (FAULTY: a wrong result at any time).
"No clients are alive!  Aborting" ends a run whose processes all died. Read for the format: CRLF, ANSI escapes,
tabs, progress lines glued to the next (no newline before "read[0] error"), a cut end.
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass, field

from rigcheck.errors import ParseError
from rigcheck.model.burn import GpuBurnAnalysis
from rigcheck.model.telemetry import Sample, Trace, TraceGpu
from rigcheck.probe.launcher_prefix import strip_launcher_prefix
from rigcheck.probe.smi.ansi import strip_ansi

TOOL = "gpu-burn"
SOURCE = "wilicc/gpu-burn (gpu_burn-drv.cpp): progress lines, 'Tested N GPUs' and OK/FAULTY per GPU"

_GPU = re.compile(r"^\s*GPU (\d+): (.+?) \(UUID: ([^)]+)\)")
_VERDICT = re.compile(r"^\s*GPU (\d+): (OK|FAULTY)\s*$")
_TESTED = re.compile(r"^\s*Tested (\d+) GPUs?:")
_DURATION = re.compile(r"Burning for (\d+) sec")
_PROGRESS = re.compile(r"(\d+(?:\.\d+)?)%\s+proc'd:(.*?)errors:(.*?)temps:(.*?)(?=\d+(?:\.\d+)?%\s+proc'd:|$)")
_PROCD = re.compile(r"(-?\d+) \((-?\d+(?:\.\d+)?) Gflop/s\)")
_ERRORS = re.compile(r"(-?\d+)(\s*\((WARNING|DIED)!\))?")
_TEMP = re.compile(r"(-?\d+) C")
_ABORT = "No clients are alive"


@dataclass(frozen=True)
class BurnLine:
    """One progress line: the percent of the run, and per GPU its Gflop/s, error count, flag and temperature."""

    percent: float
    gflops: list[float | None]
    errors: list[int | None]
    flags: list[str | None]  # "WARNING" (wrong results), "DIED" (its process died), None
    temps: list[float | None]


@dataclass
class GpuBurnRun:
    names: dict[int, str] = field(default_factory=dict)
    duration_s: float | None = None
    lines: list[BurnLine] = field(default_factory=list)
    verdicts: dict[int, str] = field(default_factory=dict)  # the "Tested N GPUs" section: OK / FAULTY
    tested: int | None = None
    aborted: bool = False

    def gpu_count(self) -> int:
        widths = [len(x.gflops) for x in self.lines]
        return max([*widths, len(self.names), len(self.verdicts), self.tested or 0], default=0)

    def faults(self, gpu: int) -> list[str]:
        """Why gpu-burn says GPU ``gpu`` is faulty, one phrase each (empty: it found nothing)."""
        out = []
        if self.verdicts.get(gpu) == "FAULTY":
            out.append("gpu-burn's summary says FAULTY (a wrong result during the run)")
        flags = {x.flags[gpu] for x in self.lines if gpu < len(x.flags)}
        if "DIED" in flags:
            out.append("its gpu-burn process died (DIED!)")
        errors = [e for x in self.lines if gpu < len(x.errors) and (e := x.errors[gpu]) is not None and e != 0]
        if errors and "DIED" not in flags:
            out.append(f"the progress lines counted wrong results (errors {errors[-1]})")
        return out


def _cells(line: str) -> list[str]:
    return [strip_launcher_prefix(strip_ansi(x)).rstrip() for x in line.replace("\r\n", "\n").split("\n")]


def looks_like_gpu_burn(text: str) -> bool:
    head = text[:200_000]
    return bool(_PROGRESS.search(head.replace("\n", " "))) or (
        "Tested" in head and bool(re.search(r"^\s*GPU \d+: (OK|FAULTY)\s*$", head, re.MULTILINE))
    )


def _progress(match: re.Match[str]) -> BurnLine:
    procd = _PROCD.findall(match.group(2))
    errors = _ERRORS.findall(match.group(3))
    temps = _TEMP.findall(match.group(4))
    return BurnLine(
        percent=float(match.group(1)),
        gflops=[float(g) if int(n) >= 0 else None for n, g in procd],
        errors=[int(e) for e, _, _ in errors],
        flags=[flag or None for _, _, flag in errors],
        temps=[float(t) for t in temps],
    )


def parse_gpu_burn(text: str, path: str) -> GpuBurnRun:
    run = GpuBurnRun()
    in_summary = False
    for line in _cells(text):
        if (m := _DURATION.search(line)) is not None:
            run.duration_s = float(m.group(1))
        if (m := _TESTED.match(line)) is not None:
            run.tested, in_summary = int(m.group(1)), True
            continue
        if in_summary and (m := _VERDICT.match(line)) is not None:
            run.verdicts[int(m.group(1))] = m.group(2)
            continue
        if (m := _GPU.match(line)) is not None:
            run.names[int(m.group(1))] = m.group(2)
            continue
        if _ABORT in line:
            run.aborted = True
        run.lines += [_progress(p) for p in _PROGRESS.finditer(line)]
    if not run.lines and not run.verdicts:
        raise ParseError("gpu-burn output without a progress line or a 'Tested N GPUs' summary", path=path)
    return run


def trace_of(run: GpuBurnRun, path: str) -> Trace:
    """The run as a trace: a sample per progress line and GPU with its temperature; utilization 100% where
    gpu-burn reports Gflop/s (its GEMMs keep the GPU busy back to back), 0 where it computed nothing."""
    trace = Trace(source="gpu-burn", path=path)
    step = (run.duration_s / 100.0) if run.duration_s else None
    for i, x in enumerate(run.lines):
        t = x.percent * step if step is not None else float(i)
        for gpu in range(max(len(x.gflops), len(x.temps))):
            gflops = x.gflops[gpu] if gpu < len(x.gflops) else None
            temp = x.temps[gpu] if gpu < len(x.temps) else None
            util = None if gflops is None and (gpu >= len(x.flags) or x.flags[gpu] != "DIED") else 0.0
            if gflops is not None and gflops > 0:
                util = 100.0
            trace.samples.append(Sample(t, gpu, temp_c=temp, utilization_gpu_percent=util))
    trace.samples.sort(key=lambda s: (s.gpu, s.t_s))
    trace.gpus = {i: TraceGpu(index=i, name=run.names.get(i)) for i in range(run.gpu_count())}
    trace.diagnostics.append(
        "read from gpu-burn's output: temperatures and Gflop/s per progress line (no power, clocks or throttle "
        "reasons: record `nvidia-smi --query-gpu` beside it for those); utilization is taken as 100% where gpu-burn "
        "reports Gflop/s (it prints none); errors: the progress lines that reported wrong results for the GPU"
        + (
            f"; times from the run's {run.duration_s:g} s and each line's percent"
            if step
            else "; times are line numbers"
        )
    )
    if not run.names:
        trace.diagnostics.append(
            "the output names no GPU model (an older gpu-burn, or the lines before the progress were not kept)"
        )
    if not run.verdicts:
        trace.diagnostics.append(
            "no 'Tested N GPUs' summary (the run was cut or still going): judged on the progress lines printed"
        )
    if run.aborted:
        trace.diagnostics.append("gpu-burn aborted: 'No clients are alive!'")
    return trace


def with_gpu_burn(analyses: list[GpuBurnAnalysis], run: GpuBurnRun) -> list[GpuBurnAnalysis]:
    """Each GPU's analysis with gpu-burn's own findings: its wrong results (``errors``) and a FAULTY verdict
    first, and its sustained Gflop/s as ``tflops_sustained`` (the median of the lines after the first)."""
    out = []
    for a in analyses:
        gpu = a.index
        counts = [e for x in run.lines if gpu < len(x.errors) and (e := x.errors[gpu]) is not None]
        gflops = [g for x in run.lines[1:] if gpu < len(x.gflops) and (g := x.gflops[gpu]) is not None and g > 0]
        faults = run.faults(gpu)
        missing = {k: v for k, v in a.missing.items() if k not in ("errors", "tflops_sustained")}
        # gpu-burn's counts overflow (-524288000) and a dead process prints garbage: errors is the number of
        # progress lines that reported wrong results for this GPU, not gpu-burn's count.
        update: dict[str, object] = {
            "errors": sum(1 for e in counts if e != 0) if counts else None,
            "tflops_sustained": statistics.median(gflops) / 1000 if gflops else None,
        }
        if not counts:
            missing["errors"] = "no progress line for this GPU in the output"
        if not gflops:
            missing["tflops_sustained"] = "gpu-burn printed no Gflop/s after its first line for this GPU"
        if faults:
            update["verdict"] = f"FAULTY (gpu-burn): {'; '.join(faults)}; under load: {a.verdict}"
            update["advice"] = (
                "the GPU computed wrong results (or its process died): take it out of service, run gpu-burn on it "
                "alone to confirm, then `dcgmi diag -r 3` and the kernel log (Xid, ECC: `rigcheck doctor`); "
                "replace it if the fault repeats"
            )
        elif run.verdicts.get(gpu) == "OK":
            update["verdict"] = f"OK (gpu-burn: no wrong result); under load: {a.verdict}"
        update["missing"] = missing
        out.append(a.model_copy(update=update))
    return out


def is_faulty(run: GpuBurnRun) -> bool:
    return run.aborted or any(run.faults(g) for g in range(run.gpu_count()))

"""gpu-burn's output (wilicc/gpu-burn): its GPUs, the progress lines and the final verdict per GPU, as printed,
and that run as a telemetry trace for `rigcheck burn --analyze`.

What gpu-burn prints (gpu_burn-drv.cpp): "GPU 0: NVIDIA GeForce GTX 1080 (UUID: GPU-…)" per GPU (newer versions),
"Burning for 60 seconds." (or "… secs"), then every few seconds one line for all GPUs::

    11.7%  proc'd: 2947 (7124 Gflop/s) - 2664 (6963 Gflop/s)   errors: 0 - 0   temps: 56 C - 73 C

an error count being "N  (WARNING!)" when its comparison found wrong results and "N  (DIED!)" when the GPU's
process died; then "Tested 2 GPUs:" and "GPU 0: OK" / "GPU 0: FAULTY" (FAULTY: a wrong result at any time).
"No clients are alive!  Aborting" ends a run whose processes all died. Read for the format: CRLF, ANSI escapes,
tabs, progress lines glued to the next (no newline before "read[0] error"), a cut end.

A test that never started is not a pass: gpu-burn prints "Couldn't init a GPU test: …" (its per-GPU process
could not set up CUDA, cuBLAS or its compare kernel), "Couldn't init CUDA: …" or "No CUDA devices", goes on
printing "0 (0 Gflop/s)" for the GPUs that never report, and still prints "GPU n: OK" at the end (wilicc/gpu-burn
issues #7, #14, #123, #124: OK with nothing computed). A GPU no progress line shows computing fails here, the
error lines quoted (they name no GPU); where the output names no GPU at all the run judges nothing and exits 1.
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass, field

from rigcheck.errors import ParseError
from rigcheck.model.burn import GpuBurnAnalysis, gpu_burn_problem
from rigcheck.model.telemetry import Sample, Trace, TraceGpu
from rigcheck.readers.launcher_prefix import strip_launcher_prefix
from rigcheck.readers.smi.ansi import strip_ansi

TOOL = "gpu-burn"
SOURCE = "wilicc/gpu-burn (gpu_burn-drv.cpp): progress lines, 'Tested N GPUs' and OK/FAULTY per GPU"

# `nvidia-smi -L`'s lines, which gpu-burn prints first (a cut copy may lose the UUID's end).
_GPU = re.compile(r"^\s*GPU (\d+): (.+?) \(UUID")
_VERDICT = re.compile(r"^\s*GPU (\d+): (OK|FAULTY)\s*$")
_TESTED = re.compile(r"^\s*Tested (\d+) GPUs?:")
_DURATION = re.compile(r"Burning for (\d+) sec")
# Linear on any input (a fuzzed file may be one 200 kB line of digits): a percent starts where a number starts and
# has at most 3+3 digits, and no field of a progress line holds ':' or '%', so no group can run past its end.
_PROGRESS = re.compile(
    r"(?<![\d.])(\d{1,3}(?:\.\d{1,3})?)%\s+proc'd:([^:%]*)errors:([^:%]*)temps:([^:%]*?)"
    r"(?=\d{1,3}(?:\.\d{1,3})?%\s+proc'd:|[:%\n]|$)"
)
_PROCD = re.compile(r"(-?\d+) \((-?\d+(?:\.\d+)?) Gflop/s\)")
_ERRORS = re.compile(r"(-?\d+)(\s*\((WARNING|DIED)!\))?")
_TEMP = re.compile(r"(-?\d+) C")
_ABORT = "No clients are alive"
# gpu-burn's own failure lines (gpu_burn-drv.cpp: startBurn, initCuda, launch), and a CUDA or cuBLAS status
# printed on a line of its own by older versions. None names its GPU: each GPU's processes print to one stream.
_FAILURE = re.compile(
    r"Couldn't init (?:a GPU test|CUDA): |Failure during compute: |No CUDA (?:devices|capable GPUs)"
    r"|Low mem for result|CUDA_ERROR_[A-Z_]+|CUBLAS_STATUS_[A-Z_]+|CUDA error: "
)
_LEADS = ("Couldn't", "Failure", "No CUDA", "Low mem")  # a failure line that starts with its own words
_INITIALIZED = re.compile(r"Initialized device (\d+) with \d+ MB")
# Lines only gpu-burn prints: with one of them, an output without a progress line is still gpu-burn's.
_ITS_OWN = re.compile(r"Couldn't init (?:a GPU test|CUDA): |Initialized device \d+ with \d+ MB|Burning for \d+ sec")
# The end of a run (gpu_burn-drv.cpp listenClients): after these every GPU has had the whole run to report.
_ENDED = re.compile(r"^\s*Killing processes|^\s*Tested \d+ GPUs?:")


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
    failures: list[str] = field(default_factory=list)  # gpu-burn's failure lines, as printed, each once
    initialized: set[int] = field(default_factory=set)  # "Initialized device N": its process set up its buffers
    ended: bool = False  # "Killing processes" or the summary: every GPU had the whole run to report

    def gpu_count(self) -> int:
        widths = [len(x.gflops) for x in self.lines]
        named = [max(self.names) + 1] if self.names else []
        seen = [max(self.initialized) + 1] if self.initialized else []
        return max([*widths, *named, *seen, len(self.verdicts), self.tested or 0], default=0)

    @property
    def started(self) -> bool:
        """Whether the output holds the run's start (the GPU list, "Burning for", "Initialized device", a failure
        line): without it and without a progress line it is a tail, and gpu-burn's summary is all there is."""
        return bool(self.names or self.initialized or self.duration_s or self.failures)

    def computed(self, gpu: int) -> bool:
        """Whether any progress line shows GPU ``gpu`` computing (Gflop/s above 0)."""
        return any(gpu < len(x.gflops) and (g := x.gflops[gpu]) is not None and g > 0 for x in self.lines)

    def not_run(self, gpu: int) -> tuple[str, str] | None:
        """("FAILED" or "INCOMPLETE", why) for a GPU no progress line shows computing and whose process did not
        die (a death is a fault of its own); None for a GPU that computed. FAILED where gpu-burn printed a
        failure line or the run ended (the GPU had the whole run); INCOMPLETE where the output stops before."""
        if self.computed(gpu) or "DIED" in {x.flags[gpu] for x in self.lines if gpu < len(x.flags)}:
            return None
        if not self.lines and not self.started:  # a summary kept without the run: gpu-burn's verdict stands
            return None
        shown = "no progress line shows it computing" if self.lines else "gpu-burn printed no progress line"
        ok = " (gpu-burn still says OK: it compared nothing)" if self.verdicts.get(gpu) == "OK" else ""
        if self.failures:
            quoted = "; ".join(f"'{line}'" for line in self.failures[:3])
            more = f" and {len(self.failures) - 3} more" if len(self.failures) > 3 else ""
            return "FAILED", f"the test never ran on this GPU ({shown}){ok}; gpu-burn printed {quoted}{more}"
        if self.ended:
            return "FAILED", f"the test never ran on this GPU in the whole run ({shown}){ok}"
        return "INCOMPLETE", f"the output ends before this GPU computed anything ({shown})"

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
    return (
        bool(_PROGRESS.search(head.replace("\n", " ")))
        or ("Tested" in head and bool(re.search(r"^\s*GPU \d+: (OK|FAULTY)\s*$", head, re.MULTILINE)))
        or bool(_ITS_OWN.search(head))
    )


def _failure(line: str) -> str | None:
    """gpu-burn's failure line in ``line``, as printed (bounded; a progress line glued after it left out)."""
    m = _FAILURE.search(line)
    if m is None:
        return None
    start = m.start() if m.group(0).startswith(_LEADS) else 0
    text = line[start:].split("\r", maxsplit=1)[0]
    if (progress := _PROGRESS.search(text)) is not None and progress.start() > 0:
        text = text[: progress.start()]
    return " ".join(text.split())[:200] or None


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
        if _ENDED.search(line):
            run.ended = True
        if (m := _INITIALIZED.search(line)) is not None:
            run.initialized.add(int(m.group(1)))
        if (failure := _failure(line)) is not None and failure not in run.failures:
            run.failures.append(failure)
        run.lines += [_progress(p) for p in _PROGRESS.finditer(line)]
    if not (run.lines or run.verdicts or run.failures or run.initialized or run.duration_s):
        raise ParseError(
            "gpu-burn output without a progress line, a 'Tested N GPUs' summary or a line of its own", path=path
        )
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
    if not run.lines and not run.started:
        trace.diagnostics.append(
            "only gpu-burn's summary is in the output (its start and progress lines were not kept): its OK/FAULTY "
            "is taken as printed; keep the whole output to see each GPU computing"
        )
    if not run.verdicts and run.lines:
        trace.diagnostics.append(
            "no 'Tested N GPUs' summary (the run was cut or still going): judged on the progress lines printed"
        )
    if run.aborted:
        trace.diagnostics.append("gpu-burn aborted: 'No clients are alive!'")
    if run.failures:
        trace.diagnostics.append("gpu-burn printed: " + "; ".join(f"'{line}'" for line in run.failures))
    if not trace.gpus:
        trace.diagnostics.append(
            "the output names no GPU and shows none computing: nothing was tested (exit 1); run `nvidia-smi` and "
            "gpu-burn again, keeping its whole output"
        )
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
        not_run = run.not_run(gpu)
        if faults:
            update["verdict"] = f"FAULTY (gpu-burn): {'; '.join(faults)}; under load: {a.verdict}"
            update["advice"] = (
                "the GPU computed wrong results (or its process died): take it out of service, run gpu-burn on it "
                "alone to confirm, then `dcgmi diag -r 3` and the kernel log (Xid, ECC: `rigcheck doctor`); "
                "replace it if the fault repeats"
            )
        elif not_run is not None:
            update["verdict"] = f"{not_run[0]} (gpu-burn): {not_run[1]}"
            if not_run[0] == "INCOMPLETE":
                update["advice"] = "keep gpu-burn's whole run (`./gpu_burn 600 2>&1 | tee burn.txt`) and read it again"
            else:
                update["advice"] = NOT_RUN_ADVICE if run.failures else SILENT_ADVICE
        elif run.verdicts.get(gpu) == "OK":
            update["verdict"] = f"OK (gpu-burn: no wrong result); under load: {a.verdict}"
        update["missing"] = missing
        out.append(a.model_copy(update=update))
    return out


# A GPU gpu-burn could not load: what its failure lines usually mean (gpu_burn-drv.cpp: the step each names).
NOT_RUN_ADVICE = (
    "gpu-burn could not run its test on this GPU, so the run proves nothing about it: fix what the error names "
    "and run it again: 'load module' (compare.ptx missing beside gpu_burn, or built for a newer CUDA than the "
    "driver: rebuild gpu-burn with this machine's CUDA), a cuBLAS 'init' status (out of memory, or a cuBLAS the "
    "driver does not support), 'system not yet initialized' (NVSwitch systems: start nvidia-fabricmanager), "
    "'No CUDA devices' or an unknown CUDA error (`nvidia-smi`, and the kernel log for Xid: `rigcheck doctor`); a "
    "GPU that fails to start while its neighbours run is suspect"
)


SILENT_ADVICE = (
    "gpu-burn reported no work for this GPU through its run and printed no error, so the run proves nothing about "
    "it: run it again with its errors kept (`./gpu_burn 60 2>&1 | tee burn.txt`), check the GPU in `nvidia-smi` "
    "and the kernel log for Xid (`rigcheck doctor`)"
)


def problem_verdict(verdict: str) -> bool:
    """Whether a GPU verdict from gpu-burn's output is a problem of gpu-burn's own (wrong results, a dead process,
    a test that never ran on it): the report counts these beside the thermal ones."""
    return gpu_burn_problem(verdict)


def is_faulty(run: GpuBurnRun) -> bool:
    """Whether the run fails: a GPU faulty or never tested, every process dead, or no GPU tested at all."""
    gpus = range(run.gpu_count())
    return run.aborted or not gpus or any(run.faults(g) or run.not_run(g) for g in gpus)

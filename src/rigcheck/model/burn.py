"""`rigcheck burn [--analyze FILE] --json` (``rigcheck.burn/2``): the verdict per GPU under load, and what a
burn's own load measured.

- :class:`GpuBurnAnalysis` — one GPU's verdict on a trace (built by rigcheck.checks.burn.judge.analyze_trace; a
  burn adds its TFLOPS and wrong results).
- :class:`GpuLoadSummary` / :class:`BurnWorkload` — the matmul load of `rigcheck burn` (rigcheck.bench.burn).
- :class:`BurnFingerprint` — the cross-GPU fingerprint `rigcheck burn` runs before its load, each GPU's verdict.
- :class:`BurnKernelLog` — how the kernel log was read around the run, and its lines new during it on no GPU.
- :class:`BurnRun` — what a burn returns: the trace, its analysis, the workload, the sampler's costs.
- :class:`BurnDocument` — the document. `burn --analyze` leaves out the four keys of a run (``partial``,
  ``interrupted``, ``workload``, ``sampler``): in its JSON they are absent, never null; ``fingerprint`` and
  ``kernel_log`` are absent too where not run (`--analyze`, the burn stage of `verify`).

Drawn by rigcheck.report.burn.render (terminal, Markdown) and rigcheck.report.burn.html (the page with plots).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, WithJsonSchema, model_validator

from rigcheck.model.absent import absent_unless_set
from rigcheck.model.document import Document, Plain, ReasonedRecord, reason_rules
from rigcheck.model.finding import Finding
from rigcheck.model.kernel_log import KernelEvent
from rigcheck.model.monitor import SamplerReport
from rigcheck.model.snapshot import CLOCK_EVENT_REASONS
from rigcheck.model.telemetry import Trace, TraceSource

BURN_SCHEMA: Literal["rigcheck.burn/2"] = "rigcheck.burn/2"
BURN_SCHEMA_V1 = "rigcheck.burn/1"
# A /1 document's per-GPU keys (and keys of its ``missing`` map) that /2 names for what they are.
BURN_V1_NAMES = {"power_w_median_loaded": "power_draw_w_median_loaded", "power_limit_w": "power_enforced_limit_w"}

Limiter = Literal["power", "thermal", "none", "unknown"]
Count = Annotated[int, Field(ge=0)]
Share = Annotated[float, Field(ge=0, le=1)]
Reason = Annotated[str, Field(min_length=1)]
BURN_ONLY = "rigcheck burn only (null with --analyze)"
# A number kept as computed: a GPU never loaded has ``loaded_s`` 0 (an int), which a float field would print 0.0.
Number = Annotated[int | float, WithJsonSchema({"type": "number"})]

# The verdicts a GPU of gpu-burn's output gets for a problem of gpu-burn's own (readers/reference/gpu_burn.py): wrong
# results or
# a dead process, a test that never ran on it, an output cut before it reported.
GPU_BURN_PROBLEMS = ("FAULTY (gpu-burn)", "FAILED (gpu-burn)", "INCOMPLETE (gpu-burn)")


def gpu_burn_problem(verdict: str) -> bool:
    """Whether a GPU verdict is one of :data:`GPU_BURN_PROBLEMS`: the burn fails on it wherever it is judged."""
    return verdict.startswith(GPU_BURN_PROBLEMS)


def burn_v1_upgraded(data: dict[str, Any]) -> dict[str, Any]:
    """A saved ``rigcheck.burn/1`` document as /2: the power keys renamed (:data:`BURN_V1_NAMES`), nothing else
    differs. What is not shaped as a document is left for validation to name."""

    def renamed(gpu: object) -> object:
        if not isinstance(gpu, dict):
            return gpu
        out = {BURN_V1_NAMES.get(key, key): value for key, value in gpu.items()}
        if isinstance(missing := out.get("missing"), dict):
            out["missing"] = {BURN_V1_NAMES.get(key, key): value for key, value in missing.items()}
        return out

    gpus = data.get("gpus")
    return {**data, "schema": BURN_SCHEMA, "gpus": [renamed(g) for g in gpus] if isinstance(gpus, list) else gpus}


# The keys of the counters and peers under load (issue 28): optional in the schema, since burn documents saved
# before them (read back by verify --from) have none; rigcheck writes them all.
LOAD_KEYS = (
    "ecc_corrected_per_s",
    "ecc_uncorrected_new",
    "pcie_replays_per_min",
    "nvlink_crc_per_s_max",
    "nvlink_replay_new",
    "nvlink_recovery_new",
    "sm_clock_vs_peers_percent",
    "power_vs_peers_percent",
    "hbm_gradient_c",
    "peers",
    "findings",
)


# Keys absent (never null) where not read: `burn --analyze`, a log that could not be read.
ABSENT_UNLESS_READ = ("kernel_events",)


def _never_null(schema: dict[str, Any]) -> None:
    """A key that is absent rather than null: its schema without the null alternative nor the default."""
    alternatives = [alt for alt in schema.pop("anyOf", []) if alt.get("type") != "null"]
    if len(alternatives) == 1:
        schema.update(alternatives[0])
    schema.pop("default", None)


def _absent_if_none(value: object) -> bool:
    return value is None


def _analysis_schema(schema: dict[str, Any], cls: type[BaseModel]) -> None:
    """A null has its reason (reason_rules), and the keys of issue 28 are optional."""
    reason_rules(schema, cls)
    optional = (*LOAD_KEYS, *ABSENT_UNLESS_READ)
    schema["required"] = [name for name in schema.get("required", []) if name not in optional]


class GpuBurnAnalysis(ReasonedRecord):
    """The verdict on one GPU under load (docs/commands.md, issue 5)."""

    model_config = ConfigDict(json_schema_extra=_analysis_schema)

    index: Count
    loaded_s: Number = Field(description="seconds the GPU was under load (utilization or power says so)")
    power_draw_w_median_loaded: float | None
    power_enforced_limit_w: float | None
    temp_c_max: float | None
    temp_slowdown_c: float | None = Field(description="null when the trace lacks it")
    sm_clock_mhz_median_loaded: float | None
    reasons_time_fraction: dict[str, Share] = Field(
        description="reason -> fraction of loaded time; empty when the trace has no reasons",
        json_schema_extra={"propertyNames": {"enum": list(CLOCK_EVENT_REASONS)}},
    )
    limiter: Limiter
    verdict: str = Field(description="in the guide's terms: excellent / good / hot / throttling, and what limits it")
    advice: str
    # Extra evidence (not part of the contract's minimum, but in the JSON):
    time_to_power_cap_s: float | None = None
    temp_rise_c: float | None = None
    temp_plateau_c: float | None = None
    slowdown_margin_c: float | None = None
    sm_clock_mhz_first: float | None = Field(None, description="median over the first seconds of load")
    sm_clock_mhz_sustained: float | None = Field(
        None, description="median over the loaded samples after those first seconds"
    )
    sm_clock_max_mhz: float | None = Field(None, description="the card's max SM clock, as the trace gives it")
    sm_clock_drop_percent: float | None = Field(
        None, description="drop from the max SM clock (else from the first seconds' median) to the sustained median"
    )
    lost_at_s: float | None = None
    # Counters and peers under load (issue 28; rigcheck.checks.burn.rates, docs/checks.md "burn"):
    ecc_corrected_per_s: float | None = Field(
        None, description="corrected ECC errors per second of load (the volatile counter's rise while loaded)"
    )
    ecc_uncorrected_new: Count | None = Field(None, description="uncorrected ECC errors counted while loaded")
    pcie_replays_per_min: float | None = Field(None, description="PCIe replays per minute of load")
    nvlink_crc_per_s_max: float | None = Field(
        None, description="NVLink CRC errors per second of load, on the link with the most"
    )
    nvlink_replay_new: Count | None = Field(None, description="NVLink replay errors counted while loaded, all links")
    nvlink_recovery_new: Count | None = Field(
        None, description="NVLink recovery errors counted while loaded, all links"
    )
    sm_clock_vs_peers_percent: float | None = Field(
        None,
        description="median SM clock while loaded against the median of its peers' (negative: under them), percent",
    )
    # Only from `rigcheck burn` (absent from --analyze, whose trace may come from any machine):
    uuid: str | None = absent_unless_set("the GPU's UUID (NVML): what keys its rates in the ledger")
    pci_bus_id: str | None = absent_unless_set("the GPU's PCI bus id (NVML)")
    power_vs_peers_percent: float | None = Field(
        None, description="median power draw while loaded against the median of its peers' (negative: under), percent"
    )
    hbm_gradient_c: float | None = Field(None, description="median of memory (HBM) minus GPU temperature while loaded")
    peers: list[Count] = Field(
        default_factory=list,
        description="the other GPUs of the same model that were loaded: what the peer comparisons are made against",
    )
    findings: list[Finding] = Field(
        default_factory=list,
        description="what the counters and the peer comparisons found (ids burn.*), and in `rigcheck burn` the "
        "fingerprint (sdc.fingerprint-mismatch) and the kernel-log lines new during the run (the doctor's xid.*); a "
        "fail makes the burn exit 1",
    )
    kernel_events: list[KernelEvent] | None = Field(
        None,
        exclude_if=_absent_if_none,
        json_schema_extra=_never_null,
        description="`rigcheck burn`: the kernel log's lines on this GPU (Xid, PCIe AER, the driver's NVRM lines) "
        "that appeared during the run; absent where the log was not read (the document's kernel_log says why)",
    )
    # Set by `rigcheck burn` (not by --analyze): throughput and silent-corruption checks.
    tflops_sustained: float | None = Field(None, description=BURN_ONLY)
    tflops_first_10s: float | None = Field(None, description=BURN_ONLY)
    errors: Count | None = Field(None, description="rigcheck burn: products that came out wrong; null with --analyze")
    missing: dict[str, Reason] = Field(
        default_factory=dict,
        description='field -> why it is null ("not in the trace", "the GPU was never loaded", "never reached the '
        'cap", "not measured by --analyze", "not lost", ...): every null number of this GPU has its reason here',
    )


class GpuLoadSummary(ReasonedRecord):
    """What the matmul load did on one GPU."""

    NOT_A_READING: ClassVar[frozenset[str]] = frozenset({"error"})

    index: Count
    dtype: str
    matrix_size: Count
    matmuls: Count
    checks: Count
    errors: Count = Field(description="recomputed products that differ from the reference")
    first_error_s: float | None
    error: str | None = Field(description="the load itself failed on this GPU (CUDA error, out of memory): one line")
    tflops_first_10s: float | None
    tflops_sustained: float | None
    tflops_per_second: list[float]
    missing: dict[str, Reason] = Field(
        description='field -> why it is null ("no wrong result", "no timed matmul finished", "the load lasted '
        'under a whole second", "the load failed on this GPU")'
    )


FingerprintOutcome = Literal["pass", "fail", "unjudged", "incomplete"]


class BurnFingerprintGpu(Plain):
    """One GPU's fingerprint verdict (rigcheck.checks.verify.fingerprint's rules, as `verify` judges it)."""

    index: Count
    verdict: FingerprintOutcome
    text: str
    first_difference: str | None = Field(
        description='the first step whose digest differs from its peers\' ("gemm_fp32_1"); null: none named'
    )


class BurnFingerprint(Plain):
    """The cross-GPU fingerprint `rigcheck burn` ran once before its load (rigcheck.bench.fingerprint): one seeded
    workload per GPU, each output hashed; identical GPUs must agree bit for bit (docs/checks.md "fingerprint")."""

    method: str | None = Field(description="what was hashed, in one line; null when it did not run")
    skipped: str | None = Field(description='why it did not run ("--no-fingerprint"); null when it ran')
    error: str | None = Field(description="the one line of a launch that failed or was cut short; null: done")
    rerun: list[Count] = Field(description="GPUs run again with the float64 CPU reference (their peers disagreed)")
    gpus: list[BurnFingerprintGpu]


class BurnKernelLog(Plain):
    """The kernel log read before and after `rigcheck burn` (dmesg, else `journalctl -k`): how, or why it could not
    be, and the lines new during the run that name no GPU of the burn (each GPU's own are its kernel_events)."""

    method: str | None = Field(description='"dmesg" or "journalctl -k"; null when the log could not be read')
    unreadable: str | None = Field(description="why the lines new during the run are not known; null: read")
    other_events: list[KernelEvent] = Field(
        description="lines new during the run on no GPU of the burn: an NVSwitch's SXid, another device's PCIe AER, "
        "a driver message without a bus id"
    )
    findings: list[Finding] = Field(
        description="the doctor's findings (xid.*) on other_events; a fail makes the burn exit 1"
    )


class BurnWorkload(Plain):
    """The load `rigcheck burn` ran, per GPU."""

    method_version: str
    dtype: str
    minutes_requested: float
    load_s: float
    timer: str
    gpus: list[GpuLoadSummary]


@dataclass
class BurnRun:
    """What `rigcheck burn` measured: the trace, its analysis per GPU, the load per GPU, the sampler's costs."""

    trace: Trace
    analyses: list[GpuBurnAnalysis]
    workload: BurnWorkload
    sampler: SamplerReport
    interrupted: bool
    fingerprint: BurnFingerprint | None = None  # None: not run (the burn stage of verify runs its own)
    kernel_log: BurnKernelLog | None = None  # None: not read

    @property
    def failed_gpus(self) -> list[int]:
        """GPUs whose load itself failed."""
        return [g.index for g in self.workload.gpus if g.error is not None]

    @property
    def wrong_gpus(self) -> list[int]:
        """GPUs that computed a wrong result."""
        return [g.index for g in self.workload.gpus if g.errors]


RUN_FIELDS = ("partial", "interrupted", "workload", "sampler")
# A run's keys present where each ran (absent, never null, otherwise).
RUN_OPTIONAL = ("fingerprint", "kernel_log")


def _run_fields_schema(schema: dict[str, Any]) -> None:
    """In the schema, the fields of a run are present together or not at all, and never null."""
    props: dict[str, Any] = schema["properties"]
    for name in RUN_FIELDS:
        prop = props[name]
        prop.pop("default", None)
        prop.update(next(alt for alt in prop.pop("anyOf") if alt.get("type") != "null"))
    schema["required"] = [name for name in schema["required"] if name not in (*RUN_FIELDS, *RUN_OPTIONAL)]
    schema["dependentRequired"] = {name: list(RUN_FIELDS) for name in RUN_FIELDS}


class BurnDocument(Document):
    """The burn verdict per GPU (docs/commands.md, issue 5). `rigcheck burn` adds `partial`, `interrupted`,
    `workload`, `sampler` and, per GPU, `tflops_sustained`, `tflops_first_10s` and `errors`. A null number of a
    GPU has its reason in that GPU's `missing` map."""

    model_config = ConfigDict(json_schema_extra=_run_fields_schema)

    schema_: Literal["rigcheck.burn/2"] = Field(BURN_SCHEMA, alias="schema")
    source: TraceSource
    path: str | None
    interval_s: float | None
    exit_code: int = Field(json_schema_extra={"enum": [0, 1, 130, 143]})  # 143: stopped by SIGTERM
    diagnostics: list[str]
    gpus: list[GpuBurnAnalysis]
    # Only from `rigcheck burn` (all four, or none):
    partial: bool | None = None
    interrupted: bool | None = None
    workload: BurnWorkload | None = None
    sampler: SamplerReport | None = None
    # Only from `rigcheck burn`, each where it ran (absent otherwise, never null):
    fingerprint: BurnFingerprint | None = Field(
        None,
        exclude_if=_absent_if_none,
        json_schema_extra=_never_null,
        description="the fingerprint run before the load; absent from --analyze and the burn stage of verify",
    )
    kernel_log: BurnKernelLog | None = Field(
        None,
        exclude_if=_absent_if_none,
        json_schema_extra=_never_null,
        description="the kernel log read around the run; absent from --analyze and the burn stage of verify",
    )
    host: str | None = absent_unless_set("the host it ran on; absent from --analyze and the burn stage of verify")
    created_at: str | None = absent_unless_set(
        "when the run ended, RFC 3339 in UTC: what dates it in the ledger; absent from --analyze and verify's burn"
    )

    # The samples behind the analysis, for the HTML page's plots; not in the JSON (the trace file holds them).
    _trace: Trace | None = PrivateAttr(None)

    @model_validator(mode="after")
    def _run_fields_together(self) -> BurnDocument:
        if len({getattr(self, name) is None for name in RUN_FIELDS}) != 1:
            raise ValueError(f"{', '.join(RUN_FIELDS)}: all four or none")
        return self

    @property
    def trace(self) -> Trace | None:
        return self._trace

    @property
    def is_run(self) -> bool:
        """A `rigcheck burn` (not a `burn --analyze` of a file)."""
        return self.workload is not None

    @classmethod
    def of_analysis(cls, trace: Trace, analyses: list[GpuBurnAnalysis], exit_code: int) -> BurnDocument:
        """The document of `burn --analyze`: the verdicts on a recorded trace."""
        return cls._build(trace, analyses, exit_code)

    @classmethod
    def of_run(cls, run: BurnRun, exit_code: int) -> BurnDocument:
        """The document of `rigcheck burn`: the verdicts, the load, and whether the run was cut short."""
        return cls._build(
            run.trace,
            run.analyses,
            exit_code,
            partial=run.interrupted or bool(run.failed_gpus),
            interrupted=run.interrupted,
            workload=run.workload,
            sampler=run.sampler,
            fingerprint=run.fingerprint,
            kernel_log=run.kernel_log,
        )

    @classmethod
    def _build(cls, trace: Trace, analyses: list[GpuBurnAnalysis], exit_code: int, **run: Any) -> BurnDocument:
        doc = cls(
            source=trace.source,
            path=trace.path,
            interval_s=trace.interval_s,
            exit_code=exit_code,
            diagnostics=list(trace.diagnostics),
            gpus=analyses,
            **run,
        )
        doc._trace = trace
        return doc

    def to_json_dict(self) -> dict[str, Any]:
        data = super().to_json_dict()
        if not self.is_run:
            for name in RUN_FIELDS:
                del data[name]
        return data

"""``rigcheck.bench/1``: the result of a `rigcheck bench …` command, one document type per benchmark.

Every document starts with the same keys (``schema``, ``benchmark``, ``partial``, ``error``, ``method``,
``backend``, ``world_size``, ``versions``, ``snapshot``, ``results``), and every row of ``results`` with the
generic keys of DESIGN.md (:class:`BenchRow`); each benchmark adds its own keys, in the order
docs/commands.md shows them. ``benchmark`` tells the documents apart (:data:`BenchDocument`, the union the
schema is generated from). Built in ``rigcheck.bench`` (the workers build the rows), drawn by
``rigcheck.report.bench.render``.

Some keys are printed only when they hold something (a row's ``note`` and ``missing``, ``p2p --compare-p2p``'s
``comparison``): :func:`absent_unless_set` fields, which the schema leaves optional and never null.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Annotated, Any, ClassVar, Final, Literal, TypedDict

from pydantic import ConfigDict, Field, RootModel, WithJsonSchema, model_validator

from rigcheck.model import absent, bench_source
from rigcheck.model.bench_judgement import FigureJudgement
from rigcheck.model.document import Document, OptionalSnapshotRef, Plain, reason_rules

BENCH_SCHEMA: Final = "rigcheck.bench/1"

# "posix": no device backend, plain file I/O through the OS (bench nvme).
Backend = Literal["gloo", "nccl", "cuda", "posix"]
Timer = Literal["perf_counter", "cuda_events"]
CollectiveOp = Literal["allreduce", "allgather", "reducescatter", "broadcast"]
YesNo = Literal["Y", "N"]
# A number as the code produced it: a catalogue figure may be an int (672 GB/s) and stays one in the JSON.
Number = Annotated[int | float, WithJsonSchema({"type": "number"})]
Count = Annotated[int, Field(ge=0)]
Reason = Annotated[str, Field(min_length=1)]

# Keys printed only when set (rigcheck.model.absent), named here where they began.
absent_unless_set = absent.absent_unless_set


def _gpus_used() -> Any:
    """``gpus``: which GPUs a run with --gpus measured (a run without it measures every GPU and has none)."""
    return absent_unless_set("--gpus: the GPUs measured, by nvidia-smi index, in the order given (rank r: the r-th)")


def _row_rules(schema: dict[str, Any], cls: type[Any]) -> None:
    """A row's "a null has its reason" rules (ReasonedRecord's, for a row with a ``missing`` map), with
    ``missing`` itself required when a reasoned field is null: it is printed only when it names something."""
    if "missing" not in schema.get("properties", {}):
        return  # a row without a reasons map (p2p's): nothing to tie its nulls to
    reason_rules(schema, cls)
    for rule in schema.get("allOf", []):
        rule["then"]["required"] = ["missing"]


# --- the method, versions, the generic row -------------------------------------------------------------------


class Method(Plain):
    """How a figure was measured; ``method_version`` changes whenever the method changes."""

    method_version: str
    warmup: Count
    repeats: int = Field(ge=1)
    statistic: str = "median"
    timer: Timer = "perf_counter"


class Versions(Plain):
    """Software versions a result was measured with; null where not installed."""

    rigcheck: str | None
    python: str | None
    torch: str | None
    cuda: str | None
    nccl: str | None
    transformers: str | None = absent_unless_set("train only")


class RowHead(TypedDict):
    """The generic keys of a row, as :func:`row_head` computes them (unpacked into a row's constructor)."""

    name: str
    unit: str
    value: float
    median: float
    min: float
    max: float
    repeats: int
    warmup: int
    sizes: list[int]
    backend: Backend
    world_size: int
    method_version: str


def row_head(
    *,
    name: str,
    unit: str,
    samples: Sequence[float],
    method: Method,
    backend: Backend,
    world_size: int,
    sizes: Sequence[int] = (),
) -> RowHead:
    """The generic keys of one result: ``value`` is the median of ``samples`` (already in ``unit``)."""
    if not samples:
        raise ValueError("a result needs at least one sample")
    median = statistics.median(samples)
    return RowHead(
        name=name,
        unit=unit,
        value=median,
        median=median,
        min=min(samples),
        max=max(samples),
        repeats=len(samples),
        warmup=method.warmup,
        sizes=list(sizes),
        backend=backend,
        world_size=world_size,
        method_version=method.method_version,
    )


def reasons(reason: str, **values: object) -> dict[str, str]:
    """``{key: reason}`` for each of ``values`` that is None: the ``missing`` map of a row."""
    return {key: reason for key, value in values.items() if value is None}


class BenchRow(Plain):
    """One result: the generic keys of DESIGN.md; each benchmark's row adds its own after them.

    A row with a ``missing`` map is a reasoned record (rigcheck.model.document.ReasonedRecord's rules, through
    :func:`_row_rules`): each nullable field not in ``NOT_A_READING`` has its reason there when null.
    """

    model_config = ConfigDict(json_schema_extra=_row_rules)

    NOT_A_READING: ClassVar[frozenset[str]] = frozenset()

    name: str
    unit: str = Field(description='"GB/s", "TFLOPS", "ms", ...')
    value: float = Field(description="the figure: the median of the repeats, in unit")
    median: float
    min: float
    max: float
    repeats: int = Field(ge=1)
    warmup: Count
    sizes: list[Count] = Field(description="the sizes measured: bytes, or m, n, k")
    backend: Backend
    world_size: int = Field(ge=1)
    method_version: str


_GPU_INDEX = "the GPU: its nvidia-smi index with --gpus, else the CUDA device index; null on a CPU"
_PAIR_INDEX = "its nvidia-smi index with --gpus, else its CUDA device index (with --from: the tool's device index)"

# --- rows per benchmark --------------------------------------------------------------------------------------


class CollectiveRow(BenchRow):
    """One buffer size of a collective sweep: nccl-tests' time, algbw and busbw, and the data check."""

    op: CollectiveOp
    size_bytes: Count
    time_us_median: float
    algbw_gbps: float
    busbw_gbps: float
    correct: bool
    note: str | None = absent_unless_set("why this size's figure needs a caveat")
    # Read from nccl-tests output (`--from`), absent from a rigcheck run: the cells nccl-tests prints beside.
    count: Count | None = absent_unless_set("nccl-tests: elements per rank (its count column)")
    dtype: str | None = absent_unless_set("nccl-tests: its type column (float, half, bfloat16...)")
    redop: str | None = absent_unless_set("nccl-tests: its redop column (sum, none...)")
    root: int | None = absent_unless_set("nccl-tests: its root column (-1: no root)")
    wrong: Count | None = absent_unless_set("nccl-tests: out-of-place #wrong; absent with -c 0 (N/A)")
    max_error: float | None = absent_unless_set("nccl-tests before 2.0: the out-of-place error column")
    in_place_time_us: float | None = absent_unless_set("nccl-tests: the in-place time (mean of its iterations)")
    in_place_algbw_gbps: float | None = absent_unless_set("nccl-tests: the in-place algbw")
    in_place_busbw_gbps: float | None = absent_unless_set("nccl-tests: the in-place busbw")
    in_place_wrong: Count | None = absent_unless_set("nccl-tests: in-place #wrong")
    in_place_max_error: float | None = absent_unless_set("nccl-tests before 2.0: the in-place error column")
    ceiling_gbps: Number | None = absent_unless_set("the link's rate per direction, what busbw is compared with")
    fraction_of_ceiling: float | None = absent_unless_set("busbw / ceiling_gbps")


# fp8: only in a row read from mamf-finder's output (--from); rigcheck's own sweep measures the other four.
MatmulDtype = Literal["bf16", "fp16", "tf32", "fp32", "fp8"]


class MatmulRow(BenchRow):
    """One (dtype, shape) of the matmul sweep on one rank."""

    NOT_A_READING: ClassVar[frozenset[str]] = frozenset({"gpu", "peak_source"})

    rank: Count
    gpu: int | None = Field(description=_GPU_INDEX)
    device_name: str
    dtype: MatmulDtype
    m: Count
    n: Count
    k: Count
    # null (reason not_in_source) only in a row read from mamf-finder's output, which prints TFLOPS alone
    time_us_median: float | None
    peak_tflops: Number | None = Field(description="the catalogue's dense peak for this dtype")
    peak_source: str | None
    correct: bool
    max_rel_error: float | None
    best: bool = Field(description="the highest median of its rank and dtype among correct products")
    tflops_median: float
    tflops_min: float
    tflops_max: float
    fraction_of_peak: float | None
    missing: dict[str, Reason] = absent_unless_set("field -> why it is null", empty={})


class MembwRow(BenchRow):
    """One buffer size of the device-local copy on one rank."""

    NOT_A_READING: ClassVar[frozenset[str]] = frozenset({"gpu", "peak_source"})

    rank: Count
    gpu: int | None = Field(description=_GPU_INDEX)
    device_name: str
    # null (reason not_in_source) only in a row read from nvbandwidth's output, which does not print them
    size_bytes: Count | None
    iters: int | None = Field(ge=1)
    time_us_median: float | None
    correct: bool
    copy_gbps: float = Field(description="bytes copied once / time")
    read_write_gbps: float = Field(description="2 × copy: the read and the write the memory sees")
    peak_memory_gbps: Number | None = Field(description="the catalogue's memory bandwidth")
    peak_source: str | None
    fraction_of_peak: float | None
    missing: dict[str, Reason] = absent_unless_set("field -> why it is null", empty={})


class HostlinkRow(BenchRow):
    """One GPU, direction, host memory kind and CPU binding of the host-link copies."""

    # Labels and echoes rather than readings: the address, the CPUs bound (null: not bound), the GPU's local
    # CPUs and NUMA node as the snapshot has them (local_cpus_source says "unknown" when it has none), the link.
    NOT_A_READING: ClassVar[frozenset[str]] = frozenset({"pci_bus_id", "cpus", "local_cpus", "numa_node", "pcie_link"})

    gpu: Count
    device_name: str
    pci_bus_id: str | None
    direction: Literal["h2d", "d2h"]
    memory: Literal["pinned", "pageable"]
    numa_bound: bool
    cpus: str | None
    local_cpus: str | None
    local_cpus_source: str
    numa_node: int | None
    # null (reason not_in_source) only in a row read from nvbandwidth's output, which does not print them
    size_bytes: Count | None
    iters: int | None = Field(ge=1)
    time_us_median: float | None
    pcie_link: str | None = Field(description='"Gen5 x16": the link the theoretical rate is of')
    pcie_theoretical_gbps: float | None
    correct: bool
    gbps: float
    fraction_of_pcie: float | None
    missing: dict[str, Reason] = absent_unless_set("field -> why it is null", empty={})


class P2PRow(BenchRow):
    """One ordered GPU pair in one mode (peer access, or staged through host memory).

    Its nulls carry no reasons (as printed since the first version): an unknown link or NVML status, no
    bidirectional or latency samples, no theoretical figure for the link. Only ``size_bytes``, null in a row read
    from another tool's output that does not print it, has its reason in ``missing``.
    """

    NOT_A_READING: ClassVar[frozenset[str]] = frozenset(
        {"peer_access", "link", "nvlinks", "nvml_p2p_read", "nvml_p2p_write", "bidirectional_gbps", "latency_us"}
        | {"theoretical_gbps", "theoretical_source", "fraction_of_theoretical"}
    )

    src: Count = Field(description=f"the source GPU: {_PAIR_INDEX}")
    dst: Count = Field(description=f"the destination GPU: {_PAIR_INDEX}")
    mode: Literal["peer", "staged"]
    peer_access: bool | None
    size_bytes: Count | None
    link: str | None = Field(description="the pair's topo code: NV4, PIX, SYS...")
    nvlinks: int | None
    nvml_p2p_read: str | None
    nvml_p2p_write: str | None
    correct: bool
    unidirectional_gbps: float
    bidirectional_gbps: float | None
    latency_us: float | None
    theoretical_gbps: Number | None
    theoretical_source: str | None
    fraction_of_theoretical: float | None
    missing: dict[str, Reason] = absent_unless_set("field -> why it is null (size_bytes only)", empty={})


class TrainRow(BenchRow):
    """The gpt2 DDP run: one row."""

    model: str
    parameters: Count
    dtype: Literal["fp32", "bf16 autocast"]
    optimizer: str
    data: Literal["text bytes", "generated tokens"]
    steps: int = Field(ge=1)
    warmup_steps: Count
    timed_steps: Count
    batch_size: int = Field(ge=1)
    global_batch_size: int = Field(ge=1)
    seq_len: int = Field(ge=1)
    train_runtime_s: float
    samples_per_s: float
    tokens_per_s: float
    step_time_median_ms: float
    step_time_p10_ms: float
    step_time_p90_ms: float
    step_time_min_ms: float
    step_time_max_ms: float
    peak_memory_bytes: Count
    peak_memory_kind: str
    loss_first: float
    loss_final: float
    loss_finite: bool
    loss_decreased: bool
    correct: bool


class NvmeRow(BenchRow):
    """One direction, I/O mode and block size of `bench nvme`; ``nvme_read`` / ``nvme_write`` repeat the dd-like
    direct row (1 MiB, one request at a time, the write into a new file) under the names a plan reads."""

    NOT_A_READING: ClassVar[frozenset[str]] = frozenset({"pcie_link"})

    direction: Literal["read", "write"]
    mode: Literal["direct", "buffered"] = Field(description="direct: O_DIRECT, the page cache bypassed")
    summary: bool = Field(description="nvme_read / nvme_write: the dd-like direct row (1 MiB, one request), repeated")
    block_size_bytes: Count = Field(description="bytes per request")
    queue_depth: int = Field(ge=1, description="requests in flight (one thread each)")
    file_bytes: Count = Field(description="bytes written or read per timed pass")
    time_s_median: float
    gbps: float = Field(description="1e9 bytes per second, the median of the passes")
    pcie_link: str | None = Field(description='"Gen4 x4": the NVMe drive\'s link the ceiling is of')
    pcie_theoretical_gbps: float | None
    fraction_of_pcie: float | None
    note: str | None = absent_unless_set("why this row's figure needs a caveat")
    missing: dict[str, Reason] = absent_unless_set("field -> why it is null", empty={})


class StorageDevice(Plain):
    """The filesystem and block device under a directory (rigcheck.probe.storage_path), null with a reason in
    ``missing`` where something could not be read or does not apply (a PCIe link on a disk that is not NVMe)."""

    model_config = ConfigDict(json_schema_extra=_row_rules)

    NOT_A_READING: ClassVar[frozenset[str]] = frozenset()

    path: str = Field(description="the directory, symbolic links resolved")
    mount_point: str | None
    fs_type: str | None = Field(description="as /proc/mounts names it: ext4, xfs, tmpfs, ...")
    mount_source: str | None = Field(description="the mounted device as /proc/mounts names it")
    device: str | None = Field(description="the block device: nvme0n1p2")
    disk: str | None = Field(description="the whole disk the device is on: nvme0n1")
    model: str | None
    rotational: bool | None
    nvme_controller: str | None = Field(description="nvme0; null when the disk is not an NVMe drive")
    pci_bus_id: str | None
    pcie_link: str | None = Field(description='the link as trained: "Gen4 x4"')
    pcie_link_max: str | None = Field(description="the best link the drive and its slot can train to")
    pcie_theoretical_gbps: float | None = Field(description="the trained link's rate per direction")
    pcie_source: str | None
    missing: dict[str, Reason] = absent_unless_set("field -> why it is null", empty={})


class MatmulBest(Plain):
    """The best shape of one rank and dtype (a copy of its row's keys)."""

    rank: Count
    gpu: int | None
    dtype: MatmulDtype
    m: Count
    n: Count
    k: Count
    tflops_median: float
    peak_tflops: Number | None
    fraction_of_peak: float | None


# --- the documents -------------------------------------------------------------------------------------------


# An imported document's parts (rigcheck.model.bench_source), named here beside the documents that carry them.
ImportedTool = bench_source.ImportedTool
ImportedDevice = bench_source.ImportedDevice
ImportedSource = bench_source.ImportedSource
Ceiling = bench_source.Ceiling
CollectiveJudgement = bench_source.CollectiveJudgement


class BenchBaseDocument(Document):
    """The keys every bench document starts with; each benchmark narrows ``benchmark`` and ``results``."""

    schema_: Literal["rigcheck.bench/1"] = Field(BENCH_SCHEMA, alias="schema")
    benchmark: str
    partial: bool = Field(description="a worker failed: the rows measured before are kept")
    error: str | None = Field(description="what ended the run early; null when it did not")
    method: Method
    backend: Backend
    world_size: int = Field(ge=1)
    versions: Versions
    snapshot: OptionalSnapshotRef = Field(description="the machine, as `rigcheck snapshot`")
    results: Sequence[BenchRow]


class CollectiveDocument(BenchBaseDocument):
    """`bench allreduce | allgather | reducescatter | broadcast`: one row per buffer size."""

    benchmark: CollectiveOp
    results: Sequence[CollectiveRow]
    op: CollectiveOp
    sizes: list[Count] = Field(description="the buffer sizes measured, bytes")
    wall_s: float
    notes: list[str]
    gpus: list[Count] | None = _gpus_used()
    source: ImportedSource | None = absent_unless_set("read from another tool's output (--from); absent on a run")
    ceiling: Ceiling | None = absent_unless_set("the link's rate, where the machine or --link names it")
    judgement: CollectiveJudgement | None = absent_unless_set("all-reduce read with --from: the band's verdict")


class MatmulDocument(BenchBaseDocument):
    """`bench matmul`: one row per rank, dtype and shape; ``best`` per rank and dtype."""

    benchmark: Literal["matmul"] = "matmul"
    results: Sequence[MatmulRow]
    notes: list[str]
    best: list[MatmulBest] = Field(description="the best row per rank and dtype")
    gpus: list[Count] | None = _gpus_used()
    source: ImportedSource | None = absent_unless_set("read from mamf-finder's output (--from); absent on a run")
    judgement: list[FigureJudgement] | None = absent_unless_set("read with --from: the best figure against its band")


class MembwDocument(BenchBaseDocument):
    """`bench membw`: one row per rank and buffer size."""

    benchmark: Literal["membw"] = "membw"
    results: Sequence[MembwRow]
    notes: list[str]
    gpus: list[Count] | None = _gpus_used()
    source: ImportedSource | None = absent_unless_set("read from nvbandwidth's output (--from); absent on a run")
    judgement: list[FigureJudgement] | None = absent_unless_set("read with --from: each figure against its band")


class HostlinkDocument(BenchBaseDocument):
    """`bench hostlink`: one row per GPU, direction, memory kind and binding."""

    benchmark: Literal["hostlink"] = "hostlink"
    results: Sequence[HostlinkRow]
    notes: list[str]
    gpus: list[Count] | None = _gpus_used()
    source: ImportedSource | None = absent_unless_set("read from nvbandwidth's output (--from); absent on a run")
    judgement: list[FigureJudgement] | None = absent_unless_set("read with --from: each figure against its band")


class PairRow(Plain):
    """One side of a pair's comparison: the peer copy (P2P=Y) or the staged one (P2P=N)."""

    p2p: YesNo
    mode: Literal["peer", "staged"]
    time_s: float | None = Field(description="one copy of the row's size at its median rate")
    gbps: float | None
    transport: str


class PairComparison(Plain):
    """The guide's table for one ordered GPU pair."""

    src: Count
    dst: Count
    rows: list[PairRow]
    speedup_percent: float | None = Field(description="null when a time is unknown")
    time_ratio: float | None


class PairsComparison(Plain):
    """`bench p2p --compare-p2p`: the guide's table per ordered GPU pair, peer copy (P2P=Y) against the copy
    staged through host memory (P2P=N)."""

    pairs: list[PairComparison]
    speedup_formula: str
    warnings: list[str]
    note: str


class P2PDocument(BenchBaseDocument):
    """`bench p2p`: one row per ordered pair and mode, the matrices; with --compare-p2p the guide's table."""

    benchmark: Literal["p2p"] = "p2p"
    results: Sequence[P2PRow]
    notes: list[str]
    gpus: Count = Field(description="GPUs measured")
    matrices: dict[str, list[list[float | None]]] = Field(
        description="<figure>_<mode> -> GPU x GPU matrix, null on the diagonal"
    )
    # Not ``gpus``, as the other documents name their --gpus list: here ``gpus`` has always been the count.
    matrix_gpus: list[Count] | None = absent_unless_set(
        "--gpus: the GPUs measured, by nvidia-smi index, in the order given: matrix row and column i is "
        "matrix_gpus[i] (without --gpus, row and column i is CUDA device i, as the rows' src and dst)"
    )
    comparison: PairsComparison | None = absent_unless_set("--compare-p2p only")
    warnings: list[str] | None = absent_unless_set("--compare-p2p only: the comparison's warnings")
    source: ImportedSource | None = absent_unless_set("read from another tool's output (--from); absent on a run")
    judgement: list[FigureJudgement] | None = absent_unless_set("read with --from: each figure against its band")


class TrainDocument(BenchBaseDocument):
    """`bench train`: the gpt2 DDP benchmark, one row."""

    benchmark: Literal["train"] = "train"
    results: Sequence[TrainRow]
    notes: list[str]
    wall_s: float
    gpus: list[Count] | None = _gpus_used()


class NvmeDocument(BenchBaseDocument):
    """`bench nvme`: sequential read and write of one file under a directory, direct (a block-size sweep)
    and buffered; the device and filesystem under it."""

    benchmark: Literal["nvme"] = "nvme"
    results: Sequence[NvmeRow]
    notes: list[str]
    storage: StorageDevice
    size_bytes: Count = Field(description="the file written and read")
    direct_io_error: str | None = Field(description="why the direct rows are absent (O_DIRECT refused); null")
    wall_s: float


# --- --compare-p2p: one benchmark run twice ------------------------------------------------------------------


class NcclFacts(Plain):
    """What a run's NCCL log said (rigcheck.readers.nccl_log)."""

    transports: list[str]
    p2p_disabled: bool | None
    nccl_version: str | None
    nranks: int | None
    p2p_evidence: str
    channel_lines: Count


class CollectiveRunDocument(CollectiveDocument):
    """One of the two runs: its document without the snapshot (the comparison has it once), then its tags."""

    snapshot: OptionalSnapshotRef = Field(None, exclude=True)
    p2p: YesNo
    env: dict[str, str] = Field(description="the variables set for this run")
    transport: str = Field(description="what NCCL used, from its NCCL_DEBUG=INFO output")
    nccl: NcclFacts | None = Field(description="what the run's NCCL log said; null on gloo or without a log")


class TrainRunDocument(TrainDocument):
    """One of the two runs: its document without the snapshot (the comparison has it once), then its tags."""

    snapshot: OptionalSnapshotRef = Field(None, exclude=True)
    p2p: YesNo
    env: dict[str, str] = Field(description="the variables set for this run")
    transport: str = Field(description="what NCCL used, from its NCCL_DEBUG=INFO output")
    nccl: NcclFacts | None = Field(description="what the run's NCCL log said; null on gloo or without a log")


class ComparedCollectiveRow(CollectiveRow):
    """A run's row in the comparison's ``results``, tagged with its run."""

    p2p: YesNo


class ComparedTrainRow(TrainRow):
    """A run's row in the comparison's ``results``, tagged with its run."""

    p2p: YesNo


class RunFigures(Plain):
    """One run's line of the guide's table."""

    p2p: YesNo
    nccl_p2p_disable: str | None
    time_s: float | None = Field(
        description="train: train_runtime_s; collectives: the size-weighted mean of the per-size median times"
    )


class CollectiveFigures(RunFigures):
    busbw_gbps: float | None = Field(description="at the largest size")
    transport: str


class TrainFigures(RunFigures):
    samples_per_s: float | None
    transport: str


class Comparison(Plain):
    """The guide's table for two runs, and the speed-up as the guide counts it."""

    rows: Sequence[RunFigures]
    speedup_percent: float | None = Field(
        description="(time without P2P - time with P2P) / time without P2P x 100; null when a time is unknown"
    )
    time_ratio: float | None
    speedup_formula: str


class CollectiveComparison(Comparison):
    rows: Sequence[CollectiveFigures]


class TrainComparison(Comparison):
    rows: Sequence[TrainFigures]


def _one_run_only_when_partial(schema: dict[str, Any], cls: type[Any]) -> None:
    """In the schema too: a comparison with one run is an interrupted one (partial)."""
    schema["allOf"] = [
        {"if": {"properties": {"runs": {"maxItems": 1}}}, "then": {"properties": {"partial": {"const": True}}}}
    ]


class CompareBaseDocument(Document):
    """`--compare-p2p`: two runs differing only in NCCL_P2P_DISABLE=1, the guide's table, its warnings."""

    model_config = ConfigDict(json_schema_extra=_one_run_only_when_partial)

    schema_: Literal["rigcheck.bench/1"] = Field(BENCH_SCHEMA, alias="schema")
    benchmark: str = Field(description='"<benchmark>-compare-p2p"')
    label: str
    partial: bool = Field(description="a run failed")
    error: str | None
    method: Method
    backend: Backend
    world_size: int = Field(ge=1)
    versions: Versions
    snapshot: OptionalSnapshotRef = Field(description="the machine, as `rigcheck snapshot`")
    results: Sequence[CollectiveRow | TrainRow] = Field(description="both runs' rows, each tagged p2p Y or N")
    # Two runs; one when the run was interrupted before the second could start (partial, error says so).
    runs: Sequence[BenchBaseDocument] = Field(min_length=1, max_length=2)
    comparison: Comparison
    warnings: list[str] = Field(description="a run that failed, or whose transport is not what it should be")
    notes: list[str]

    @model_validator(mode="after")
    def _one_run_only_when_partial(self) -> CompareBaseDocument:
        if len(self.runs) < 2 and not self.partial:
            raise ValueError("a comparison with one run must be partial (the second run never started)")
        return self


class CollectiveCompareDocument(CompareBaseDocument):
    benchmark: Literal[
        "allreduce-compare-p2p", "allgather-compare-p2p", "reducescatter-compare-p2p", "broadcast-compare-p2p"
    ]
    results: Sequence[ComparedCollectiveRow]
    runs: Sequence[CollectiveRunDocument] = Field(min_length=1, max_length=2)
    comparison: CollectiveComparison


class TrainCompareDocument(CompareBaseDocument):
    benchmark: Literal["train-compare-p2p"] = "train-compare-p2p"
    results: Sequence[ComparedTrainRow]
    runs: Sequence[TrainRunDocument] = Field(min_length=1, max_length=2)
    comparison: TrainComparison


SingleDocument = (
    CollectiveDocument | MatmulDocument | MembwDocument | HostlinkDocument | P2PDocument | TrainDocument | NvmeDocument
)
CompareDocument = CollectiveCompareDocument | TrainCompareDocument
BenchDocument = Annotated[SingleDocument | CompareDocument, Field(discriminator="benchmark")]


class BenchSchema(RootModel[BenchDocument]):
    """A measurement (docs/commands.md, DESIGN.md Contracts): one row per result in `results`, each with the
    generic keys and, by `benchmark`, its benchmark's keys. `--compare-p2p` on train and the collectives gives
    "<benchmark>-compare-p2p" with `label`, `runs`, `comparison` and `warnings`; on p2p it adds `comparison` and
    `warnings`. References to other rigcheck schemas are relative to this $id: '../rigcheck.snapshot/1'
    resolves to 'rigcheck.snapshot/1' (snapshot-1.schema.json)."""


def parse_bench(data: object) -> SingleDocument | CompareDocument:
    """A ``rigcheck.bench/1`` document read back from its JSON (ValidationError when it is not one)."""
    return BenchSchema.model_validate(data).root

"""``rigcheck.verify/1`` and ``rigcheck.verify-bands/1``: the verdict of `rigcheck verify` and the bands it
judges against (`verify --explain`).

A check holds one figure (``value`` in ``unit``) and the judgements made of it, each shown: against the SKU's
achievable band (``expected_min``, ``expected_source``), against the median of the GPU's identical peers in the
box (``peer_best`` keeps their best), against an earlier run of this node (``baseline``). Its verdict is
``fail`` when any judgement fails, ``incomplete`` when the figure could not be measured (cut short by the
budget, the step failed, a file is missing), ``unjudged`` when no band, peer or baseline held the figure (a CPU
run), ``pass`` otherwise. A GPU's verdict is the worst of its checks, the node's the worst of its GPUs, its
node checks and its steps (fail > incomplete > unjudged > pass; docs/verdicts.md).

Built by ``rigcheck.checks.verify.judge`` (the judge, pure) from :class:`VerifyInputs` — measured by
``rigcheck.bench.verify.run`` or read from saved documents by ``rigcheck.readers.saved`` — and drawn by
``rigcheck.report.verify.render``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final, Literal

from pydantic import Field

from rigcheck.model.bench import (
    CollectiveDocument,
    HostlinkDocument,
    MatmulDocument,
    MembwDocument,
    P2PDocument,
    absent_unless_set,
)
from rigcheck.model.burn import BurnDocument
from rigcheck.model.dcgm import DcgmDiag
from rigcheck.model.document import Document, Plain
from rigcheck.model.finding import Finding
from rigcheck.model.fingerprint import FingerprintRow
from rigcheck.model.snapshot import Snapshot
from rigcheck.model.telemetry import Sample

# The verdict words live in model/verdict.py, free of pydantic models (doctor's exit code needs them); re-exported.
from rigcheck.model.verdict import VERDICT_ORDER as VERDICT_ORDER  # noqa: PLC0414
from rigcheck.model.verdict import StepStatus as StepStatus  # noqa: PLC0414
from rigcheck.model.verdict import Verdict as Verdict  # noqa: PLC0414
from rigcheck.model.verdict import worst as worst  # noqa: PLC0414

VERIFY_SCHEMA: Final = "rigcheck.verify/1"
VERIFY_BANDS_SCHEMA: Final = "rigcheck.verify-bands/1"

Level = Literal["quick", "full", "prolog"]
Rule = Literal["band", "peers", "baseline", "result", "findings", "dcgm", "fingerprint"]
RuleVerdict = Literal["pass", "fail", "not_judged"]


class Judgement(Plain):
    """One rule applied to a figure: what it was held against and what came of it, in one line."""

    rule: Rule
    verdict: RuleVerdict
    text: str
    reference: float | None = absent_unless_set(
        "the figure it was held to: the band floor, the identical peers' median, the baseline figure"
    )
    margin_pct: float | None = absent_unless_set(
        "how far the figure is from its reference, in percent of it: +21.2 above, -19.8 below"
    )
    finding: str | None = absent_unless_set(
        'the finding a failed judgement stands for, where it has one: "sdc.fingerprint-mismatch"'
    )
    first_difference: str | None = absent_unless_set(
        'the fingerprint: the first step whose output differs from the reference digests ("gemm_bf16_2")'
    )


class VerifyCheck(Plain):
    """One figure of a GPU (or of the node) and its verdict."""

    id: str = Field(
        description='"matmul_bf16", "membw", "hostlink_h2d", "p2p_0_1", "allreduce", "burn", "fingerprint", ...'
    )
    verdict: Verdict
    value: float | None = Field(description="the figure judged; null when it could not be measured")
    unit: str | None
    expected_min: float | None = Field(description="the floor of the SKU's achievable band; null: no band")
    expected_source: str | None = Field(description="where the band comes from, or why there is none")
    peak: float | None = Field(description="the theoretical figure the band is a fraction of")
    peer_best: float | None = Field(description="the best figure of this GPU's identical peers in the box")
    baseline: float | None = Field(description="this check's figure in the --baseline document")
    judgements: list[Judgement]
    detail: str = Field(description="one line: what was measured and how it was judged")
    remeasured: list[float] = Field(description="earlier figures of a re-measured check, first first")


class VerifyGpu(Plain):
    """One GPU's verdict."""

    index: int
    name: str
    uuid: str | None
    pci_bus_id: str | None
    verdict: Verdict
    checks: list[VerifyCheck]


class VerifyStep(Plain):
    """One step of the run, in the order it ran (or was read, with --from)."""

    name: str = Field(description="doctor, matmul, membw, hostlink, p2p, allreduce, burn")
    status: StepStatus
    elapsed_s: float
    budget_s: float | None = Field(description="the share of the budget it was given; null with --from")
    reason: str | None = Field(description="why it was cut short, failed or skipped; null when done")


class DcgmSummary(Plain):
    """The DCGM diagnostic judged beside rigcheck's own checks (`verify --from DIR` with a `dcgmi diag -j`)."""

    file: str
    version: str | None = Field(description="DCGM's version, when its output gives it")
    driver: str | None = Field(description="the driver DCGM detected, when given")
    tests: list[str] = Field(description="DCGM's tests in the file, as DCGM names them")


class VerifyDocument(Document):
    """`rigcheck verify --json`."""

    schema_: Literal["rigcheck.verify/1"] = Field(VERIFY_SCHEMA, alias="schema")
    verdict: Verdict
    level: Level | None = Field(description="null when judging saved documents (--from)")
    source: Literal["live", "cpu", "files"]
    elapsed_s: float
    budget_s: float | None = Field(description="the time budget; null with --from")
    host: str | None
    gpus: list[VerifyGpu]
    node: list[VerifyCheck] = Field(description="checks of the node as a whole: doctor, p2p pairs, all-reduce")
    steps: list[VerifyStep]
    baseline: str | None = Field(description="the --baseline file judged against, as given")
    site_config: str | None = Field(description="the --config file whose bands replaced the catalogue's")
    drain_reason: str | None = Field(description="one line for `scontrol update … reason=`; null on pass")
    notes: list[str]
    dcgm: DcgmSummary | None = absent_unless_set("the DCGM diagnostic judged (its checks are dcgm.<test>)")
    created_at: str | None = absent_unless_set(
        "when the run ended, RFC 3339 in UTC (2025-01-31T06:00:00Z): what dates the document in the ledger "
        "(`rigcheck history`); absent when judging saved documents (--from)"
    )


class Band(Plain):
    """What a healthy card reaches on one check, and the theoretical figure it is a fraction of."""

    check: str
    unit: str
    expected_min: float
    peak: float | None
    source: str
    basis: str = Field(description="what the peak is: 'BF16 dense', 'HBM3 spec', 'PCIe Gen5 x16 encoded', ...")
    lowest_healthy: float | None = absent_unless_set(
        "the lowest figure a published healthy machine reached against this floor (tests/calibration), in unit"
    )
    lowest_healthy_case: str | None = absent_unless_set("the calibration case that figure comes from")
    lowest_healthy_source: str | None = absent_unless_set("where that output was published (a URL)")
    lowest_healthy_on: str | None = absent_unless_set(
        "the machine it was measured on, as its source gives it (another SKU where the floor is the same)"
    )
    margin_pct: float | None = absent_unless_set(
        "how far that figure is above the floor, in percent of the floor: +5.7 above, -3.0 below (the floor fails it)"
    )


class GpuBands(Plain):
    name: str
    bands: list[Band]


class VerifyBandsDocument(Document):
    """`rigcheck verify --explain --json`."""

    schema_: Literal["rigcheck.verify-bands/1"] = Field(VERIFY_BANDS_SCHEMA, alias="schema")
    gpus: list[GpuBands]
    site_config: str | None
    notes: list[str]


@dataclass
class VerifyInputs:
    """Everything the judge needs: the machine, its findings and whichever measurements were made or read.

    A measurement that is None was not made (a step skipped or not in the directory); ``failed`` maps a step
    name to the one line that says why it produced nothing, ``cut_short`` names steps the budget ended early.
    """

    snapshot: Snapshot
    findings: list[Finding]
    cpu: bool = False
    matmul: MatmulDocument | None = None
    membw: MembwDocument | None = None
    hostlink: HostlinkDocument | None = None
    p2p: P2PDocument | None = None
    allreduce: CollectiveDocument | None = None
    burn: BurnDocument | None = None
    fingerprint: list[FingerprintRow] | None = None  # the first run's rows (one per GPU, or per CPU rank)
    fingerprint_again: list[FingerprintRow] = field(default_factory=list)  # the re-run with the float64 reference
    stuck: list[str] | None = None  # processes in D state on /dev/nvidia*, one line each; None: not looked for
    # The error counters read before and after the measurements (the prolog's bracket), and the seconds between.
    counters_before: list[Sample] | None = None
    counters_after: list[Sample] | None = None
    counters_s: float = 0.0
    dcgm: DcgmDiag | None = None  # DCGM's own diagnostic (`dcgmi diag -j`), judged as dcgm.<test> checks
    dcgm_file: str | None = None
    failed: dict[str, str] = field(default_factory=dict)
    cut_short: set[str] = field(default_factory=set)
    files: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what reading them noticed (a file skipped, ...)

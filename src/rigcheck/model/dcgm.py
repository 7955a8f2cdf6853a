"""A DCGM diagnostic run (`dcgmi diag -r 1|2|3|4 -j`) as rigcheck reads it: per test, per GPU, DCGM's own status
and messages. Built by ``rigcheck.readers.reference.dcgm_diag`` from either JSON layout DCGM has written (3.x: "DCGM GPU
Diagnostic" with ``gpu_id``/``gpu_ids``; 4.x: "DCGM Diagnostic" with ``entity_group``/``entity_id`` results,
``test_summary`` and ``metadata``), judged by ``rigcheck.checks.verify.dcgm``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from rigcheck.model.document import Plain

# DCGM's statuses ("Pass", "FAIL", "Skip", "Not Run", ...) folded; "unknown" keeps a word DCGM may add later.
DcgmStatus = Literal["pass", "fail", "warn", "skip", "not-run", "unknown"]
# A text table's "Pass - All": every GPU of the run, which the table does not list (the judge resolves it).
ALL_GPUS = "all GPUs"
# The Diagnostic.source that marks a snapshot made from a DCGM diagnostic alone
# (rigcheck.readers.reference.dcgm_machine).
MACHINE_MARK = "dcgm-diag"


class DcgmMessage(Plain):
    """One DCGM warning: its text and, from DCGM 2.2 on, its DCGM_FR_* error id."""

    text: str
    error_id: int | None = Field(description="DCGM's dcgmError_t (e.g. 62: DCGM_FR_MEMORY_BANDWIDTH); null: none")


class DcgmResult(Plain):
    """One test's outcome on one GPU, or on the node when DCGM gave it for no single GPU."""

    gpu: int | None = Field(description="DCGM's GPU id; null: the node (a software test, several GPUs, no GPU)")
    entity: str | None = Field(
        description="what the result is of when not one GPU: 'GPUs 0,1', 'CPU 0', 'all GPUs' (a text table's All)"
    )
    status: DcgmStatus
    status_text: str = Field(description="the status as DCGM wrote it")
    warnings: list[DcgmMessage]
    info: list[str]


class DcgmTest(Plain):
    """One DCGM test (plugin) and its results."""

    name: str = Field(description="as DCGM names it: 'Memory Bandwidth' (3.x), 'memory_bandwidth' (4.x)")
    category: str | None = Field(description="Deployment, Hardware, Integration, Stress, ...")
    results: list[DcgmResult]


class DcgmDevice(Plain):
    """One GPU the run covered, as the diagnostic lists it (`-j`'s ``entity_groups``, a table's Metadata)."""

    gpu: int | None = Field(description="DCGM's GPU id; null where the list gives none (a table's device ids)")
    device_id: str = Field(description="the PCI device id as DCGM prints it ('2330')")


class DcgmDiag(Plain):
    """A whole `dcgmi diag -j` output."""

    layout: Literal["3.x", "4.x"] = Field(
        description='"DCGM GPU Diagnostic" (3.x) or "DCGM Diagnostic" (4.x); of a text table: per-plugin rows '
        '("Pass - GPUs: 1, 2", DCGM 1.x-3.x) or a row per GPU ("GPU0: Pass", 4.x)'
    )
    version: str | None = Field(description="DCGM's version when the output gives it")
    driver: str | None = Field(description="the driver DCGM detected, when given")
    runtime_error: str | None = Field(description="why DCGM could not run the diagnostic at all, when it says")
    tests: list[DcgmTest]
    source: Literal["json", "text"] = Field(
        default="json", description="read from `dcgmi diag -j` (json) or from the table dcgmi prints without -j"
    )
    gpu_count: int | None = Field(
        default=None, description="how many GPUs the run names (a text table's 'GPU Device IDs Detected'), when said"
    )
    notes: list[str] = Field(default_factory=list, description="what the reader could not take as printed, and why")
    devices: list[DcgmDevice] = Field(
        default_factory=list, description="the GPUs the run covered, in DCGM's order, where the output lists them"
    )

    def gpus(self) -> list[int]:
        """Every GPU some result names, in order."""
        return sorted({r.gpu for t in self.tests for r in t.results if r.gpu is not None})

"""The data model: Snapshot (what was read) and Finding (what was concluded), every command's document
(``document.py``: Document, ReasonedRecord), the trace format (``trace.py``, ``telemetry.py``), JSON in and out
with validation (``io.py``) and schema generation (``schema.py``).

Rules: pydantic models and the functions that build, validate and serialise them; imports facts and the
leaves only. The one I/O it holds is ``files_out.py``, the writer of whole output files every layer above
uses. A document carries no decision of the CLI's own: an ``exit_code`` it prints is filled by the CLI
(cli/exits.py)."""

from rigcheck.facts.legend import LinkKind
from rigcheck.model.finding import Finding, Severity, gpu_subject, pair_subject
from rigcheck.model.io import snapshot_from_dict, snapshot_from_json, snapshot_to_dict, snapshot_to_json
from rigcheck.model.snapshot import (
    CLOCK_EVENT_REASONS,
    SNAPSHOT_SCHEMA,
    Diagnostic,
    Gpu,
    GpuPair,
    Host,
    Missing,
    Nic,
    NvLink,
    P2PStatus,
    PcieHop,
    Record,
    Snapshot,
    Software,
    Source,
    System,
    TopoGpu,
    TopoMatrix,
)

__all__ = [
    "CLOCK_EVENT_REASONS",
    "SNAPSHOT_SCHEMA",
    "Diagnostic",
    "Finding",
    "Gpu",
    "GpuPair",
    "Host",
    "LinkKind",
    "Missing",
    "Nic",
    "NvLink",
    "P2PStatus",
    "PcieHop",
    "Record",
    "Severity",
    "Snapshot",
    "Software",
    "Source",
    "System",
    "TopoGpu",
    "TopoMatrix",
    "gpu_subject",
    "pair_subject",
    "snapshot_from_dict",
    "snapshot_from_json",
    "snapshot_to_dict",
    "snapshot_to_json",
]

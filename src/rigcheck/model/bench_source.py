"""Where an imported ``rigcheck.bench/1`` document comes from (another tool's output read with ``--from``), and
the parts only such a document has: a collective's link ceiling and its band's verdict.

Re-exported by rigcheck.model.bench, whose documents carry them; kept here so that file stays small.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, WithJsonSchema

from rigcheck.model.document import Plain

# As rigcheck.model.bench defines them (a catalogue figure may be an int and stays one in the JSON).
Number = Annotated[int | float, WithJsonSchema({"type": "number"})]
Count = Annotated[int, Field(ge=0)]

ImportedTool = Literal["nccl-tests", "nvbandwidth", "p2pBandwidthLatencyTest", "bandwidthTest", "mamf-finder"]


class ImportedDevice(Plain):
    """One device the imported output lists (nccl-tests: its "# Using devices" rank lines)."""

    rank: Count | None = None
    host: str | None = None
    device: Count | None = Field(None, description="the device index on its host")
    pci_bus_id: str | None = Field(None, description="as the tool printed it")
    name: str | None = None


class ImportedSource(Plain):
    """Where an imported document's figures come from: another tool's output read with `--from` (nothing was
    run). Everything but ``tool`` and ``file`` is null where that output does not say it."""

    tool: ImportedTool
    file: str = Field(description='the file as given ("-": standard input)')
    version: str | None = Field(None, description="the tool's version where it prints one")
    ranks: int | None = Field(None, ge=1, description="processes or GPUs that took part")
    hosts: list[str] = Field(default_factory=list)
    devices: list[ImportedDevice] = Field(default_factory=list)
    avg_busbw_gbps: float | None = Field(None, description="nccl-tests' footer: Avg bus bandwidth")
    out_of_bounds: Count | None = Field(None, description="nccl-tests' footer: Out of bounds values")
    command: str | None = Field(None, description="the tool's header or command line, as printed")


class Ceiling(Plain):
    """The link a collective ran on and its rate per direction: what nccl-tests' busbw is compared with."""

    gbps: Number
    link: str = Field(description='"NV18: NVLink gen 4, 18 links x 25 GB/s", "PCIe Gen3 x16"')
    source: str


class CollectiveJudgement(Plain):
    """The largest size's busbw against `verify`'s all-reduce band (facts/bands.py), where one exists."""

    band_floor_gbps: Number | None = Field(description="null when no band applies (verdict unjudged)")
    verdict: Literal["pass", "fail", "unjudged"]
    reason: str
    source: str | None = Field(description="the band's source; null when unjudged")

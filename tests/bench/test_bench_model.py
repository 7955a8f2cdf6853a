"""The bench documents as data (rigcheck.model.bench): keys printed only when set, values kept as produced, one
answer for a GPU's PCIe link, and the JSON read back into the same document."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rigcheck.facts.pcie import gpu_pcie_link, normalize_bdf, pcie_bandwidth_gbps
from rigcheck.model import snapshot_from_json
from rigcheck.model.bench import (
    CollectiveRow,
    MembwDocument,
    MembwRow,
    Method,
    Versions,
    parse_bench,
    reasons,
    row_head,
)
from rigcheck.model.snapshot import Gpu
from rigcheck.report.render import Format, render
from tests.contracts.test_schemas import assert_invalid, assert_valid

SNAPSHOTS = Path(__file__).parent.parent / "fixtures" / "snapshots"
METHOD = Method(method_version="membw-1", warmup=2, repeats=3, timer="cuda_events")
VERSIONS = Versions(rigcheck="0.1.0", python="3.11", torch="2.5.1", cuda="12.4", nccl="2.21.5")


def membw_row(peak: float | None, missing: dict[str, str] | None = None) -> MembwRow:
    head = row_head(
        name="device-local copy 1 GiB",
        unit="GB/s",
        samples=[1500.0, 1510.0, 1490.0],
        method=METHOD,
        backend="nccl",
        world_size=1,
        sizes=[1 << 30],
    )
    fraction = 2 * head["median"] / peak if peak else None
    return MembwRow(
        **head,
        rank=0,
        gpu=0,
        device_name="NVIDIA TITAN RTX",
        size_bytes=1 << 30,
        iters=8,
        time_us_median=715.0,
        correct=True,
        copy_gbps=head["median"],
        read_write_gbps=2 * head["median"],
        peak_memory_gbps=peak,
        peak_source="TITAN RTX product page" if peak else None,
        fraction_of_peak=fraction,
        missing=reasons("this GPU is not in rigcheck's catalog", peak_memory_gbps=peak, fraction_of_peak=fraction)
        if missing is None
        else missing,
    )


def membw_doc(*rows: MembwRow) -> MembwDocument:
    return MembwDocument(
        partial=False,
        error=None,
        method=METHOD,
        backend="nccl",
        world_size=1,
        versions=VERSIONS,
        snapshot=snapshot_from_json((SNAPSHOTS / "2x-titan-rtx-nv2.json").read_text()),
        results=list(rows),
        notes=["how it was measured"],
    )


def test_missing_is_printed_only_when_it_names_something() -> None:
    assert "missing" not in membw_row(672).model_dump(mode="json")
    unknown = membw_row(None).model_dump(mode="json")
    assert unknown["missing"] == {
        "peak_memory_gbps": "this GPU is not in rigcheck's catalog",
        "fraction_of_peak": "this GPU is not in rigcheck's catalog",
    }
    assert list(unknown)[-1] == "missing"  # after the benchmark's keys, as printed
    doc = membw_doc(membw_row(672), membw_row(None)).to_json_dict()
    assert_valid(doc)
    doc["results"][1].pop("missing")  # a null figure without its reason
    assert_invalid(doc)


def test_a_catalogue_figure_keeps_its_type() -> None:
    """672 GB/s in the catalogue prints as 672, as before the document was typed (not 672.0)."""
    row = membw_row(672).model_dump(mode="json")
    assert row["peak_memory_gbps"] == 672
    assert isinstance(row["peak_memory_gbps"], int)
    assert isinstance(row["value"], float)


def test_optional_keys_are_absent_not_null() -> None:
    head = row_head(name="allreduce", unit="GB/s", samples=[1.0], method=METHOD, backend="nccl", world_size=2)
    fields: dict[str, Any] = {
        "op": "allreduce",
        "size_bytes": 8,
        "time_us_median": 10.0,
        "algbw_gbps": 1.0,
        "busbw_gbps": 1.0,
        "correct": True,
    }
    assert "note" not in CollectiveRow(**head, **fields).model_dump()
    assert CollectiveRow(**head, **fields, note="emulated").model_dump()["note"] == "emulated"
    assert "transformers" not in VERSIONS.model_dump()
    assert list(VERSIONS.model_copy(update={"transformers": "4.46"}).model_dump())[-1] == "transformers"


def test_json_reads_back_into_the_same_document() -> None:
    doc = membw_doc(membw_row(672), membw_row(None))
    text = render(doc, Format.JSON)
    assert isinstance(text, str)
    again = parse_bench(json.loads(text))
    assert isinstance(again, MembwDocument)
    assert again == doc
    with pytest.raises(ValueError, match="benchmark"):
        parse_bench({**json.loads(text), "benchmark": "nonsense"})


def test_markdown_is_the_terminal_table() -> None:
    md = render(membw_doc(membw_row(672)), Format.MARKDOWN)
    assert isinstance(md, str)
    lines = md.splitlines()
    assert lines[0] == "# rigcheck bench membw"
    assert "*nccl, world size 1; 2 warm-up, 3 timed, median (cuda_events); method membw-1*" in lines
    header = next(line for line in lines if line.startswith("| rank"))
    assert header.split(" | ")[3] == "copy (GB/s)"
    assert "| 0 | 1 GiB | 715.0 | 1500.0 | 3000.0 | 672 | 446.4% | yes |" in lines
    assert "- how it was measured" in lines


def test_one_answer_for_a_gpus_pcie_link() -> None:
    """The same GPU gives hostlink, p2p and the plan one figure: its trained width at its max generation."""
    idle = Gpu(index=0, pcie_gen_current=1, pcie_gen_max=3, pcie_width_current=16, pcie_width_max=16)
    link = gpu_pcie_link(idle)
    assert link is not None
    assert (link.gen, link.width, link.label) == (3, 16, "Gen3 x16")
    assert link.gbps == pcie_bandwidth_gbps(3, 16)
    split = Gpu(index=0, pcie_gen_current=4, pcie_gen_max=4, pcie_width_current=8, pcie_width_max=16)
    assert gpu_pcie_link(split) == gpu_pcie_link(Gpu(index=0, pcie_gen_max=4, pcie_width_current=8))
    assert gpu_pcie_link(Gpu(index=0, pcie_gen_current=4)) is None  # no width at all
    assert gpu_pcie_link(None) is None
    odd = gpu_pcie_link(Gpu(index=0, pcie_gen_max=9, pcie_width_current=16))
    assert odd is not None
    assert odd.gbps is None  # a generation facts/pcie does not know

    from rigcheck.bench.device.hostlink import pcie_theoretical
    from rigcheck.plan.comm import theoretical_busbw

    assert pcie_theoretical(idle) == (link.gbps, "Gen3 x16")
    phb = snapshot_from_json((SNAPSHOTS / "2x-3090-phb-throttling.json").read_text())
    found = theoretical_busbw(phb, 2)
    assert found is not None
    assert found[0] == pcie_theoretical(phb.gpu(0))[0] == pcie_bandwidth_gbps(4, 8)


def test_bus_ids_normalise_from_facts_and_probe_alike() -> None:
    from rigcheck.probe.sysfs import normalize_bdf as probe_normalize_bdf

    assert probe_normalize_bdf is normalize_bdf
    assert normalize_bdf("00000000:1B:00.0") == "0000:1b:00.0"

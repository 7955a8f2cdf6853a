"""Every document × every format: each report module draws its document in all four formats, from a real input.

Each typed document registers a sample here (a document built as its command builds it, from a fixture); the
test fails when a document has a schema but no renderers, or renderers but no sample, so no format is forgotten.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from rich.console import Console

from rigcheck.checks.doctor import run_checks
from rigcheck.cli.exits import exit_code_for
from rigcheck.model import Snapshot, snapshot_from_json
from rigcheck.model.doctor import doctor_document
from rigcheck.model.document import Document
from rigcheck.model.power_thermal import power_document, thermal_document
from rigcheck.model.schema import FILE_FORMATS, GENERATED
from rigcheck.model.topo import snapshot_matrix, topo_document
from rigcheck.report.render import REPORT_MODULES, Format, render, renderers_for
from tests.contracts.test_schemas import assert_valid

SNAPSHOTS = Path(__file__).parent.parent / "fixtures" / "snapshots"


def _snapshot(name: str) -> Snapshot:
    return snapshot_from_json((SNAPSHOTS / f"{name}.json").read_text(encoding="utf-8"))


def doctor_sample() -> Document:
    snap = _snapshot("2x-3090-phb-throttling")
    findings = run_checks(snap)
    return doctor_document(snap, findings, exit_code=exit_code_for(findings), strict=False)


def topo_sample() -> Document:
    snap = _snapshot("healthy-8x-h100")
    matrix = snapshot_matrix(snap)
    assert matrix is not None
    return topo_document(matrix, snap.pairs)


def power_sample() -> Document:
    snap = _snapshot("consumer-power-not-supported")
    findings = [f for f in run_checks(snap) if f.category == "power"]
    return power_document(snap, findings, exit_code=exit_code_for(findings), strict=False)


def thermal_sample() -> Document:
    snap = _snapshot("gpu-lost")
    findings = [f for f in run_checks(snap) if f.category == "thermal"]
    return thermal_document(snap, findings, exit_code=exit_code_for(findings, strict=True), strict=True)


def plan_sample() -> Document:
    from rigcheck.cli.plan import build_comm_plan

    snap = SNAPSHOTS / "2x-titan-rtx-nv2.json"
    return build_comm_plan("gpt2", 2, "zero3", "fp32", None, snap, None, "TITAN RTX", None, None, explain_guide=True)


def power_plan_sample() -> Document:
    from rigcheck.plan.power import plan_power

    return plan_power("RTX A6000", 2, psu_watts=850)  # a connector without a rating, and a PSU too small


def nccl_log_sample() -> Document:
    from rigcheck.readers.nccl_log import read_nccl_log

    log = SNAPSHOTS.parent / "corpus" / "nccl-log" / "004-4node-32xa100-p2p-ipc-read-net-ib-2.10.3.txt"
    return read_nccl_log(str(log))


def burn_sample() -> Document:
    """`burn --analyze` of a real trace (a `rigcheck burn` run is drawn in every format by tests/bench/test_burn.py)."""
    from rigcheck.checks.burn.judge import analyze_trace
    from rigcheck.cli.burn_analyze import analysis_exit_code
    from rigcheck.model.burn import BurnDocument
    from rigcheck.readers.trace.stream import read_trace

    trace = read_trace(str(SNAPSHOTS.parent / "traces" / "smi-gpu-lost.csv"))
    analyses = analyze_trace(trace)
    return BurnDocument.of_analysis(trace, analyses, analysis_exit_code(analyses))


def monitor_sample() -> Document:
    """A short `rigcheck monitor` of the fake NVML, one GPU lost on the way."""
    import time

    from rigcheck.monitor.sampler import Sampler
    from rigcheck.monitor.session import History, run_monitor
    from rigcheck.probe.nvml import NvmlPoller
    from tests.support.fakenvml import burn_gpu_lost

    def watch(sampler: Sampler, history: History) -> bool:
        while sampler.stats.polls < 6:
            time.sleep(0.01)
        return False

    with NvmlPoller(burn_gpu_lost(lose_at_poll=3)) as poller:
        return run_monitor(
            poller, interval_s=0.01, target=None, duration_s=None, prometheus=None, watch=watch, say=lambda _: None
        )


def bench_sample() -> Document:
    """`rigcheck bench p2p --compare-p2p` on the 8×H100 fixture's first three GPUs, as run_p2p builds it, with
    made-up copy times in place of the CUDA measurement (GPU 1 -> 2 without peer access)."""
    pytest.importorskip("torch")  # the document names the torch it was measured with
    from rigcheck.bench.device import p2p
    from rigcheck.model.bench import Method

    snap = _snapshot("healthy-8x-h100")
    name = "NVIDIA H100 80GB HBM3"

    def measure(src: int, dst: int, mode: str) -> p2p.PairMeasurement:
        t = (0.002 if mode == "peer" else 0.02) * (1 + src + dst)
        no_peer = (src, dst) == (1, 2)
        return p2p.PairMeasurement([t, t * 1.1], [t * 1.2], [2e-6], mode == "peer" and not no_peer, True)

    method = Method(method_version=p2p.METHOD_VERSION, warmup=1, repeats=2, timer="perf_counter")
    rows = p2p.build_rows(
        3, measure, lambda a, b: p2p.pair_facts(snap.gpu(a), snap.gpu(b), snap, name), size_bytes=1 << 30, method=method
    )
    return p2p.p2p_document(
        rows, 3, method=method, size_bytes=1 << 30, iters=5, snap=snap, comparison=p2p.p2p_comparison(rows)
    )


def verify_sample() -> Document:
    """`rigcheck verify --from` the saved documents of an 8×H100 node whose GPU 3 is slow."""
    import time

    from rigcheck.checks.verify.saved import verify_saved
    from rigcheck.readers.saved import load_saved

    inputs = load_saved(SNAPSHOTS.parent / "verify" / "h100x8-gpu3-slow")
    return verify_saved(
        inputs,
        site=None,
        baseline=None,
        gpus=None,
        baseline_name=None,
        site_name=None,
        clock=time.monotonic,
        started=time.monotonic(),
    )


def verify_bands_sample() -> Document:
    from rigcheck.checks.verify.bands import explain_bands

    return explain_bands(["H100 SXM5", "GeForce RTX 4090"], None, None)


def fleet_sample() -> Document:
    """`rigcheck fleet --from` four saved 8×H100 snapshots: one node's driver differs, one GPU runs at x8."""
    from rigcheck.checks.fleet.judge import fleet_document
    from rigcheck.readers.fleet_saved import load_fleet_dir

    nodes = load_fleet_dir(SNAPSHOTS.parent / "fleet" / "4-nodes").nodes
    nodes = [n.model_copy(update={"findings": run_checks(n.snapshot)}) if n.snapshot else n for n in nodes]
    return fleet_document(nodes=nodes, source="files", launcher=None, backend=None, world_size=None, elapsed_s=0.01)


def history_sample() -> Document:
    """`rigcheck history show` over 12 nodes x 20 days of tests/support/ledger_fleet.py's story."""
    import tempfile

    from rigcheck.cli.history import history_document
    from rigcheck.ledger.ingest import add_files, document_files
    from rigcheck.ledger.store import open_ledger
    from rigcheck.model.history import Filters
    from tests.support.ledger_fleet import write_fleet

    with tempfile.TemporaryDirectory() as tmp:
        write_fleet(Path(tmp) / "docs", nodes=12, days=20)
        with open_ledger(Path(tmp) / "ledger.sqlite") as conn:
            add_files(conn, document_files([Path(tmp) / "docs"]))
        return history_document(Path(tmp) / "ledger.sqlite", Filters(node=None, gpu=None, since=None))


# schema id -> a function that builds a real document of that kind.
SAMPLES: dict[str, Callable[[], Document]] = {
    "rigcheck.bench/1": bench_sample,
    "rigcheck.plan/1": plan_sample,
    "rigcheck.power-plan/1": power_plan_sample,
    "rigcheck.nccl-log/1": nccl_log_sample,
    "rigcheck.doctor/1": doctor_sample,
    "rigcheck.topo/1": topo_sample,
    "rigcheck.power/1": power_sample,
    "rigcheck.thermal/1": thermal_sample,
    "rigcheck.burn/2": burn_sample,
    "rigcheck.monitor/2": monitor_sample,
    "rigcheck.verify/1": verify_sample,
    "rigcheck.verify-bands/1": verify_bands_sample,
    "rigcheck.fleet/1": fleet_sample,
    "rigcheck.history/1": history_sample,
}


def test_every_typed_document_has_renderers_and_a_sample() -> None:
    assert set(REPORT_MODULES) == set(GENERATED) - FILE_FORMATS == set(SAMPLES)


def imported_bench_sample() -> Document:
    """`rigcheck bench p2p --from` the 2x RTX 2080 Ti p2pBandwidthLatencyTest output: its rows, every matrix, the
    verdicts against verify's p2p band (an imported document's own parts of the report)."""
    from rigcheck.checks.reference.judge import Machine, judge
    from rigcheck.readers.reference.reference_import import p2p_document, read_tool_output

    path = SNAPSHOTS.parent / "corpus" / "p2p" / "001-2x2080ti-cannot-access-peer.txt"
    output = read_tool_output(path.read_text(encoding="utf-8"), path.name)
    assert output is not None
    return judge(p2p_document(output), Machine(None, None, {d.index: (d.name, d.bus_id) for d in output.run.devices}))


# Documents a schema has in more than one shape: each extra shape is rendered in every format too.
EXTRA_SAMPLES: dict[str, Callable[[], Document]] = {"rigcheck.bench/1 imported": imported_bench_sample}


def imported_collective_sample() -> Document:
    """`bench allreduce --from` an nccl-tests output (8x A100, before nccl-tests 2.0) with its link named: the
    source, the in-place and ceiling columns, the verdict and nccl-tests' summary lines."""
    from rigcheck.readers.reference.nccl_tests import parse_nccl_tests
    from rigcheck.readers.reference.nccl_tests_doc import collective_document, parse_link

    path = SNAPSHOTS.parent / "nccl-tests-extra" / "old-allreduce-8xa100-c0.log"
    run = parse_nccl_tests(path.read_text(encoding="utf-8"), path.name)
    return collective_document(run, op="allreduce", path=path.name, choice=parse_link("NV12", None, None))


EXTRA_SAMPLES["rigcheck.bench/1 nccl-tests"] = imported_collective_sample


@pytest.mark.parametrize("fmt", list(Format), ids=lambda f: f.value)
@pytest.mark.parametrize("schema_id", sorted(SAMPLES) + sorted(EXTRA_SAMPLES))
def test_document_renders_in_format(schema_id: str, fmt: Format) -> None:
    doc = SAMPLES[schema_id]() if schema_id in SAMPLES else EXTRA_SAMPLES[schema_id]()
    schema_id = schema_id.split(maxsplit=1)[0]
    assert renderers_for(schema_id).get(fmt) is not None
    out = render(doc, fmt)
    if fmt is Format.TERMINAL:
        console = Console(file=io.StringIO(), width=120, color_system=None)
        console.print(out)
        text = console.file.getvalue()  # type: ignore[attr-defined]
        assert text.strip()
        return
    assert isinstance(out, str)
    assert out.strip()
    if fmt is Format.JSON:
        data = json.loads(out)
        assert data["schema"] == schema_id
        assert_valid(data)
    elif fmt is Format.HTML:
        assert out.startswith("<!DOCTYPE html>")
        assert "Content-Security-Policy" in out
    elif fmt is Format.MARKDOWN:
        assert out.lstrip().startswith("#")


@pytest.mark.parametrize("fmt", list(Format), ids=lambda f: f.value)
def test_imported_collective_renders_in_every_format(fmt: Format) -> None:
    """The imported collective's own parts in every format (the walk above checks only that each renders)."""
    doc = imported_collective_sample()
    out = render(doc, fmt)
    if fmt is Format.TERMINAL:
        console = Console(file=io.StringIO(), width=200, color_system=None)
        console.print(out)
        out = console.file.getvalue()  # type: ignore[attr-defined]
    assert isinstance(out, str)
    if fmt is Format.JSON:
        data = json.loads(out)
        assert_valid(data)
        facts = (data["source"]["tool"], data["ceiling"]["gbps"], data["judgement"]["verdict"])
        assert facts == ("nccl-tests", 300.0, "pass")
        return
    assert "Out of bounds values: 0 OK" in out
    assert "Avg bus bandwidth: 68.4048 GB/s" in out
    assert "read from nccl-tests output old-allreduce-8xa100-c0.log: 8 ranks on localhost" in out
    if fmt is not Format.HTML:  # the page walks the rows' keys; the tables name their columns
        assert "in-place busbw (GB/s)" in out
        assert "of ceiling" in out

"""The fingerprint across a fleet's nodes: the GPU apart from its identical peers on other nodes is named with its
node and GPU; the lone GPU model is held to its float64 reference; nothing is said of GPUs that agree."""

from __future__ import annotations

from rigcheck.checks.fleet.fingerprint import fingerprint_findings
from rigcheck.checks.fleet.judge import FINDING_IDS, fleet_document
from rigcheck.model.finding import Severity
from rigcheck.model.fingerprint import FingerprintRow, FingerprintStep
from rigcheck.model.fleet import NodeReport

GOOD = ("a1", "a2", "b1")
FINE = {"fp32": 1e-7, "bf16": 4e-3, "gpt2": 1e-8}


def _row(
    rank: int, gpu: int, digests: tuple[str, ...] = GOOD, *, name: str = "NVIDIA H100 80GB HBM3"
) -> FingerprintRow:
    return FingerprintRow(
        rank=rank,
        gpu=gpu,
        device_name=name,
        sm_count=132,
        torch="2.9.0",
        cuda="12.8",
        run=1,
        steps=[FingerprintStep(name=f"s{i}", digest=d) for i, d in enumerate(digests)],
        reference_error=FINE,
    )


NODES = {0: "node01", 1: "node01", 2: "node02", 3: "node02"}


def test_the_gpu_apart_on_another_node_is_named_with_its_node_and_gpu() -> None:
    rows = [_row(0, 0), _row(1, 1), _row(2, 0), _row(3, 1, ("a1", "zz", "zz"))]
    findings, note = fingerprint_findings(rows, NODES)
    assert [(f.id, f.severity, f.node, f.gpu) for f in findings] == [
        ("fleet.fingerprint-mismatch", Severity.FAIL, "node02", 1)
    ]
    assert findings[0].message.startswith("node02 GPU1: its result differs from 3 of 4 identical GPUs from step s1")
    assert note is not None
    assert note.startswith("fingerprint: 3 of 4 ranks on 2 node(s) agree")
    assert "fleet.fingerprint-mismatch" in FINDING_IDS


def test_gpu_indices_that_repeat_across_nodes_are_told_apart_by_rank() -> None:
    rows = [_row(0, 0), _row(1, 0), _row(2, 0, ("x", "y", "z"))]  # every node's GPU 0
    findings, _ = fingerprint_findings(rows, {0: "a", 1: "b", 2: "c"})
    assert [f.node for f in findings] == ["c"]


def test_a_lone_model_is_held_to_its_reference() -> None:
    lone = _row(3, 1, ("q", "r", "s"), name="NVIDIA A100-SXM4-80GB")
    findings, _ = fingerprint_findings([_row(0, 0), _row(1, 1), _row(2, 0), lone], NODES)
    assert findings == []  # within tolerance of its float64 reference: nothing to say
    off = lone.model_copy(update={"reference_error": {**FINE, "bf16": 0.9}})
    findings, _ = fingerprint_findings([_row(0, 0), off], NODES)
    assert [(f.node, f.severity) for f in findings] == [("node02", Severity.FAIL)]
    assert "bf16 0.9 from the float64 reference" in findings[0].message


def test_a_mismatch_fails_the_fleet_and_its_node() -> None:
    rows = [_row(0, 0), _row(1, 1), _row(2, 0), _row(3, 1, ("a1", "zz", "zz"))]
    findings, _ = fingerprint_findings(rows, NODES)
    nodes = [
        NodeReport(
            name=n,
            node_rank=i,
            ranks=[2 * i, 2 * i + 1],
            snapshot=None,
            findings=[],
            verify=None,
            versions={},
            source="live",
        )
        for i, n in enumerate(("node01", "node02"))
    ]
    doc = fleet_document(
        nodes=nodes,
        source="live",
        launcher="torchrun",
        backend="gloo",
        world_size=4,
        elapsed_s=1.0,
        fingerprints=findings,
    )
    assert doc.verdict == "fail"
    assert {n.name: n.verdict for n in doc.nodes} == {"node01": "pass", "node02": "fail"}


def test_no_rows_no_findings() -> None:
    assert fingerprint_findings([], NODES) == ([], None)

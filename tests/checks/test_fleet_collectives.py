"""`fleet --from DIR` with a multi-node nccl-tests run saved beside the node documents: the fleet's collective,
judged by the fleet's rules (checks/fleet/collectives.py, readers/fleet_saved.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rigcheck.errors import InputError
from rigcheck.model import snapshot_to_dict
from rigcheck.model.snapshot import IbPort, Snapshot
from rigcheck.readers.fleet_saved import load_fleet_dir
from tests.checks.test_fleet_rules import healthy
from tests.support.cli import Rigcheck

FIXTURES = Path(__file__).parent.parent / "fixtures"
TWO_HOSTS = FIXTURES / "nccl-tests-extra/new-allreduce-16xh100-2hosts-markdown.txt"  # 16 H100s on 2 hosts
ONE_HOST = FIXTURES / "corpus/nccl-tests/001-2x2080ti-allreduce-pcie-no-p2p.txt"
HOSTS = ("ztan-mig-235z", "ztan-mig-gq73")


def _imported(source: Path, rigcheck: Rigcheck, *extra: str) -> dict[str, Any]:
    """`rigcheck bench allreduce --from FILE --json`, as an operator saves it."""
    result = rigcheck("bench", "allreduce", "--from", str(source), "--json", *extra)
    doc: dict[str, Any] = result.json
    return doc


def _node(directory: Path, name: str, nics: int | None = None) -> None:
    snap: Snapshot = healthy(name)
    if nics is not None:
        snap.system.ib_ports = [
            IbPort(device=f"mlx5_{i}", port=1, state="ACTIVE", rate_gbps=400.0) for i in range(nics)
        ]
    (directory / f"{name}.json").write_text(json.dumps(snapshot_to_dict(snap)), encoding="utf-8")


def _fleet(directory: Path, rigcheck: Rigcheck) -> tuple[int, dict[str, Any]]:
    result = rigcheck("fleet", "--from", str(directory), "--json")
    code = result.code
    assert isinstance(code, int)
    return code, result.json


def test_a_two_host_nccl_tests_run_is_the_fleets_collective(tmp_path: Path, rigcheck: Rigcheck) -> None:
    imported = _imported(TWO_HOSTS, rigcheck)
    assert imported["source"]["hosts"] == list(HOSTS)
    (tmp_path / "allreduce.json").write_text(json.dumps(imported), encoding="utf-8")
    for name in HOSTS:
        _node(tmp_path, name)
    code, doc = _fleet(tmp_path, rigcheck)
    assert (code, doc["verdict"], doc["source"], doc["backend"]) == (0, "pass", "files", "nccl")
    assert [n["name"] for n in doc["nodes"]] == list(HOSTS)
    rows = doc["collectives"]
    assert len(rows) == len(imported["results"])
    largest = rows[-1]
    assert (largest["op"], largest["size_bytes"], largest["world_size"]) == ("allreduce", 8589934592, 16)
    assert (largest["busbw_gbps"], largest["algbw_gbps"], largest["time_us"]) == (338.82, 180.71, 47535)
    assert largest["wrong"] == 0  # nccl-tests checked every size: out-of-place and in-place #wrong both 0
    # The snapshots hold no RDMA ports: the smallest published fabric of 8x H100 nodes (4 x 200 Gb/s), said in
    # the source, not silence.
    assert largest["expected_gbps"] == 100.0
    assert "assumed the smallest published fabric for 8x H100/H200 nodes, 4x200 Gb/s" in largest["expected_source"]
    assert doc["notes"] == ["allreduce: read from allreduce.json (nccl-tests output, 16 ranks on 2 hosts)"]


def test_the_nics_ceiling_judges_it_as_a_live_run(tmp_path: Path, rigcheck: Rigcheck) -> None:
    """The ceiling is the least node's active RDMA ports, summed: 16 x 400 Gb/s = 800 GB/s, and the run's
    338.8 GB/s is under half of it (a warning, as a live run gets); 4 x 400 Gb/s = 200 GB/s: no finding."""
    (tmp_path / "allreduce.json").write_text(json.dumps(_imported(TWO_HOSTS, rigcheck)), encoding="utf-8")
    for name in HOSTS:
        _node(tmp_path, name, nics=16)
    code, doc = _fleet(tmp_path, rigcheck)
    largest = doc["collectives"][-1]
    assert largest["expected_gbps"] == 800.0
    assert "16 active RDMA port(s), 6400 Gb/s" in largest["expected_source"]
    (finding,) = [f for f in doc["findings"] if f["id"] == "fleet.internode-bandwidth"]
    assert finding["measured"] == 338.82
    assert (code, doc["verdict"]) == (0, "pass")  # a warning
    for name in HOSTS:
        _node(tmp_path, name, nics=4)
    _, doc = _fleet(tmp_path, rigcheck)
    assert doc["collectives"][-1]["expected_gbps"] == 200.0
    assert not [f for f in doc["findings"] if f["id"] == "fleet.internode-bandwidth"]


def test_wrong_results_fail_the_fleet(tmp_path: Path, rigcheck: Rigcheck) -> None:
    imported = _imported(TWO_HOSTS, rigcheck)
    imported["results"][-3]["wrong"] = 12
    (tmp_path / "allreduce.json").write_text(json.dumps(imported), encoding="utf-8")
    for name in HOSTS:
        _node(tmp_path, name)
    code, doc = _fleet(tmp_path, rigcheck)
    assert (code, doc["verdict"]) == (1, "fail")
    (finding,) = [f for f in doc["findings"] if f["id"] == "fleet.collective-wrong"]
    assert finding["severity"] == "fail"
    assert finding["measured"] == 12
    assert "2 GiB" in finding["message"]
    assert "allreduce over 16 ranks" in finding["message"]


def test_which_nodes_took_part_is_said(tmp_path: Path, rigcheck: Rigcheck) -> None:
    (tmp_path / "allreduce.json").write_text(json.dumps(_imported(TWO_HOSTS, rigcheck)), encoding="utf-8")
    _node(tmp_path, f"{HOSTS[0]}.cluster.example")  # the snapshot holds the full name, nccl-tests the short one
    _node(tmp_path, "node-c")
    _, doc = _fleet(tmp_path, rigcheck)
    assert doc["notes"][1:] == [
        f"allreduce.json: ran on {HOSTS[1]}, which no node document here names",
        "allreduce.json: node-c took no part in it",
    ]


def test_what_is_not_a_fleets_collective_is_refused_by_name(tmp_path: Path, rigcheck: Rigcheck) -> None:
    for name in HOSTS:
        _node(tmp_path, name)
    saved = tmp_path / "zz.json"
    one_host = _imported(ONE_HOST, rigcheck)
    cases = [
        (one_host, "a bench allreduce measured on one host"),
        ({k: v for k, v in one_host.items() if k != "source"}, "a bench allreduce measured by rigcheck on one machine"),
        ({**one_host, "benchmark": "matmul"}, "not a valid rigcheck.bench/1 document"),
    ]
    for document, says in cases:
        saved.write_text(json.dumps(document), encoding="utf-8")
        with pytest.raises(InputError) as caught:
            load_fleet_dir(tmp_path)
        assert str(caught.value).startswith(f"{saved}: {says}"), str(caught.value)
    two = _imported(TWO_HOSTS, rigcheck)
    saved.write_text(json.dumps(two), encoding="utf-8")
    (tmp_path / "a-allreduce.json").write_text(json.dumps(two), encoding="utf-8")
    with pytest.raises(InputError, match=r"two allreduce collectives: a-allreduce\.json and zz\.json"):
        load_fleet_dir(tmp_path)


def test_a_collective_alone_is_no_fleet(tmp_path: Path, rigcheck: Rigcheck) -> None:
    (tmp_path / "allreduce.json").write_text(json.dumps(_imported(TWO_HOSTS, rigcheck)), encoding="utf-8")
    with pytest.raises(InputError, match=r": no node document here"):
        load_fleet_dir(tmp_path)

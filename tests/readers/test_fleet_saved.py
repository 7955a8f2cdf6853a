"""`fleet --from DIR`'s reader (readers/fleet_saved.py): one saved document per node back as node reports, and
each way a directory cannot be used as one line of InputError naming the file."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from rigcheck.checks.doctor import run_checks
from rigcheck.checks.fleet.judge import compare_nodes
from rigcheck.errors import InputError
from rigcheck.model import snapshot_to_dict
from rigcheck.model.doctor import doctor_document
from rigcheck.readers import saved
from rigcheck.readers.fleet_saved import load_fleet_dir
from tests.checks.test_fleet_rules import FOUR_NODES, OTHER_DRIVER, healthy, verify_of


def _write(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data, indent=1), encoding="utf-8")
    return path


def _four(into: Path) -> Path:
    target = into / "fleet"
    shutil.copytree(FOUR_NODES, target)
    return target


def _error(directory: Path) -> str:
    with pytest.raises(InputError) as caught:
        load_fleet_dir(directory)
    text = str(caught.value)
    assert "\n" not in text, "one line"
    return text


def test_reads_one_node_per_snapshot_named_by_hostname() -> None:
    nodes = load_fleet_dir(FOUR_NODES).nodes
    assert [n.name for n in nodes] == ["node01", "node02", "node03", "node04"]
    for node in nodes:
        assert node.snapshot is not None
        assert len(node.snapshot.gpus) == 8
        assert (node.verify, node.findings, node.ranks, node.node_rank, node.versions) == (None, [], [], None, {})
        assert node.source == str(FOUR_NODES / f"{node.name}.json")
    snap03 = nodes[2].snapshot
    assert snap03 is not None
    assert snap03.software.driver_version == OTHER_DRIVER
    # What the CLI does next: the checks on each snapshot, then the fleet's comparison.
    for node in nodes:
        assert node.snapshot is not None
        node.findings = run_checks(node.snapshot)
    assert [(f.id, f.node, f.gpu) for f in compare_nodes(nodes)] == [
        ("fleet.driver", "node03", None),
        ("fleet.pcie", "node02", 5),
    ]


def test_a_snapshot_and_a_verify_of_one_node_make_one_node(tmp_path: Path) -> None:
    _write(tmp_path / "a-snapshot.json", snapshot_to_dict(healthy("gpu-07")))
    _write(tmp_path / "b-verify.json", verify_of("gpu-07").to_json_dict())
    _write(tmp_path / "c-verify.json", verify_of("gpu-08").to_json_dict())
    no_host = verify_of("x").model_copy(update={"host": None})
    _write(tmp_path / "gpu-09.json", no_host.to_json_dict())
    nodes = load_fleet_dir(tmp_path).nodes
    assert [(n.name, n.snapshot is not None, n.verify is not None) for n in nodes] == [
        ("gpu-07", True, True),
        ("gpu-08", False, True),
        ("gpu-09", False, True),  # no host in the document: the file's stem
    ]
    assert nodes[0].source == f"{tmp_path / 'a-snapshot.json'} + {tmp_path / 'b-verify.json'}"


def test_a_doctor_document_gives_its_snapshot(tmp_path: Path) -> None:
    snap = healthy("gpu-03")
    doc = doctor_document(snap, run_checks(snap), exit_code=0, strict=False)
    _write(tmp_path / "doctor.json", doc.to_json_dict())
    (node,) = load_fleet_dir(tmp_path).nodes
    assert (node.name, node.findings) == ("gpu-03", [])
    assert node.snapshot == snap


def test_the_directory_itself(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    assert _error(missing) == f"{missing}: no such directory"
    a_file = _write(tmp_path / "node.json", {})
    assert _error(a_file).startswith(f"{a_file}: not a directory")
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.txt").write_text("not json\n", encoding="utf-8")
    assert _error(empty).startswith(f"{empty}: no *.json file here")


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ("{not json", "not JSON: Expecting property name enclosed in double quotes"),
        ("", "not JSON (the file is empty)"),
        ('{"hello": 1}', "not a rigcheck document; a fleet directory holds one rigcheck.snapshot/1"),
        ('{"schema": "rigcheck.plan/1"}', "a rigcheck.plan/1 document; a fleet directory holds one"),
        ('{"schema": "rigcheck.snapshot/1", "gpus": 3}', "invalid snapshot at gpus"),
        ('{"schema": "rigcheck.verify/1"}', "not a valid rigcheck.verify/1 document"),
    ],
)
def test_a_file_that_is_not_a_node_document_is_refused_by_name(tmp_path: Path, content: str, says: str) -> None:
    fleet = _four(tmp_path)
    bad = fleet / "zz-bad.json"
    bad.write_text(content, encoding="utf-8")
    text = _error(fleet)
    assert text.startswith(str(bad)), text
    assert says in text, text


def test_a_file_too_large_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(saved, "MAX_INPUT_BYTES", 1024)
    text = _error(FOUR_NODES)
    assert text.startswith(str(FOUR_NODES / "node01.json"))
    assert "too large" in text


@pytest.mark.parametrize("kind", ["snapshot", "verify"])
def test_documents_of_one_kind_sharing_a_host_name_are_nodes_named_by_their_files(tmp_path: Path, kind: str) -> None:
    """Copies of one image (or files made from one) carry one host name: the files tell the nodes apart."""
    if kind == "snapshot":
        fleet = _four(tmp_path)
        _write(fleet / "node02b.json", snapshot_to_dict(healthy("node02")))
        expected = ["node01", "node02", "node02b", "node03", "node04"]
    else:
        fleet = tmp_path
        _write(fleet / "a.json", verify_of("node02").to_json_dict())
        _write(fleet / "b.json", verify_of("node02").to_json_dict())
        expected = ["a", "b"]
    assert sorted(n.name for n in load_fleet_dir(fleet).nodes) == expected

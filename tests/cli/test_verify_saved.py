"""`verify --from DIR`'s reader (readers/saved.py): saved rigcheck documents back as the judge's inputs, and each
way a directory cannot be used as one line of InputError naming the file."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from rigcheck.checks.doctor import run_checks
from rigcheck.checks.verify.judge import judge
from rigcheck.errors import InputError
from rigcheck.model.doctor import doctor_document
from rigcheck.readers.saved import load_saved
from tests.checks.test_verify_judge import (
    BF16,
    CASES_DIR,
    D2H,
    H2D,
    MEMBW,
    allreduce_doc,
    burn_doc,
    hostlink_doc,
    matmul_doc,
    membw_doc,
)
from tests.support.snapshots import healthy_8x_h100


def _write(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data, indent=1), encoding="utf-8")
    return path


def _copy_case(case: str, into: Path) -> Path:
    target = into / case
    shutil.copytree(CASES_DIR / case, target)
    return target


def _error(directory: Path) -> str:
    with pytest.raises(InputError) as caught:
        load_saved(directory)
    text = str(caught.value)
    assert "\n" not in text, "one line"
    return text


def test_reads_the_saved_node_and_judges_it() -> None:
    inputs = load_saved(CASES_DIR / "h100x8-pass")
    assert len(inputs.snapshot.gpus) == 8
    assert inputs.matmul is not None
    assert inputs.membw is not None
    assert (inputs.hostlink, inputs.p2p, inputs.allreduce, inputs.burn) == (None, None, None, None)
    assert inputs.files == ["matmul.json", "membw.json", "snapshot.json"]
    assert (inputs.cpu, inputs.findings, inputs.notes) == (False, [], [])
    inputs.findings = run_checks(inputs.snapshot)
    judged = judge(inputs)
    assert judged.verdict == "pass"
    assert "no hostlink measurement" in judged.notes


def test_the_slow_gpu_fails_and_the_others_pass_from_files() -> None:
    inputs = load_saved(CASES_DIR / "h100x8-gpu3-slow")
    inputs.findings = run_checks(inputs.snapshot)
    judged = judge(inputs)
    assert {g.index: g.verdict for g in judged.gpus} == {i: "fail" if i == 3 else "pass" for i in range(8)}


def test_every_measurement_is_read(tmp_path: Path) -> None:
    snap = healthy_8x_h100()
    _write(tmp_path / "doctor.json", doctor_document(snap, run_checks(snap), exit_code=0, strict=False).to_json_dict())
    _write(tmp_path / "hostlink.json", hostlink_doc(H2D, D2H).to_json_dict())
    _write(tmp_path / "allreduce.json", allreduce_doc(476.3).to_json_dict())
    _write(tmp_path / "burn.json", burn_doc().to_json_dict())
    _write(tmp_path / "matmul.json", matmul_doc(BF16).to_json_dict())
    inputs = load_saved(tmp_path)
    assert inputs.snapshot.host.hostname == "dgx-h100-01"  # the doctor document's snapshot
    assert inputs.hostlink is not None
    assert inputs.allreduce is not None
    assert inputs.burn is not None
    assert inputs.burn.workload is not None
    assert inputs.findings == []  # the caller runs the checks, with its own site file
    assert inputs.files == ["allreduce.json", "burn.json", "doctor.json", "hostlink.json", "matmul.json"]


def test_a_burn_saved_as_v1_reads_as_its_v2_twin(tmp_path: Path) -> None:
    """rigcheck.burn/1 named two power keys power_w_median_loaded and power_limit_w (here and in each GPU's
    missing map): a burn saved then is read as the /2 document it is."""
    doc = burn_doc()
    v2 = doc.to_json_dict()
    v1 = json.loads(
        json.dumps(v2)
        .replace('"power_draw_w_median_loaded"', '"power_w_median_loaded"')
        .replace('"power_enforced_limit_w"', '"power_limit_w"')
        .replace('"rigcheck.burn/2"', '"rigcheck.burn/1"')
    )
    assert "power_limit_w" in v1["gpus"][0]
    assert v1["schema"] == "rigcheck.burn/1"
    _copy_case("h100x8-pass", tmp_path)
    _write(tmp_path / "h100x8-pass" / "burn.json", v1)
    inputs = load_saved(tmp_path / "h100x8-pass")
    assert inputs.burn is not None
    assert inputs.burn.to_json_dict() == v2


def test_a_bench_documents_snapshot_serves_when_there_is_no_snapshot_file(tmp_path: Path) -> None:
    _write(tmp_path / "membw.json", membw_doc(MEMBW).to_json_dict())
    _write(tmp_path / "matmul.json", matmul_doc(BF16, snapshot=healthy_8x_h100()).to_json_dict())
    inputs = load_saved(tmp_path)
    assert len(inputs.snapshot.gpus) == 8
    assert inputs.notes == ["the machine is the snapshot embedded in matmul.json (no snapshot file)"]


def test_json_of_no_rigcheck_schema_and_other_documents_are_skipped_with_a_note(tmp_path: Path) -> None:
    directory = _copy_case("h100x8-pass", tmp_path)
    _write(directory / "aaa-notes.json", {"owner": "ops", "ticket": 4211})
    _write(directory / "plan.json", {"schema": "rigcheck.plan/1"})
    _write(
        directory / "allgather.json", allreduce_doc(300.0).model_copy(update={"benchmark": "allgather"}).to_json_dict()
    )
    (directory / "sub").mkdir()
    _write(directory / "sub" / "matmul.json", matmul_doc(BF16).to_json_dict())  # not read: not recursive
    (directory / "readme.txt").write_text("not json at all", encoding="utf-8")  # not *.json: not read
    inputs = load_saved(directory)
    assert inputs.notes == [
        "aaa-notes.json: not a rigcheck document, skipped",
        "allgather.json: bench allgather is not one verify judges, ignored",
        "plan.json: rigcheck.plan/1 is not a document verify judges, skipped",
    ]
    assert inputs.files == ["matmul.json", "membw.json", "snapshot.json"]
    inputs.findings = run_checks(inputs.snapshot)
    assert "aaa-notes.json: not a rigcheck document, skipped" in judge(inputs).notes


def test_cpu_documents_make_a_cpu_run(tmp_path: Path) -> None:
    _write(tmp_path / "snapshot.json", json.loads((CASES_DIR / "h100x8-pass" / "snapshot.json").read_text()))
    _write(tmp_path / "matmul.json", matmul_doc([0.4, 0.4], dtype="fp32", cpu=True).to_json_dict())
    assert load_saved(tmp_path).cpu is True
    _write(tmp_path / "membw.json", membw_doc(MEMBW).to_json_dict())
    text = _error(tmp_path)
    assert "CPU and GPU results mixed: matmul.json ran on CPU, membw.json on GPUs" in text


def test_a_missing_directory_or_a_file_is_refused(tmp_path: Path) -> None:
    assert _error(tmp_path / "nowhere") == f"{tmp_path / 'nowhere'}: no such directory"
    file = _write(tmp_path / "snapshot.json", {})
    assert _error(file).startswith(f"{file}: not a directory")


def test_two_documents_of_one_measurement_name_both_files(tmp_path: Path) -> None:
    directory = _copy_case("h100x8-pass", tmp_path)
    shutil.copy(directory / "matmul.json", directory / "matmul-rerun.json")
    assert _error(directory) == f"{directory}: two bench matmul documents: matmul-rerun.json and matmul.json; keep one"
    (directory / "matmul-rerun.json").unlink()
    shutil.copy(directory / "snapshot.json", directory / "snapshot-old.json")
    assert "two snapshot documents: snapshot-old.json and snapshot.json" in _error(directory)


def test_a_file_that_is_not_json_is_named(tmp_path: Path) -> None:
    directory = _copy_case("h100x8-pass", tmp_path)
    (directory / "membw.json").write_text('{"schema": "rigcheck.bench/1",\n  oops}', encoding="utf-8")
    assert _error(directory).startswith(f"{directory / 'membw.json'}:2: not JSON: ")
    (directory / "membw.json").write_bytes(b"")
    assert _error(directory) == f"{directory / 'membw.json'}: not JSON (the file is empty)"
    (directory / "membw.json").write_bytes(b"\xff\xfe\x00garbage")
    assert "not JSON" in _error(directory)


def test_a_rigcheck_document_that_fails_validation_is_named(tmp_path: Path) -> None:
    directory = _copy_case("h100x8-pass", tmp_path)
    data = json.loads((directory / "matmul.json").read_text())
    del data["results"][0]["tflops_median"]
    _write(directory / "matmul.json", data)
    text = _error(directory)
    assert text.startswith(f"{directory / 'matmul.json'}: not a valid rigcheck.bench/1 document: ")
    assert "tflops_median" in text
    snap = json.loads((directory / "snapshot.json").read_text())
    snap["gpus"][0]["index"] = "first"
    _write(directory / "matmul.json", matmul_doc(BF16).to_json_dict())
    _write(directory / "snapshot.json", snap)
    assert _error(directory).startswith(f"{directory / 'snapshot.json'}: invalid snapshot at gpus.0.index")


def test_no_snapshot_at_all_is_one_line(tmp_path: Path) -> None:
    _write(tmp_path / "matmul.json", matmul_doc(BF16).to_json_dict())
    text = _error(tmp_path)
    assert text.startswith(f"{tmp_path}: no snapshot: none of its 1 JSON files is a rigcheck snapshot")
    empty = tmp_path / "empty"
    empty.mkdir()
    assert _error(empty) == f"{empty}: no rigcheck documents here (no *.json file, no saved dcgmi diag output)"

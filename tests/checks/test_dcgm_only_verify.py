"""`verify --from DIR` on a directory holding only a saved DCGM diagnostic (no rigcheck snapshot): the GPUs are those
the diagnostic ran on, DCGM's Fail fails naming the test and GPU, and rigcheck's own stages are skipped (the node
incomplete) unless `--only dcgm` scopes the run to DCGM (docs/verdicts.md).

The directories are real published `dcgmi diag` outputs of the calibration suite (tests/calibration/manifest.json
gives each one's source and the verdict its source states); the inputs built in tmp_path are synthetic, and say so.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from rigcheck.facts.catalog import lookup
from rigcheck.facts.pci_ids import DEVICE_NAMES, gpu_name, normalize_device_id
from rigcheck.readers.saved import load_saved
from tests.contracts.test_schemas import assert_valid
from tests.support.cli import Rigcheck

CASES = Path(__file__).parent.parent / "calibration" / "cases"
A10G_PASS = CASES / "dcgmi-4xa10g-r3-all-pass"  # 4x A10G, `dcgmi diag -r 3` table, every test Pass
A10G_GPU1_POWER = CASES / "dcgmi-4xa10g-r3-gpu1-targeted-power-fail"  # Targeted Power: Fail - GPU: 1
H100_FM_DOWN = CASES / "dcgmi-8xh100-r3-fabricmanager-down"  # GPU Memory: Fail - All (cuInit not initialized)
H200_PERSISTENCE = CASES / "dcgmi-8xh200-r1-persistence-fail"  # level 1: Persistence Mode Fail
GB10_JSON = CASES / "dcgm-gb10-r2-dcgm4.5.2-software-fail"  # `-j` 4.5.2: software Fail, memory/pcie Pass
ONLY_DCGM = ["--only", "dcgm"]
RIGCHECK_STAGES = ["doctor", "matmul", "membw", "hostlink", "p2p", "allreduce", "burn"]


def _verify(directory: Path, rigcheck: Rigcheck, *extra: str) -> tuple[int, dict[str, Any]]:
    code, out, err = rigcheck("verify", "--from", str(directory), *extra, "--json")
    assert code in (0, 1), err
    data = json.loads(out)
    assert_valid(data)
    return code, data


def _gpus(data: dict[str, Any]) -> dict[int, dict[str, Any]]:
    gpus = data["gpus"]
    assert isinstance(gpus, list)
    return {g["index"]: g for g in gpus}


def _steps(data: dict[str, Any]) -> dict[str, str]:
    steps = data["steps"]
    assert isinstance(steps, list)
    return {s["name"]: s["status"] for s in steps}


def test_a_passing_dcgm_only_dir_passes_with_only_dcgm(rigcheck: Rigcheck) -> None:
    code, data = _verify(A10G_PASS, rigcheck, *ONLY_DCGM)
    assert (code, data["verdict"], data["drain_reason"]) == (0, "pass", None)
    gpus = _gpus(data)
    assert sorted(gpus) == [0, 1, 2, 3]  # the table's four device ids: DCGM's GPUs 0-3
    assert {g["name"] for g in gpus.values()} == {"NVIDIA A10G"}  # device id 2237
    assert all(g["verdict"] == "pass" for g in gpus.values())
    checks = {c["id"] for c in gpus[2]["checks"]}
    assert "dcgm.targeted-power" in checks
    assert "doctor" not in checks  # no snapshot: no doctor check to pass
    assert _steps(data) == {**dict.fromkeys(RIGCHECK_STAGES, "left_out"), "dcgm": "done"}
    notes = data["notes"]
    assert isinstance(notes, list)
    assert any("no rigcheck snapshot in the directory" in n and "NVIDIA A10G (PCI device 2237)" in n for n in notes)


def test_the_gpu1_targeted_power_fail_fails_naming_gpu1_and_the_test(rigcheck: Rigcheck) -> None:
    code, data = _verify(A10G_GPU1_POWER, rigcheck, *ONLY_DCGM)
    assert (code, data["verdict"]) == (1, "fail")
    assert data["drain_reason"] == "rigcheck verify: fail gpu1 dcgm.targeted-power DCGM fail"
    gpus = _gpus(data)
    assert {i: g["verdict"] for i, g in gpus.items()} == {0: "pass", 1: "fail", 2: "pass", 3: "pass"}
    failed = [c for c in gpus[1]["checks"] if c["verdict"] == "fail"]
    assert [c["id"] for c in failed] == ["dcgm.targeted-power"]
    assert "Max power of 224.1 did not reach desired power minimum" in failed[0]["judgements"][0]["text"]


def test_the_fabric_manager_down_h100_node_fails_each_gpu_on_its_own_message(
    rigcheck: Rigcheck,
) -> None:
    code, data = _verify(H100_FM_DOWN, rigcheck, *ONLY_DCGM)
    assert (code, data["verdict"]) == (1, "fail")
    gpus = _gpus(data)
    assert sorted(gpus) == list(range(8))  # "Fail - All" on the 8 GPUs of the Metadata's device ids
    assert {g["name"] for g in gpus.values()} == {"NVIDIA H100 80GB HBM3"}  # device id 2330
    for index, gpu in gpus.items():
        memory = next(c for c in gpu["checks"] if c["id"] == "dcgm.gpu-memory")
        assert memory["verdict"] == "fail"
        text = memory["judgements"][0]["text"]
        assert text.startswith(f"DCGM Fail: GPU {index} Error using CUDA API cuInit")
        assert "system not yet initialized" in text
        assert not any(f"GPU {other} Error" in text for other in range(8) if other != index)  # its own message
    assert str(data["drain_reason"]).startswith("rigcheck verify: fail gpu0 dcgm.gpu-memory DCGM fail; gpu1 ")


def test_without_only_a_dcgm_only_dir_is_incomplete_naming_the_missing_stages(
    rigcheck: Rigcheck,
) -> None:
    code, data = _verify(A10G_PASS, rigcheck)
    assert (code, data["verdict"]) == (1, "incomplete")
    assert _steps(data) == {**dict.fromkeys(RIGCHECK_STAGES, "skipped"), "dcgm": "done"}
    assert data["drain_reason"] == (
        "rigcheck verify: incomplete doctor skipped; matmul skipped; membw skipped; hostlink skipped; p2p skipped; "
        "allreduce skipped; burn skipped"
    )
    run_check = next(c for c in data["node"] if c["id"] == "run")
    assert "doctor skipped: no snapshot in the directory (save one with `rigcheck snapshot" in run_check["detail"]
    code, out, _ = rigcheck("verify", "--from", str(A10G_PASS), "--slurm")
    assert (code, out.strip()) == (1, data["drain_reason"])


def test_a_dcgm_fail_still_fails_without_only(rigcheck: Rigcheck) -> None:
    # the skipped stages do not hide DCGM's Fail: fail is worse than incomplete
    code, data = _verify(A10G_GPU1_POWER, rigcheck)
    assert (code, data["verdict"]) == (1, "fail")
    assert data["drain_reason"] == "rigcheck verify: fail gpu1 dcgm.targeted-power DCGM fail"
    assert _steps(data)["matmul"] == "skipped"
    assert any(c["id"] == "run" and c["verdict"] == "incomplete" for c in data["node"])


def test_a_level_1_fail_of_the_node_fails_and_names_the_h200s(rigcheck: Rigcheck) -> None:
    code, data = _verify(H200_PERSISTENCE, rigcheck, *ONLY_DCGM)
    assert (code, data["verdict"]) == (1, "fail")
    assert {g["name"] for g in _gpus(data).values()} == {"NVIDIA H200"}  # device id 2335
    failed = [c["id"] for c in data["node"] if c["verdict"] == "fail"]
    assert failed == ["dcgm.persistence-mode"]


def test_dcgm_json_alone_is_judged_on_its_entity_groups(rigcheck: Rigcheck) -> None:
    code, data = _verify(GB10_JSON, rigcheck, *ONLY_DCGM)
    assert (code, data["verdict"]) == (1, "fail")
    assert data["drain_reason"] == "rigcheck verify: fail gpu0 dcgm.software DCGM error 29"
    notes = data["notes"]
    assert isinstance(notes, list)
    # GB10's device id 2e12 has no source here: said, not guessed
    assert "GPU 0: PCI device id 2e12 is not one rigcheck names: model not known" in notes


def test_a_diagnostic_that_lists_no_gpu_says_the_count_is_unknown(tmp_path: Path) -> None:
    # synthetic: a 3.x `-j` layout whose results name GPUs 0 and 2, with no GPU list of the run
    data = {
        "DCGM GPU Diagnostic": {
            "test_categories": [
                {
                    "category": "Hardware",
                    "tests": [
                        {
                            "name": "Memory Bandwidth",
                            "results": [{"gpu_id": "0", "status": "Pass"}, {"gpu_id": "2", "status": "Pass"}],
                        }
                    ],
                }
            ],
            "version": "3.3.5",
        }
    }
    (tmp_path / "diag.json").write_text(json.dumps(data), encoding="utf-8")
    inputs = load_saved(tmp_path)
    assert [g.index for g in inputs.snapshot.gpus] == [0, 2]
    assert any(n.startswith("neither diag.json nor a snapshot says how many GPUs the node has") for n in inputs.notes)


def test_a_table_naming_no_gpu_keeps_all_as_the_node(tmp_path: Path, rigcheck: Rigcheck) -> None:
    # synthetic: a table excerpt without its Metadata block ("Pass - All" names no GPU, no device ids)
    (tmp_path / "diag.txt").write_text(
        "+---------------------------+------------------------------------------------+\n"
        "| Diagnostic                | Result                                         |\n"
        "+===========================+================================================+\n"
        "+-----  Hardware  ----------+------------------------------------------------+\n"
        "| GPU Memory                | Fail - All                                     |\n"
        "+---------------------------+------------------------------------------------+\n",
        encoding="utf-8",
    )
    code, data = _verify(tmp_path, rigcheck, *ONLY_DCGM)
    assert (code, data["verdict"], data["gpus"]) == (1, "fail", [])
    memory = next(c for c in data["node"] if c["id"] == "dcgm.gpu-memory")
    assert memory["verdict"] == "fail"


def test_gpus_outside_the_diagnostic_are_a_usage_error(rigcheck: Rigcheck) -> None:
    code, _, err = rigcheck("verify", "--from", str(A10G_PASS), "--only", "dcgm", "--gpus", "5")
    assert code == 2
    assert "--gpus 5: the DCGM diagnostic ran on GPUs 0, 1, 2, 3" in err


def test_a_snapshot_beside_the_diagnostic_is_still_the_machine(tmp_path: Path) -> None:
    shutil.copy(A10G_PASS / "dcgmi-diag.txt", tmp_path / "dcgmi-diag.txt")
    (tmp_path / "snapshot.json").write_text(
        json.dumps({"schema": "rigcheck.snapshot/1", "gpus": [{"index": 0, "name": "NVIDIA A10"}]}), encoding="utf-8"
    )  # synthetic snapshot
    inputs = load_saved(tmp_path)
    assert [(g.index, g.name) for g in inputs.snapshot.gpus] == [(0, "NVIDIA A10")]
    assert not inputs.snapshot.diagnostics


@pytest.mark.parametrize(
    ("text", "want"),
    [("2330", "2330"), ("0x2330", "2330"), ("10de:2335", "2335"), ("0x233010DE", "2330"), ("1002:2330", None)],
)
def test_device_ids_as_tools_print_them(text: str, want: str | None) -> None:
    assert normalize_device_id(text) == want


def test_every_named_device_id_is_a_name_the_catalogue_or_nvml_prints() -> None:
    assert gpu_name("0x2335") == "NVIDIA H200"
    assert gpu_name("2e12") is None
    # every name but the A10G's (not in the catalogue) resolves to a catalogue entry, so the GPU gets its bands
    unresolved = {k for k, (name, _) in DEVICE_NAMES.items() if lookup(name) is None}
    assert unresolved <= {"2237"}
    assert all(source for _, source in DEVICE_NAMES.values())

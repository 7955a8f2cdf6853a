"""DCGM diagnostics JSON (`dcgmi diag -r N -j`): read from both layouts DCGM has written
(readers/reference/dcgm_diag.py),
and judged by `rigcheck verify --from DIR` beside the saved rigcheck documents (checks/verify/dcgm.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from rigcheck.checks.verify.dcgm import check_id
from rigcheck.checks.verify.saved import verify_saved
from rigcheck.errors import InputError
from rigcheck.model.dcgm import DcgmDiag, DcgmResult
from rigcheck.model.verify import VerifyCheck, VerifyDocument
from rigcheck.readers.reference.dcgm_diag import parse_dcgm_diag, parse_dcgm_diag_text
from rigcheck.readers.saved import load_saved
from tests.contracts.test_schemas import assert_valid
from tests.support.cli import Rigcheck

HERE = Path(__file__).parent.parent
DCGM = HERE / "fixtures" / "dcgm"
VERIFY = HERE / "fixtures" / "verify"
GB10_R1 = DCGM / "gb10-r1-dcgm4.2.3-software-fail.json"
GB10_SKIP = DCGM / "gb10-r2-dcgm4.2.3-partial-skip.json"
GB10_R2 = DCGM / "gb10-r2-dcgm4.5.2-memory-pcie.json"
T400 = DCGM / "t400-r3-dcgm3-skips-excerpt.json"
H100_PASS = DCGM / "h100x8-r3-dcgm3-pass.synthetic.json"
H100_FAIL = DCGM / "h100x8-r3-dcgm4-gpu5-membw-fail.synthetic.json"


def _read(path: Path) -> DcgmDiag:
    return parse_dcgm_diag_text(path.read_text(encoding="utf-8"), path=str(path))


def _results(diag: DcgmDiag, name: str) -> list[DcgmResult]:
    return next(t.results for t in diag.tests if t.name == name)


# --- reading real outputs -----------------------------------------------------------------------------------


def test_dcgm_4_level_1_with_a_failing_software_test() -> None:
    diag = _read(GB10_R1)
    assert (diag.layout, diag.version, diag.driver, diag.runtime_error) == ("4.x", "4.2.3", "580.82.09", None)
    assert [(t.category, t.name) for t in diag.tests] == [("Deployment", "software")]
    [result] = _results(diag, "software")
    assert (result.gpu, result.status, result.status_text) == (0, "fail", "Fail")
    [warning] = result.warnings
    assert warning.error_id == 29
    assert warning.text.startswith("Persistence Mode: Persistence mode for GPU 0 is disabled.")


def test_dcgm_4_5_level_2_as_dcgmi_writes_it() -> None:
    diag = _read(GB10_R2)
    assert (diag.version, diag.driver) == ("4.5.2", "580.82.09")
    assert [(t.category, t.name) for t in diag.tests] == [
        ("Deployment", "software"),
        ("Hardware", "memory"),
        ("Integration", "pcie"),
    ]
    [memory] = _results(diag, "memory")
    assert (memory.gpu, memory.status, memory.info) == (0, "pass", ["Allocated 112427837082 bytes (87.5%)"])
    [pcie] = _results(diag, "pcie")
    assert pcie.status == "pass"
    assert len(pcie.info) == 6
    assert pcie.info[0] == "GPU to Host bandwidth:\t\t58.62 GB/s"
    assert [r.status for r in _results(diag, "software")] == ["fail"]  # the summary repeats it: not added twice


def test_skipped_tests_are_read_as_skips() -> None:
    diag = _read(GB10_SKIP)
    assert {t.name: [(r.gpu, r.status) for r in t.results] for t in diag.tests} == {
        "software": [(0, "fail")],
        "memory": [(0, "skip")],
        "pcie": [(0, "skip")],
    }


def test_dcgm_3_layout_with_gpu_id_strings() -> None:
    diag = _read(T400)
    assert (diag.layout, diag.version, diag.driver) == ("3.x", None, None)
    assert [(t.category, t.name) for t in diag.tests] == [
        ("Integration", "PCIe"),
        ("Hardware", "GPU Memory"),
        ("Hardware", "Diagnostic"),
        ("Hardware", "EUD Test"),
        ("Stress", "Targeted Stress"),
    ]
    assert {(r.gpu, r.status, r.status_text) for t in diag.tests for r in t.results} == {(0, "skip", "Skip")}
    assert diag.gpus() == [0]


def test_a_software_result_for_all_gpus_is_the_nodes() -> None:
    diag = _read(H100_PASS)
    [denylist] = _results(diag, "Denylist")
    assert (denylist.gpu, denylist.entity, denylist.status) == (None, "GPUs 0,1,2,3,4,5,6,7", "pass")
    assert [r.gpu for r in _results(diag, "Memory Bandwidth")] == list(range(8))
    assert diag.version == "3.3.5"


# --- the format, beyond these files -------------------------------------------------------------------------


def test_other_spellings_extra_keys_and_holes_are_tolerated() -> None:
    data: dict[str, Any] = {
        "DCGM GPU Diagnostic": {
            "test_categories": [
                {
                    "category": "Hardware",
                    "extra": True,
                    "tests": [
                        {
                            "name": "GPU Memory",
                            "results": [
                                None,  # nvvs indexes results by GPU id: a GPU not run leaves a hole
                                {"gpu_ids": 1, "status": "PASS", "new_key": {}},
                                {"gpu_ids": "2", "status": "FAIL", "warnings": ["GPU 2: miscompare"]},
                                {"gpu_id": "3", "status": "SKIPPED"},
                                {"gpu_id": "4", "status": "Not Run"},
                                {"gpu_id": "5", "status": "Degraded"},
                            ],
                        }
                    ],
                }
            ],
            "version": "3.1.7",
        },
        "Driver Version Detected": "525.85.12",
        "GPU Device IDs": ["20b2"],
    }
    diag = parse_dcgm_diag(data)
    assert (diag.version, diag.driver) == ("3.1.7", "525.85.12")
    got = [(r.gpu, r.status) for r in _results(diag, "GPU Memory")]
    assert got == [(1, "pass"), (2, "fail"), (3, "skip"), (4, "not-run"), (5, "unknown")]
    assert _results(diag, "GPU Memory")[1].warnings[0].text == "GPU 2: miscompare"


def test_dcgm_4_entities_summaries_and_runtime_errors() -> None:
    data = {
        "DCGM Diagnostic": {
            "test_categories": [
                {
                    "category": "Hardware",
                    "tests": [
                        {"name": "cpu_eud", "results": [{"entity_group": "CPU", "entity_id": 0, "status": "Pass"}]},
                        {
                            "name": "nvbandwidth",
                            "test_summary": {"status": "Fail", "warnings": [{"msg": "MCUTIL > 10%"}]},
                        },
                    ],
                }
            ],
            "runtime_error": "",
        },
        "metadata": {"version": "4.5.0"},
    }
    diag = parse_dcgm_diag(data)
    [cpu] = _results(diag, "cpu_eud")
    assert (cpu.gpu, cpu.entity) == (None, "CPU 0")
    [summary] = _results(diag, "nvbandwidth")
    assert (summary.gpu, summary.status, summary.warnings[0].text) == (None, "fail", "MCUTIL > 10%")
    stopped = parse_dcgm_diag({"DCGM Diagnostic": {"runtime_error": "Couldn't find the NVVS binary"}})
    assert (stopped.runtime_error, stopped.tests) == ("Couldn't find the NVVS binary", [])


def test_check_ids_are_one_slug_for_both_spellings() -> None:
    assert check_id("Memory Bandwidth") == check_id("memory_bandwidth") == "dcgm.memory-bandwidth"
    assert check_id("Page Retirement/Row Remap") == "dcgm.page-retirement-row-remap"
    assert check_id("targeted_power") == "dcgm.targeted-power"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"DCGM Diagnostic": {"test_categories": [{"category": "Deployment"', "not JSON"),
        ('{"nvidia_smi_log": {"driver_version": "550.54.15"}}', 'a JSON object with keys "nvidia_smi_log"'),
        ('{"schema": "rigcheck.snapshot/1", "gpus": []}', "a rigcheck.snapshot/1 document"),
        ("[1, 2]", "a JSON array"),
        ('{"DCGM Diagnostic": []}', "is not an object"),
        ('{"DCGM GPU Diagnostic": {"version": "3.3.5"}}', "no test_categories"),
    ],
)
def test_what_is_not_a_dcgm_diagnostic_is_one_line(text: str, expected: str) -> None:
    with pytest.raises(InputError) as caught:
        parse_dcgm_diag_text(text, path="diag.json")
    message = str(caught.value)
    assert message.startswith("diag.json")
    assert expected in message
    assert "\n" not in message


# --- judged by verify --from DIR ----------------------------------------------------------------------------


def _dir(tmp_path: Path, *dcgm: Path, case: str = "h100x8-pass", snapshot_only: bool = False) -> Path:
    target = tmp_path / "saved"
    shutil.copytree(VERIFY / case, target)
    if snapshot_only:
        for p in target.glob("*.json"):
            if p.name != "snapshot.json":
                p.unlink()
    for i, path in enumerate(dcgm):
        shutil.copy(path, target / f"dcgm{i or ''}.json")
    return target


def _verify(directory: Path, gpus: list[int] | None = None, only: tuple[str, ...] | None = None) -> VerifyDocument:
    return verify_saved(
        load_saved(directory),
        site=None,
        baseline=None,
        gpus=gpus,
        baseline_name=None,
        site_name=None,
        clock=lambda: 0.0,
        started=0.0,
        only=only,
    )


def _checks(doc: VerifyDocument, gpu: int) -> dict[str, VerifyCheck]:
    return {c.id: c for g in doc.gpus if g.index == gpu for c in g.checks}


def test_a_passing_dcgm_run_passes_beside_the_saved_node(tmp_path: Path) -> None:
    doc = _verify(_dir(tmp_path, H100_PASS), only=("matmul", "membw", "dcgm"))  # the stages the directory holds
    assert doc.verdict == "pass"
    assert doc.drain_reason is None
    for gpu in range(8):
        judged = _checks(doc, gpu)
        assert judged["dcgm.memory-bandwidth"].verdict == "pass"
        assert judged["dcgm.memory-bandwidth"].judgements[0].rule == "dcgm"
        assert "matmul_bf16" in judged  # rigcheck's own checks stay
    assert {c.id for c in doc.node} >= {"doctor", "dcgm.denylist", "dcgm.page-retirement-row-remap"}
    assert doc.dcgm is not None
    assert (doc.dcgm.file, doc.dcgm.version) == ("dcgm.json", "3.3.5")
    assert doc.steps[-1].name == "dcgm"
    assert doc.steps[-1].status == "done"
    assert doc.to_json_dict()["dcgm"]["tests"][-1] == "Memory Bandwidth"


def test_a_dcgm_failure_fails_the_gpu_and_the_node_quoting_dcgm(tmp_path: Path) -> None:
    doc = _verify(_dir(tmp_path, H100_FAIL))
    assert doc.verdict == "fail"
    assert {g.index: g.verdict for g in doc.gpus} == {i: "fail" if i == 5 else "pass" for i in range(8)}
    failed = _checks(doc, 5)["dcgm.memory-bandwidth"]
    assert failed.verdict == "fail"
    assert "only achieved a memory bandwidth of 2451.07 GB/s" in failed.judgements[0].text
    assert "DCGM error 62" in failed.judgements[0].text
    assert doc.drain_reason == "rigcheck verify: fail gpu5 dcgm.memory-bandwidth DCGM error 62"
    warned = _checks(doc, 2)["dcgm.targeted-power"]
    assert warned.verdict == "pass"
    assert warned.judgements[0].text.startswith("DCGM Warn: Detected clock throttling")
    assert any(n.startswith("GPU 2 dcgm.targeted-power: DCGM warns:") for n in doc.notes)
    assert_valid(doc.to_json_dict())  # the rigcheck.verify/1 schema, with its dcgm key and rule


def test_the_terminal_report_names_the_gpu_and_dcgms_test(tmp_path: Path, rigcheck: Rigcheck) -> None:
    directory = _dir(tmp_path, H100_FAIL)
    result = rigcheck("verify", "--from", str(directory))
    assert result.code == 1
    out = result.stdout
    assert "GPU5 dcgm.memory-bandwidth fail: DCGM Fail: GPU 5 only achieved" in " ".join(out.split())
    assert "DCGM Pass" in out


def test_a_document_without_dcgm_has_no_dcgm_key(tmp_path: Path) -> None:
    doc = _verify(_dir(tmp_path))
    assert "dcgm" not in doc.to_json_dict()
    assert [s.name for s in doc.steps][-1] == "burn"


def test_dcgm_level_3_counts_as_a_measurement_level_1_does_not(tmp_path: Path) -> None:
    assert _verify(_dir(tmp_path / "r3", H100_PASS, snapshot_only=True), only=("dcgm",)).verdict == "pass"
    data = json.loads(H100_PASS.read_text(encoding="utf-8"))
    categories = data["DCGM GPU Diagnostic"]["test_categories"]
    data["DCGM GPU Diagnostic"]["test_categories"] = [c for c in categories if c["category"] == "Deployment"]
    level1 = tmp_path / "level1.json"
    level1.write_text(json.dumps(data), encoding="utf-8")
    doc = _verify(_dir(tmp_path / "r1", level1, snapshot_only=True))
    assert doc.verdict == "incomplete"
    run = next(c for c in doc.node if c.id == "run")
    assert "only the doctor checks and DCGM's deployment tests were judged" in run.detail


def test_skips_results_for_other_gpus_and_runtime_errors_are_notes_or_incomplete(tmp_path: Path) -> None:
    doc = _verify(_dir(tmp_path / "skip", GB10_SKIP))
    assert "DCGM skipped 'memory' on GPU 0: not judged" in doc.notes
    assert "dcgm.memory" not in _checks(doc, 0)
    assert doc.verdict == "fail"  # DCGM failed GPU 0's software test: persistence mode off

    data = json.loads(H100_FAIL.read_text(encoding="utf-8"))
    stress = data["DCGM Diagnostic"]["test_categories"][-1]["tests"][-1]
    stress["results"].append({"entity_group": "GPU", "entity_id": 9, "status": "Fail"})
    data["DCGM Diagnostic"]["runtime_error"] = "nvvs exited early"
    odd = tmp_path / "odd.json"
    odd.write_text(json.dumps(data), encoding="utf-8")
    doc = _verify(_dir(tmp_path / "odd", odd), gpus=[0, 1])
    assert (
        "the DCGM diagnostic (dcgm.json) has results for GPU 9, which the snapshot does not have: not judged"
        in doc.notes
    )
    assert [g.index for g in doc.gpus] == [0, 1]
    assert next(c for c in doc.node if c.id == "dcgm").verdict == "incomplete"
    assert doc.verdict == "incomplete"


def test_dcgm_twice_or_broken_is_one_line_and_alone_is_read(tmp_path: Path) -> None:
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy(H100_PASS, alone / "diag.json")
    # no snapshot: the machine is the GPUs the diagnostic ran on (tests/checks/test_dcgm_only_verify.py)
    assert [g.index for g in load_saved(alone).snapshot.gpus] == list(range(8))
    with pytest.raises(InputError, match=r"two DCGM diagnostic documents: dcgm\.json and dcgm1\.json"):
        load_saved(_dir(tmp_path / "twice", H100_PASS, H100_FAIL))
    broken = _dir(tmp_path / "broken")
    (broken / "diag.json").write_text(H100_FAIL.read_text(encoding="utf-8")[:300], encoding="utf-8")
    with pytest.raises(InputError, match=r"diag\.json:\d+: not JSON"):
        load_saved(broken)


# --- a diagnostic saved with other lines around its JSON ------------------------------------------------------

_AROUND = [
    ("$ dcgmi diag -r 3 -j\n", ""),  # the command line captured with `script` or pasted from a terminal
    ("2026-11-20T10:00:01Z dcgm-diag job started\nWarning: persistence mode is off\n", "\n$ \n"),
    ("", "Diagnostic run completed in 312 s\n"),
]


@pytest.mark.parametrize(("before", "after"), _AROUND)
def test_a_diagnostic_with_lines_around_its_json_is_read(before: str, after: str) -> None:
    text = GB10_R2.read_text(encoding="utf-8")
    embedded = parse_dcgm_diag_text(before + text + after, path="diag.json")
    assert embedded == _read(GB10_R2)  # the same diagnostic, every test and message


def test_verify_reads_a_diagnostic_saved_with_a_header_and_says_so(tmp_path: Path) -> None:
    directory = _dir(tmp_path)
    header = "kubectl logs dcgm-diag-x7k2\nWarning: persistence mode is off\n"
    (directory / "dcgm.json").write_text(header + H100_FAIL.read_text(encoding="utf-8") + "\n$ ", encoding="utf-8")
    doc = _verify(directory)
    assert _checks(doc, 5)["dcgm.memory-bandwidth"].verdict == "fail"
    assert doc.verdict == "fail"
    note = "dcgm.json: the DCGM diagnostic's JSON was read; 2 lines before and 1 line after it are not JSON"
    assert any(n.startswith(note) for n in doc.notes)


@pytest.mark.parametrize(
    "text",
    [
        'Error: unable to connect to host engine\n{"schema": "rigcheck.snapshot/1"}',  # no DCGM root key
        'header\n{"DCGM Diagnostic": {"test_categories": [',  # the JSON itself is cut
        'the words "DCGM Diagnostic" in a log line, and no JSON object\n',
    ],
)
def test_text_without_a_whole_diagnostic_stays_not_json(text: str) -> None:
    with pytest.raises(InputError, match=r"^diag\.json:\d+: not JSON"):
        parse_dcgm_diag_text(text, path="diag.json")


# --- the table dcgmi prints without -j (fixtures in dcgm-text, sources in its README) ------------------------

TEXT = HERE / "fixtures" / "dcgm-text"


def _table(prefix: str) -> Path:
    return next(TEXT.glob(prefix + "*"))


def _by_test(diag: DcgmDiag) -> dict[str, list[tuple[int | None, str]]]:
    return {t.name: [(r.gpu, r.status) for r in t.results] for t in diag.tests}


def test_a_dcgm_4_table_reads_as_its_json_would() -> None:
    diag = _read(_table("001"))  # it was "not JSON"
    assert (diag.source, diag.layout, diag.version, diag.driver, diag.gpu_count) == (
        "text",
        "4.x",
        "4.4.2",
        "580.105.08",
        1,
    )
    assert [(t.category, t.name) for t in diag.tests] == [
        ("Deployment", "software"),
        ("Hardware", "memory"),
        ("Integration", "pcie"),
    ]
    assert _by_test(diag) == {"software": [(0, "pass")], "memory": [(0, "pass")], "pcie": [(0, "pass")]}
    assert check_id(diag.tests[1].name) == check_id("memory")  # the same check id as the JSON's test
    four = _read(_table("006"))
    assert (four.version, four.gpu_count) == ("4.2.3", 4)
    assert _by_test(four) == {"software": [(g, "pass") for g in range(4)]}


def test_a_dcgm_3_table_with_a_failing_gpu_and_its_wrapped_warning() -> None:
    diag = _read(_table("002"))
    assert _by_test(diag) == {"GPU Memory": [(g, "pass") for g in range(1, 8)] + [(0, "fail")]}
    failed = diag.tests[0].results[-1]
    [warning] = failed.warnings
    assert warning.text == (
        "GPU 0 Thermal violations totaling 13.3 seconds started at 9.7 seconds into the test for GPU 0 Verify "
        "that the cooling on this machine is functional, including external, thermal material interface, fans, "
        "and any other components."
    )
    assert warning.error_id is None  # the table prints no DCGM error id
    assert diag.notes == ["the table ends inside its line 8 ('|                           | ts.'): read as printed"]


def test_all_is_the_gpus_the_table_names_and_messages_stay_with_their_gpu() -> None:
    diag = _read(_table("004"))
    assert _by_test(diag) == {
        "GPU Memory": [(1, "pass"), (0, "fail")],
        "Diagnostic": [(0, "fail"), (1, "fail")],
        "Targeted Stress": [(0, "fail"), (1, "fail")],
    }
    memory = {r.gpu: r for r in diag.tests[0].results}
    assert memory[1].info == ["GPU 1 Allocated 15568304202 bytes (98.3%)"]
    assert memory[0].warnings[0].text.startswith("GPU 0 Error using CUDA API cuCtxCreate Check DCGM and system")
    diagnostic = {r.gpu: r for r in diag.tests[1].results}
    assert diagnostic[0].warnings[0].text.startswith("GPU 0 API call cuMemGetInfo failed: 'context is destroyed'")
    assert diagnostic[1].warnings == []  # GPU 0's message is not GPU 1's


def test_deployment_words_are_the_nodes_and_their_error_text_is_joined_as_printed() -> None:
    diag = _read(_table("008"))
    persistence = next(t for t in diag.tests if t.name == "Persistence Mode")
    [result] = persistence.results
    assert (result.gpu, result.entity, result.status) == (None, None, "fail")  # of the node, as in the JSON
    assert persistence.category == "Deployment"
    assert result.warnings[0].text == (
        "Persistence mode for GPU 0 is currently disabled. The DCGM diagnostic requires peristence mode to be "
        'enabled. Enable persistence mode by running "nvidia-smi -i <gpuId> -pm 1 " as root.'
    )
    assert _by_test(diag)["Memtest"] == [(None, "pass")]
    assert diag.tests[-1].results[0].entity == "all GPUs"  # no GPU is named anywhere: the judge resolves All
    old = _read(_table("007"))  # DCGM 1.x, indented as posted
    assert [t.category for t in old.tests][-3:] == ["Performance"] * 3
    assert _by_test(old)["CUDA Toolkit Libraries"] == [(None, "skip")]


def test_an_error_row_without_its_test_is_a_failure_of_the_gpu_it_names() -> None:
    """DCGM prints an Error row only under a test that failed: alone (an excerpt), it is that failure, on the GPU
    it names (stas00/ml-engineering's debug guide: GPU 3 needs a reset, or an RMA)."""
    diag = _read(_table("003"))
    [test] = diag.tests
    [result] = test.results
    assert (test.category, result.gpu, result.status) == ("Deployment", 3, "fail")
    assert result.warnings[0].text == "GPU 3 has uncorrectable memory errors and row remappings are pending"


@pytest.mark.parametrize(("kind", "status"), [("Warning", "unknown"), ("Info", "unknown"), ("Error", "fail")])
def test_only_an_error_row_alone_is_a_failure(kind: str, status: str) -> None:
    text = (
        "|-----  Deployment  --------+------------------------------------------------|\n"
        f"| {kind:<25} | Persistence mode for GPU 0 is disabled.        |\n"
    )
    [test] = parse_dcgm_diag_text(text).tests
    [result] = test.results
    assert (result.gpu, result.status) == (None, status)  # the message does not start by naming a GPU


@pytest.mark.parametrize(
    "text",
    [
        # Synthetic: the box of a run that printed no result row (dcgmi's header, then nothing).
        "+---------------------------+------------------------------------------------+\n"
        "| Diagnostic                | Result                                         |\n"
        "+===========================+================================================+\n"
        "+---------------------------+------------------------------------------------+\n",
        "|-----  Deployment  --------+------------------------------------------------|\n",
    ],
)
def test_a_table_that_cannot_be_read_says_how_to_save_the_json(text: str) -> None:
    with pytest.raises(InputError) as caught:
        parse_dcgm_diag_text(text, path="diag.txt")
    assert "run `dcgmi diag -r 3 -j > diag.json`" in str(caught.value)


def _with_table(tmp_path: Path, table: Path, name: str = "dcgmi-r2.txt") -> Path:
    directory = _dir(tmp_path)
    shutil.copy(table, directory / name)
    return directory


def test_verify_judges_a_saved_table_failing_the_gpu_dcgm_failed(tmp_path: Path) -> None:
    doc = _verify(_with_table(tmp_path, _table("002")))
    assert doc.verdict == "fail"
    assert {g.index: g.verdict for g in doc.gpus} == {i: "fail" if i == 0 else "pass" for i in range(8)}
    failed = _checks(doc, 0)["dcgm.gpu-memory"]
    assert failed.judgements[0].text.startswith("DCGM Fail: GPU 0 Thermal violations totaling 13.3 seconds")
    assert failed.expected_source is not None
    assert "the `dcgmi diag` table, dcgmi-r2.txt" in failed.expected_source
    assert doc.drain_reason == "rigcheck verify: fail gpu0 dcgm.gpu-memory DCGM fail"
    assert any(n.startswith("dcgmi-r2.txt: the `dcgmi diag` table was read") for n in doc.notes)
    assert any("the table ends inside its line 8" in n for n in doc.notes)
    assert_valid(doc.to_json_dict())


def test_verify_reads_a_table_saved_under_a_json_name_and_refuses_one_it_cannot_read(tmp_path: Path) -> None:
    doc = _verify(_with_table(tmp_path / "json", _table("004"), name="diag.json"))
    assert _checks(doc, 0)["dcgm.diagnostic"].verdict == "fail"
    assert _checks(doc, 1)["dcgm.diagnostic"].verdict == "fail"
    broken = _dir(tmp_path / "broken")
    (broken / "diag.log").write_text("| Diagnostic                | Result                                         |\n")
    with pytest.raises(InputError, match=r"run `dcgmi diag -r 3 -j > diag\.json`"):
        load_saved(broken)


def test_all_is_each_judged_gpu_only_where_the_run_covered_them(tmp_path: Path) -> None:
    doc = _verify(_with_table(tmp_path / "all", _table("008")))  # no device count: All is every judged GPU
    assert all(_checks(doc, g)["dcgm.memtest"].verdict == "pass" for g in range(8))
    assert next(c for c in doc.node if c.id == "dcgm.persistence-mode").verdict == "fail"
    four = _verify(_with_table(tmp_path / "four", _table("006")))  # 4 GPUs in the run, 8 in the snapshot
    assert [c.id for c in four.node if c.id.startswith("dcgm")] == []
    assert all("dcgm.software" in _checks(four, g) for g in range(4))
    assert "dcgm.software" not in _checks(four, 5)


def test_a_table_of_only_deployment_tests_measured_nothing(tmp_path: Path) -> None:
    directory = _dir(tmp_path, snapshot_only=True)
    shutil.copy(_table("005"), directory / "dcgmi-r3.txt")
    doc = _verify(directory)
    assert doc.verdict == "incomplete"
    assert doc.dcgm is not None
    assert doc.dcgm.file == "dcgmi-r3.txt"
    run = next(c for c in doc.node if c.id == "run")
    assert "only the doctor checks and DCGM's deployment tests were judged" in run.detail


def test_other_tables_are_not_taken_for_dcgmi() -> None:
    from rigcheck.readers.reference.dcgm_diag_text import looks_like_dcgm_text

    # Synthetic: a markdown summary with pass words, and nvidia-smi's box; neither is dcgmi's.
    assert not looks_like_dcgm_text("| check | verdict |\n| --- | --- |\n| matmul | Pass |\n| membw | Fail |\n")
    smi = (HERE / "fixtures" / "corpus" / "smi" / "002-2x2080ti-550.txt").read_text(encoding="utf-8")
    assert not looks_like_dcgm_text(smi)
    assert all(looks_like_dcgm_text(p.read_text(encoding="utf-8")) for p in TEXT.glob("*.txt"))


def test_doctor_from_a_table_names_what_it_is() -> None:
    from rigcheck.errors import ParseError
    from rigcheck.readers.from_file import load_file

    with pytest.raises(ParseError, match=r"a DCGM diagnostic table \(`dcgmi diag` without -j\)"):
        load_file(str(_table("001")))

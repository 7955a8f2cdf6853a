"""Every JSON document rigcheck prints validates against its committed JSON Schema (rigcheck/schemas/).

The documents are the ones the golden tests hold (tests/golden/out: every --json command line on the real inputs,
produced through rigcheck.cli.app.main), and, for what no golden case runs, documents made here as a user would:
the benchmarks on two CPU processes with tiny sizes, a burn run and monitor on the fake NVML, the trace files,
plans and power plans the goldens do not name. Each schema also has a negative test: a real document with a
contract key removed, or a number turned into a string, must fail validation.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from rigcheck.cli import monitor as monitor_cmd
from rigcheck.cli.app import main
from rigcheck.model.schema import GENERATED, SCHEMA_DIR, document_schema, document_schemas, schema_files
from rigcheck.probe.nvml import NvmlPoller
from tests.golden.cases import OUT as GOLDEN_OUT
from tests.support.fakenvml import burn_power_capped_h100

FIXTURES = Path(__file__).parent.parent / "fixtures"
CORPUS = FIXTURES / "corpus"
SNAPSHOTS = sorted((FIXTURES / "snapshots").glob("*.json"))
NCCL_LOGS = sorted((CORPUS / "nccl-log").glob("*.txt"))
H100_Q = CORPUS / "smi-q" / "001-1xh100-545-full-event-reasons-tlimit.txt"


# --- validation ----------------------------------------------------------------------------------------------


@cache
def _registry() -> Registry[Any]:
    return Registry().with_resources(
        (schema_id, Resource.from_contents(schema, default_specification=DRAFT202012))
        for schema_id, schema in document_schemas().items()
    )


def validator(schema_id: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(
        document_schema(schema_id),
        registry=_registry(),
        format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER,
    )


def assert_valid(doc: dict[str, Any]) -> None:
    """``doc`` is valid against the schema its own ``"schema"`` names; every error is listed when not."""
    errors = sorted(validator(doc["schema"]).iter_errors(doc), key=lambda e: list(e.absolute_path))
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors[:20])


def assert_invalid(doc: dict[str, Any], schema_id: str | None = None) -> None:
    assert not validator(schema_id or doc["schema"]).is_valid(doc)


# --- producing the documents ---------------------------------------------------------------------------------


def golden(name: str) -> dict[str, Any]:
    """The JSON document a golden file holds (tests/golden/out/NAME: the exit code on its first line)."""
    _, text = (GOLDEN_OUT / name).read_text(encoding="utf-8").split("\n", 1)
    doc: dict[str, Any] = json.loads(text)
    return doc


# The documents of the golden cases, by the command that printed them (the file name up to "--"); a refusal (exit
# 2) prints none.
PRINTED = sorted(p.name for p in GOLDEN_OUT.glob("*.json") if not p.read_text(encoding="utf-8").startswith("exit 2\n"))
GOLDEN_SNAPSHOTS = [name for name in PRINTED if name.startswith("snapshot--")]
GOLDEN_DOCUMENTS = [name for name in PRINTED if name not in GOLDEN_SNAPSHOTS]
COMMAND_SCHEMAS = {
    "doctor": "rigcheck.doctor/1",
    "topo": "rigcheck.topo/1",
    "power": "rigcheck.power/1",
    "thermal": "rigcheck.thermal/1",
    "power-plan": "rigcheck.power-plan/1",
    "plan": "rigcheck.plan/1",
    "nccl-log": "rigcheck.nccl-log/1",
    "burn-analyze": "rigcheck.burn/2",
    "verify": "rigcheck.verify/1",
    "verify-explain": "rigcheck.verify-bands/1",
    "fleet": "rigcheck.fleet/1",
    "bench-allreduce": "rigcheck.bench/1",
    "bench-allgather": "rigcheck.bench/1",
    "bench-p2p": "rigcheck.bench/1",
    "bench-membw": "rigcheck.bench/1",
    "bench-matmul": "rigcheck.bench/1",
    "bench-hostlink": "rigcheck.bench/1",
}


def cli_json(argv: list[str], *, codes: tuple[int, ...] = (0, 1)) -> dict[str, Any]:
    """Run ``rigcheck ARGV`` through the real entry point and parse what it printed on stdout."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code in codes, f"rigcheck {' '.join(argv)}: exit {exit_info.value.code}: {err.getvalue()}"
    doc: dict[str, Any] = json.loads(out.getvalue())
    return doc


@cache
def _bench(argv: tuple[str, ...]) -> str:
    """A bench document as JSON text, run once per test session (the runs are the slow part of this module)."""
    return json.dumps(cli_json(["bench", *argv, "--json"], codes=(0,)))


ALLREDUCE = ("allreduce", "--cpu", "-n", "2", "-b", "1K", "-e", "4K")
BENCH_RUNS: dict[str, tuple[str, ...]] = {
    "allreduce": ALLREDUCE,
    "allreduce --compare-p2p": (*ALLREDUCE, "--compare-p2p"),
    "matmul": ("matmul", "--cpu", "--dtype", "all", "--shape", "64x64x64", "--warmup", "1", "--repeats", "2"),
    "membw": ("membw", "--cpu", "-s", "64K", "--warmup", "0", "--repeats", "2"),
    "train": ("train", "--tiny", "--cpu", "-n", "2", "--steps", "3"),
}


def bench_doc(name: str) -> dict[str, Any]:
    pytest.importorskip("torch")
    if name == "train":
        pytest.importorskip("transformers")
    doc: dict[str, Any] = json.loads(_bench(BENCH_RUNS[name]))
    return doc


def fake_poller(monkeypatch: pytest.MonkeyPatch, gpus: int = 2) -> None:
    monkeypatch.setattr(
        monitor_cmd, "make_poller", lambda wanted=None: NvmlPoller(burn_power_capped_h100(gpus), gpus=wanted)
    )


# --- the schema files themselves -----------------------------------------------------------------------------


def test_every_schema_file_is_known_and_a_valid_2020_12_schema() -> None:
    on_disk = {p.name for p in SCHEMA_DIR.glob("*.json")}
    assert on_disk == set(schema_files())  # every file is generated: none is written by hand
    for schema_id, schema in document_schemas().items():
        jsonschema.Draft202012Validator.check_schema(schema)
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        assert schema["$id"] == schema_id


def test_design_contracts_table_names_every_schema() -> None:
    design = (Path(__file__).parent.parent.parent / "docs" / "design.md").read_text()
    table = design[design.index("## Contracts") :]
    for schema_id, (name, _, _) in GENERATED.items():
        assert f"`{schema_id}`" in table
        assert name in table


# --- every golden document -----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", GOLDEN_DOCUMENTS)
def test_golden_json_is_valid(name: str) -> None:
    """The documents of doctor, topo, power, thermal, plan, power plan, nccl-log, burn --analyze, verify (--from and
    --explain), fleet --from and bench --from on the real inputs: each names its command's schema and is valid."""
    doc = golden(name)
    assert doc["schema"] == COMMAND_SCHEMAS[name.split("--", maxsplit=1)[0]]
    assert_valid(doc)


@pytest.mark.parametrize("name", GOLDEN_SNAPSHOTS)
def test_golden_snapshot_is_valid(name: str) -> None:
    doc = golden(name)
    assert doc["schema"] == "rigcheck.snapshot/1"
    assert_valid(doc)


def test_the_golden_documents_cover_every_command_schema() -> None:
    """What the goldens do not hold is made below: the CPU benchmarks, a burn run, monitor and the trace."""
    held = {golden(name)["schema"] for name in GOLDEN_DOCUMENTS}
    assert held == set(COMMAND_SCHEMAS.values())
    assert set(document_schemas()) - held - {"rigcheck.snapshot/1"} == {
        "rigcheck.findings/1",  # a part of doctor's and fleet's documents, validated with them
        "rigcheck.monitor/2",
        "rigcheck.trace/2",
        "rigcheck.history/1",  # validated on issue #31's fleet by tests/ledger/test_history.py
    }


# --- doctor, topo, power, thermal ----------------------------------------------------------------------------


def test_doctor_json_from_smi_q_is_valid() -> None:
    assert_valid(cli_json(["doctor", "--from", str(H100_Q), "--json", "--strict"]))


def test_doctor_schema_rejects_broken_documents() -> None:
    good = golden(f"doctor--{SNAPSHOTS[0].name}.json")
    for key in ("counts", "findings", "snapshot", "exit_code"):
        bad = copy.deepcopy(good)
        del bad[key]
        assert_invalid(bad)
    bad = copy.deepcopy(good)
    bad["counts"]["warn"] = str(bad["counts"]["warn"])
    assert_invalid(bad)
    bad = copy.deepcopy(good)
    bad["snapshot"]["gpus"][0]["power_limit_w"] = "350 W"  # the referenced snapshot schema is applied
    assert_invalid(bad)
    bad = copy.deepcopy(good)
    del bad["findings"][0]["severity"]  # and the findings schema
    assert_invalid(bad)


def test_topo_schema_rejects_broken_documents() -> None:
    good = golden("topo--004-4x-rtx6000ada-node-sys-4nic-spaces.txt.json")
    for path in (("pairs",), ("labels",), ("pairs", 0, "kind"), ("gpus", 0, "cpu_affinity"), ("nics", 0, "name")):
        bad = copy.deepcopy(good)
        parent: Any = bad
        for step in path[:-1]:
            parent = parent[step]
        del parent[path[-1]]
        assert_invalid(bad)
    bad = copy.deepcopy(good)
    bad["pairs"][0]["nvlinks"] = "12"
    assert_invalid(bad)
    bad = copy.deepcopy(good)
    bad["pairs"][0]["kind"] = "nvswitch"
    assert_invalid(bad)


@pytest.mark.parametrize("command", ["power", "thermal"])
def test_power_and_thermal_json_of_a_lost_gpu_give_reasons(command: str) -> None:
    doc = golden(f"{command}--gpu-lost.json.json")
    assert any("gpu_lost" in gpu["missing"].values() for gpu in doc["gpus"])  # the lost GPU's nulls say why
    assert_valid(doc)


@pytest.mark.parametrize("command", ["power", "thermal"])
def test_power_and_thermal_schemas_reject_broken_documents(command: str) -> None:
    good = golden(f"{command}--2x-3090-phb-throttling.json.json")
    field = "power_limit_w" if command == "power" else "temp_slowdown_c"
    assert good["gpus"][0][field] is not None
    for key in ("gpus", "findings"):
        bad = copy.deepcopy(good)
        del bad[key]
        assert_invalid(bad)
    bad = copy.deepcopy(good)
    del bad["gpus"][0][field]
    assert_invalid(bad)
    bad = copy.deepcopy(good)
    bad["gpus"][0][field] = f"{bad['gpus'][0][field]} units"
    assert_invalid(bad)
    bad = copy.deepcopy(good)
    bad["gpus"][0][field] = None  # a null without its reason in `missing`
    assert_invalid(bad)
    bad["gpus"][0]["missing"][field] = "not_supported"
    assert_valid(bad)
    bad["gpus"][0]["missing"][field] = "unknown reason"
    assert_invalid(bad)


# --- power plan, plan, nccl-log ------------------------------------------------------------------------------

POWER_PLANS = [  # beside the goldens' (2 TITAN RTX with and without a PSU, 4 RTX 4090, 8 H100 SXM)
    ["--gpu", "TITAN RTX", "--count", "2", "--psu-watts", "850"],
    ["--gpu", "RTX 4090", "--count", "1", "--psu-watts", "1200", "--cpu-watts", "250"],
    ["--gpu", "A100 PCIe 80GB", "--count", "4"],
    ["--gpu", "RTX 3090", "--count", "3", "--psu-watts", "2000"],
    ["--gpu", "RTX A6000", "--count", "2"],
]


@pytest.mark.parametrize("args", POWER_PLANS, ids=" ".join)
def test_power_plan_json_is_valid(args: list[str]) -> None:
    doc = cli_json(["power", "plan", *args, "--json"])
    assert ("psu_ok" in doc) == ("--psu-watts" in args)
    assert_valid(doc)


def test_power_plan_schema_rejects_broken_documents() -> None:
    good = golden("power-plan--2-titan-psu.json")
    for key in ("total_gpu_power_w", "independent_cables_total", "cables", "recommended_psu_w", "psu_ok"):
        bad = copy.deepcopy(good)
        del bad[key]
        assert_invalid(bad)
    bad = copy.deepcopy(good)
    bad["total_gpu_power_w"] = "560 W"
    assert_invalid(bad)
    bad = copy.deepcopy(good)
    bad["cables"][0]["connectors"][0]["count"] = "2"
    assert_invalid(bad)
    bad = copy.deepcopy(good)
    bad["cables"][0]["connectors"][0]["watts_each_reason"] = "a reason beside a number"
    assert_invalid(bad)


def test_power_plan_schema_keeps_the_psu_keys_together() -> None:
    good = golden("power-plan--2-titan-psu.json")
    assert_valid(good)
    for key in ("psu_watts", "psu_ok"):
        bad = copy.deepcopy(good)
        del bad[key]  # one without the other
        assert_invalid(bad)
        bad = copy.deepcopy(good)
        bad[key] = None  # present means known: never null
        assert_invalid(bad)
    bad = copy.deepcopy(good)
    bad["gpu"]["form_factor"] = "card"
    assert_invalid(bad)


def test_power_plan_schema_requires_the_reason_of_a_null_watts_each() -> None:
    good = cli_json(["power", "plan", "--gpu", "RTX A6000", "--count", "1", "--json"])
    connector = good["cables"][0]["connectors"][0]
    assert connector["watts_each"] is None
    assert connector["watts_each_reason"]
    bad = copy.deepcopy(good)
    del bad["cables"][0]["connectors"][0]["watts_each_reason"]  # a null without its reason
    assert_invalid(bad)


PLANS = [
    ["--params", "124M", "--gpus", "2", "--strategy", "ddp"],
    ["--params", "124M", "--gpus", "2", "--strategy", "zero3", "--busbw", "20", "--gpu", "TITAN RTX"],
    ["--params", "1.3B", "--gpus", "8", "--strategy", "fsdp", "--dtype", "bf16", "--tflops", "300"],
    ["--params", "gpt2", "--gpus", "1", "--strategy", "zero1", "--explain-guide"],
    ["--params", "124M", "--gpus", "2", "--from", str(FIXTURES / "snapshots" / "2x-titan-rtx-nv2.json")],
    ["--params", "124M", "--gpus", "4", "--link", "PCIe3x16", "--gpu", "RTX 3090"],
]


@pytest.mark.parametrize("args", PLANS, ids=lambda a: " ".join(a[:6]))
def test_plan_json_is_valid(args: list[str]) -> None:
    assert_valid(cli_json(["plan", *args, "--json"], codes=(0,)))


def test_plan_json_from_a_bench_result_is_valid(tmp_path: Path) -> None:
    result = tmp_path / "allreduce.json"
    result.write_text(json.dumps(bench_doc("allreduce")))
    doc = cli_json(["plan", "--params", "124M", "--gpus", "2", "--from", str(result), "--json"], codes=(0,))
    assert doc["busbw_gbps"] is not None
    assert_valid(doc)


def test_plan_schema_rejects_broken_documents() -> None:
    good = golden("plan--gpt2-ddp.json")
    assert good["comm_time_s"] is None
    for key in ("wire_bytes_per_gpu_per_step", "comm_time_s", "compute_time_s", "strategy", "advice"):
        bad = copy.deepcopy(good)
        del bad[key]
        assert_invalid(bad)
    bad = copy.deepcopy(good)
    bad["wire_bytes_per_gpu_per_step"] = "496 MB"
    assert_invalid(bad)
    bad = copy.deepcopy(good)
    bad["comm_time_reason"] = None  # comm_time_s is null: its reason is promised
    assert_invalid(bad)
    bad = copy.deepcopy(good)
    bad["strategy"] = "zero4"
    assert_invalid(bad)


def test_plan_schema_requires_a_reason_for_every_null() -> None:
    good = golden("plan--gpt2-ddp.json")
    assert good["busbw_gbps"] is None
    assert good["gpu_memory_bytes"] is None
    assert_valid(good)
    for key in ("busbw_gbps", "comm_time_s", "gpu_memory_bytes", "comm_share", "exposed_comm_s"):
        bad = copy.deepcopy(good)
        del bad["missing"][key]  # a null without its reason
        assert_invalid(bad)
    bad = copy.deepcopy(good)
    del bad["missing"]
    assert_invalid(bad)
    for key in ("comm_time_s", "fits_model_states"):
        bad = copy.deepcopy(good)
        del bad["strategies"][0]["missing"][key]
        assert_invalid(bad)
    known = cli_json(["plan", "--params", "124M", "--gpus", "2", "--busbw", "10", "--gpu", "TITAN RTX", "--json"])
    assert known["missing"] == {}
    assert_valid(known)
    bad = copy.deepcopy(known)
    bad["achieved_tflops"] = None
    assert_invalid(bad)
    bad["missing"]["achieved_tflops"] = "no FLOPS"
    assert_valid(bad)


def test_plan_schema_checks_the_guide_and_the_bandwidth_source() -> None:
    good = golden("plan--gpt2-guide.json")  # --params gpt2 --gpus 2 --link NV2 --gpu "TITAN RTX" --explain-guide
    assert good["guide"]["schema"] == "rigcheck.plan-guide/1"
    assert_valid(good)
    for mutate in (
        lambda d: d["guide"].pop("explanation"),
        lambda d: d["guide"]["scenarios"][0].update(shm_busbw_gbps="4 GB/s"),
        lambda d: d.update(guide=None),  # without --explain-guide the key is absent, never null
        lambda d: d.update(busbw_source=None),  # a known bus bandwidth says where it came from
        lambda d: d["missing"].update(busbw_source="a text, not a reading"),
    ):
        bad = copy.deepcopy(good)
        mutate(bad)
        assert_invalid(bad)


def test_nccl_log_schema_rejects_broken_documents() -> None:
    good = golden(f"nccl-log--{NCCL_LOGS[-1].name}.json")
    for key in ("transports", "p2p_disabled", "nccl_version", "nranks", "channels"):
        bad = copy.deepcopy(good)
        del bad[key]
        assert_invalid(bad)
    bad = copy.deepcopy(good)
    bad["nranks"] = str(bad["nranks"])
    assert_invalid(bad)
    bad = copy.deepcopy(good)
    bad["p2p_disabled"] = "no"
    assert_invalid(bad)
    bad = copy.deepcopy(good)
    bad["channels"][0]["from_rank"] = "0"
    assert_invalid(bad)
    bad = copy.deepcopy(good)
    bad["channels"][0]["direction"] = "both"
    assert_invalid(bad)
    bad = copy.deepcopy(good)
    del bad["channels"][0]["kind"]
    assert_invalid(bad)


def test_nccl_log_schema_requires_a_reason_for_every_null() -> None:
    good = golden(f"nccl-log--{NCCL_LOGS[-1].name}.json")
    assert good["nnodes"] is None
    assert good["missing"]["nnodes"] == "no nNodes line in the log"
    bad = copy.deepcopy(good)
    del bad["missing"]["nnodes"]  # a null without its reason
    assert_invalid(bad)
    bad = copy.deepcopy(good)
    bad["nranks"] = None
    assert_invalid(bad)
    bad["missing"]["nranks"] = "no nRanks line in the log"
    assert_valid(bad)
    bad["missing"]["made_up_field"] = "why"
    assert_invalid(bad)


# --- burn and the trace header -------------------------------------------------------------------------------


def test_burn_json_of_a_run_is_valid() -> None:
    """`rigcheck burn` itself needs CUDA; its document comes from the same code run on CPU with the fake NVML."""
    torch = pytest.importorskip("torch")
    from rigcheck.bench.burn import run_burn
    from rigcheck.cli.burn import burn_document, burn_exit_code

    with NvmlPoller(burn_power_capped_h100(1)) as poller:
        result = run_burn(
            poller,
            minutes=0.01,
            dtype="fp32",
            interval_s=0.02,
            device_for=lambda i: torch.device("cpu"),
            size=32,
            preroll_s=0.1,
        )
    doc = json.loads(json.dumps(burn_document(result, burn_exit_code(result)).to_json_dict()))
    assert_valid(doc)
    for code in (130, 143):  # stopped by Ctrl-C, by SIGTERM (Slurm, Kubernetes, kill): the document still says so
        stopped = copy.deepcopy(doc)
        stopped["exit_code"] = code
        assert_valid(stopped)
    bad = copy.deepcopy(doc)
    bad["exit_code"] = 2  # a usage error prints no document
    assert_invalid(bad)
    bad = copy.deepcopy(doc)
    del bad["gpus"][0]["errors"]  # `rigcheck burn` promises it per GPU
    assert_invalid(bad)
    bad = copy.deepcopy(doc)
    del bad["workload"]
    assert_invalid(bad)
    assert doc["workload"]["gpus"][0]["first_error_s"] is None
    bad = copy.deepcopy(doc)
    del bad["workload"]["gpus"][0]["missing"]["first_error_s"]  # a null without its reason
    assert_invalid(bad)
    assert doc["gpus"][0]["tflops_first_10s"] is not None
    bad = copy.deepcopy(doc)
    bad["gpus"][0]["tflops_first_10s"] = None
    assert_invalid(bad)
    bad["gpus"][0]["missing"]["tflops_first_10s"] = "no timed matmul finished"
    assert_valid(bad)


def test_burn_schema_rejects_broken_documents() -> None:
    good = golden("burn-analyze--smi-lms-torch-bf16-burn.csv.json")
    keys = ("index", "loaded_s", "power_draw_w_median_loaded", "temp_slowdown_c", "reasons_time_fraction", "limiter")
    for key in keys:
        bad = copy.deepcopy(good)
        del bad["gpus"][0][key]
        assert_invalid(bad)
    bad = copy.deepcopy(good)
    bad["gpus"][0]["temp_c_max"] = "70 C"
    assert_invalid(bad)
    bad = copy.deepcopy(good)
    bad["gpus"][0]["limiter"] = "fan"
    assert_invalid(bad)
    bad = copy.deepcopy(good)
    bad["gpus"][0]["reasons_time_fraction"]["made_up_reason"] = 0.5
    assert_invalid(bad)
    assert "partial" not in good  # the keys of a run: absent from --analyze, never null, never one alone
    bad = copy.deepcopy(good)
    bad["partial"] = None
    assert_invalid(bad)
    bad["partial"] = False
    assert_invalid(bad)


def test_burn_schema_requires_a_reason_for_every_null() -> None:
    good = golden("burn-analyze--smi-lms-light-load.csv.json")
    gpu = good["gpus"][0]
    assert gpu["temp_slowdown_c"] is None
    assert gpu["missing"]["temp_slowdown_c"] == "not in the trace"
    assert gpu["missing"]["time_to_power_cap_s"] == "never reached the cap"
    for key in ("temp_slowdown_c", "time_to_power_cap_s", "slowdown_margin_c", "lost_at_s", "errors"):
        bad = copy.deepcopy(good)
        del bad["gpus"][0]["missing"][key]  # a null without its reason
        assert_invalid(bad)
    bad = copy.deepcopy(good)
    del bad["gpus"][0]["missing"]
    assert_invalid(bad)
    bad = copy.deepcopy(good)
    bad["gpus"][0]["temp_c_max"] = None
    assert_invalid(bad)
    bad["gpus"][0]["missing"]["temp_c_max"] = "not in the trace"
    assert_valid(bad)
    bad["gpus"][0]["missing"]["verdict"] = "not a number field"
    assert_invalid(bad)


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_trace_header_and_samples_are_valid(fmt: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_poller(monkeypatch)
    path = tmp_path / f"trace.{fmt}"
    cli_json(["monitor", "--interval", "0.02", "--duration", "0.2", f"--{fmt}", str(path), "--json"], codes=(0,))
    lines = path.read_text().splitlines()
    if fmt == "csv":
        assert lines[0].startswith("t_s,gpu,")  # a plain CSV; the header is in the sidecar
        header = json.loads(Path(f"{path}.meta.json").read_text())
    else:
        header = json.loads(lines[0])
    assert_valid(header)
    if fmt == "jsonl":
        schema = document_schema("rigcheck.trace/2")
        sample = jsonschema.Draft202012Validator({**schema["$defs"]["sample"], "$defs": schema["$defs"]})
        samples = [json.loads(line) for line in lines[1:]]
        assert samples
        for s in samples:
            sample.validate(s)
        bad = dict(samples[0], power_draw_w="700 W")
        assert not sample.is_valid(bad)
    for mutate in (lambda h: h.pop("gpus"), lambda h: h.update(interval_s="0.02"), lambda h: h["gpus"][0].pop("index")):
        bad_header = copy.deepcopy(header)
        mutate(bad_header)
        assert_invalid(bad_header, "rigcheck.trace/2")


def test_monitor_json_is_valid(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_poller(monkeypatch)
    doc = cli_json(["monitor", "--interval", "0.02", "--duration", "0.2", "--json"], codes=(0,))
    assert doc["gpus"][0]["latest"] is not None
    assert_valid(doc)
    for mutate in (
        lambda d: d.pop("sampler"),
        lambda d: d["gpus"][0]["summary"].update(power_draw_w_max="700"),
        lambda d: d["gpus"][0]["latest"].update(temp_c="73 C"),  # the trace schema's sample, by reference
        lambda d: d["gpus"][0].pop("unavailable"),
    ):
        bad = copy.deepcopy(doc)
        mutate(bad)
        assert_invalid(bad)


# --- bench ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(BENCH_RUNS))
def test_bench_json_is_valid(name: str) -> None:
    doc = bench_doc(name)
    assert doc["schema"] == "rigcheck.bench/1"
    assert doc["results"]
    assert_valid(doc)


def test_train_tiny_runs_through_main_on_two_processes() -> None:
    """`bench train --tiny --cpu -n 2` (the run the schema tests above share): both ranks trained."""
    row = bench_doc("train")["results"][0]
    assert row["train_runtime_s"] > 0
    assert row["samples_per_s"] > 0
    assert row["world_size"] == 2


Mutation = Callable[[dict[str, Any]], object]
BENCH_BREAKS: list[tuple[str, str, Mutation]] = [
    ("allreduce", "generic key removed", lambda d: d["results"][0].pop("median")),
    ("allreduce", "collective key removed", lambda d: d["results"][0].pop("busbw_gbps")),
    ("allreduce", "correct removed", lambda d: d["results"][0].pop("correct")),
    ("allreduce", "number as string", lambda d: d["results"][0].update(time_us_median="315.6")),
    ("allreduce", "size as float string", lambda d: d["results"][0].update(size_bytes="1024")),
    ("allreduce", "method removed", lambda d: d.pop("method")),
    ("allreduce", "versions lack torch", lambda d: d["versions"].pop("torch")),
    ("allreduce", "snapshot broken", lambda d: d["snapshot"].update(gpus="many")),
    ("allreduce --compare-p2p", "comparison removed", lambda d: d.pop("comparison")),
    ("allreduce --compare-p2p", "run's row lacks its op", lambda d: d["runs"][1]["results"][0].pop("op")),
    ("allreduce --compare-p2p", "speed-up as string", lambda d: d["comparison"].update(speedup_percent="23%")),
    ("matmul", "peak removed", lambda d: d["results"][0].pop("peak_tflops")),
    ("matmul", "tflops as string", lambda d: d["results"][0].update(tflops_median="1.0")),
    ("matmul", "null peak without its reason", lambda d: d["results"][0].pop("missing")),
    ("matmul", "a reason for a value that is there", lambda d: d["results"][0]["missing"].update(dtype="why")),
    ("membw", "a key no benchmark has", lambda d: d["results"][0].update(speed="fast")),
    ("allreduce --compare-p2p", "a result not tagged P2P=Y/N", lambda d: d["results"][0].pop("p2p")),
    ("allreduce --compare-p2p", "one run, not partial", lambda d: d["runs"].pop()),
    ("membw", "copy_gbps removed", lambda d: d["results"][0].pop("copy_gbps")),
    ("train", "samples_per_s removed", lambda d: d["results"][0].pop("samples_per_s")),
    ("train", "runtime as string", lambda d: d["results"][0].update(train_runtime_s="1.2 s")),
]


@pytest.mark.parametrize(("name", "what", "mutate"), BENCH_BREAKS, ids=[f"{n}: {w}" for n, w, _ in BENCH_BREAKS])
def test_bench_schema_rejects_broken_documents(name: str, what: str, mutate: Mutation) -> None:
    bad = copy.deepcopy(bench_doc(name))
    mutate(bad)
    assert_invalid(bad)


def test_collective_keys_are_required_only_for_collectives() -> None:
    """A row without op/size_bytes/busbw is fine for a non-collective benchmark, not for a collective one."""
    doc = copy.deepcopy(bench_doc("membw"))
    assert "busbw_gbps" not in doc["results"][0]
    assert_valid(doc)
    doc["benchmark"] = "allgather"
    assert_invalid(doc)

"""The command line end to end: contracts, exit codes, bad input as one line without a traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from rigcheck.model.schema import snapshot_schema
from rigcheck.report.render import Format
from tests.conftest import nvidia_gpu_present
from tests.support.cli import Rigcheck

FIXTURES = Path(__file__).parent.parent / "fixtures"
CORPUS = FIXTURES / "corpus"
SNAPSHOTS = FIXTURES / "snapshots"


# --- contracts -------------------------------------------------------------------------------------


def test_topo_json_contract_on_corpus(rigcheck: Rigcheck) -> None:
    code, out, err = rigcheck(
        "topo", "--from", str(CORPUS / "topo/004-4x-rtx6000ada-node-sys-4nic-spaces.txt"), "--json"
    )
    assert code == 0, err
    data = json.loads(out)
    assert data["labels"] == ["GPU0", "GPU1", "GPU2", "GPU3", "NIC0", "NIC1", "NIC2", "NIC3"]
    assert data["matrix"][0][:4] == ["X", "NODE", "SYS", "SYS"]
    assert data["gpus"][2] == {"index": 2, "cpu_affinity": "32-63", "numa_affinity": "1", "gpu_numa_id": "N/A"}
    assert data["nics"][3] == {"label": "NIC3", "name": "mlx5_3"}
    assert len(data["pairs"]) == 6
    pair = next(p for p in data["pairs"] if (p["a"], p["b"]) == (0, 2))
    assert pair["link"] == "SYS"
    assert pair["kind"] == "cross_numa"
    assert pair["nvlinks"] is None
    assert isinstance(pair["explanation"], str)
    assert pair["explanation"]


def test_topo_json_guide_nvlink_pair(rigcheck: Rigcheck) -> None:
    code, out, _ = rigcheck("topo", "--from", str(CORPUS / "topo/006-2gpu-nv2-minimal-no-legend.txt"), "--json")
    assert code == 0
    pairs = json.loads(out)["pairs"]
    assert pairs == [pairs[0]]
    assert (pairs[0]["a"], pairs[0]["b"], pairs[0]["link"], pairs[0]["kind"], pairs[0]["nvlinks"]) == (
        0,
        1,
        "NV2",
        "nvlink",
        2,
    )


CONTRACT_GPU_KEYS = {
    "index",
    "name",
    "pci_bus_id",
    "power_draw_w",
    "power_limit_w",
    "power_default_limit_w",
    "power_enforced_limit_w",
    "power_min_limit_w",
    "power_max_limit_w",
    "temp_c",
    "temp_slowdown_c",
    "temp_shutdown_c",
    "temp_max_operating_c",
    "pcie_gen_current",
    "pcie_gen_max",
    "pcie_width_current",
    "pcie_width_max",
    "clock_event_reasons_active",
    "missing",
}


def test_snapshot_contract_from_real_h100_xml(rigcheck: Rigcheck) -> None:
    code, out, _ = rigcheck("snapshot", "--from", str(CORPUS / "h100-vm/q.xml"))
    assert code == 0
    data = json.loads(out)
    jsonschema.validate(data, snapshot_schema())
    assert data["schema"] == "rigcheck.snapshot/1"
    gpu = data["gpus"][0]
    assert set(gpu) >= CONTRACT_GPU_KEYS
    assert gpu["name"] == "NVIDIA H100 80GB HBM3"
    assert gpu["pci_bus_id"] == "00000000:00:06.0"
    assert (gpu["power_limit_w"], gpu["power_default_limit_w"], gpu["power_min_limit_w"], gpu["power_max_limit_w"]) == (
        700.0,
        700.0,
        200.0,
        700.0,
    )
    assert (gpu["temp_slowdown_c"], gpu["temp_shutdown_c"], gpu["temp_max_operating_c"]) == (89, 95, 87)
    assert (gpu["pcie_gen_current"], gpu["pcie_gen_max"], gpu["pcie_width_current"], gpu["pcie_width_max"]) == (
        5,
        5,
        16,
        16,
    )
    assert gpu["clock_event_reasons_active"] == ["idle"]
    for key, value in gpu.items():
        if value is None and key in CONTRACT_GPU_KEYS:
            assert key in gpu["missing"], f"{key} is null without a reason"


def test_snapshot_replays_through_from(tmp_path: Path, rigcheck: Rigcheck) -> None:
    code, out, _ = rigcheck("snapshot", "--from", str(CORPUS / "smi-xml/005-2xa5000-590-v13.xml"))
    assert code == 0
    saved = tmp_path / "rig.json"
    saved.write_text(out)
    code, again, _ = rigcheck("snapshot", "--from", str(saved))
    assert code == 0
    first, second = json.loads(out), json.loads(again)
    assert second["source"]["replayed_from"] == str(saved)
    second["source"]["replayed_from"] = None
    assert first == second


def test_power_plan_guide_rig(rigcheck: Rigcheck) -> None:
    code, out, _ = rigcheck("power", "plan", "--gpu", "TITAN RTX", "--count", "2", "--json")
    assert code == 0
    plan = json.loads(out)
    assert plan["independent_cables_total"] == 4
    assert plan["total_gpu_power_w"] == 560
    assert len(plan["cables"]) == 2
    assert all(c["connectors"] == [{"kind": "8-pin", "count": 2, "watts_each": 150}] for c in plan["cables"])
    assert "psu_ok" not in plan
    assert plan["recommended_psu_w"] > 560


def test_power_plan_small_psu_exits_1(rigcheck: Rigcheck) -> None:
    code, out, _ = rigcheck("power", "plan", "--gpu", "TITAN RTX", "--count", "2", "--psu-watts", "600", "--json")
    assert code == 1
    assert json.loads(out)["psu_ok"] is False
    code, out, _ = rigcheck("power", "plan", "--gpu", "TITAN RTX", "--count", "2", "--psu-watts", "2000")
    assert code == 0
    assert "Your PSU is enough" in out
    assert "4 (no pigtails)" in out


def test_power_plan_unknown_gpu_is_usage_error(rigcheck: Rigcheck) -> None:
    code, out, err = rigcheck("power", "plan", "--gpu", "RTX 9999 Hyper", "--count", "2")
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1
    assert "Traceback" not in err


# --- doctor ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", list(Format))
def test_doctor_every_format_renders(fmt: Format, rigcheck: Rigcheck) -> None:
    code, out, err = rigcheck("doctor", "--from", str(SNAPSHOTS / "healthy-8x-h100.json"), "--format", fmt.value)
    assert code == 0, err
    assert "\x1b[" not in out  # not a terminal: no ANSI
    if fmt is Format.JSON:
        data = json.loads(out)
        assert data["schema"] == "rigcheck.doctor/1"
        assert data["exit_code"] == 0
        assert len(data["snapshot"]["gpus"]) == 8
    elif fmt is Format.MARKDOWN:
        assert out.startswith("# rigcheck doctor")
        assert "| GPU | name |" in out
    elif fmt is Format.HTML:
        assert out.lstrip().lower().startswith("<!doctype html>")
        assert "<script" not in out
        assert "NVIDIA H100 80GB HBM3" in out
    else:
        assert "rigcheck doctor" in out
        assert "Result: healthy" in out


def test_doctor_problems_exit_1_worst_first(rigcheck: Rigcheck) -> None:
    code, out, _ = rigcheck("doctor", "--from", str(SNAPSHOTS / "ecc-errors.json"), "--json")
    data = json.loads(out)
    assert code == 1
    assert data["exit_code"] == 1
    severities = [f["severity"] for f in data["findings"]]
    order = ["fail", "warn", "unknown", "info", "ok"]
    assert severities == sorted(severities, key=order.index)
    assert severities[0] == "fail"


def test_doctor_strict_counts_warnings(rigcheck: Rigcheck) -> None:
    path = str(SNAPSHOTS / "2x-3090-phb-throttling.json")
    code, out, _ = rigcheck("doctor", "--from", path, "--json")
    data = json.loads(out)
    assert data["counts"]["warn"] > 0
    strict_code, _, _ = rigcheck("doctor", "--from", path, "--json", "--strict")
    assert strict_code == 1
    assert code == (1 if data["counts"]["fail"] else 0)


@pytest.mark.parametrize(
    "fixture",
    [
        "smi/002-2x2080ti-550.txt",
        "smi-q/001-1xh100-545-full-event-reasons-tlimit.txt",
        "smi-q/003-1gpu-340-temperature-only.txt",
        "smi-xml/004-rtx3080-windows-wddm-536-v12.xml",
        "nvlink/002-3xa6000-bridge-pair-third-inactive.txt",
        "topo/014-3xa6000-nv4-bridge-pair-plus-pcie-ansi.txt",
        "h100-vm/q.txt",
    ],
)
def test_doctor_reads_every_kind_of_input(fixture: str, rigcheck: Rigcheck) -> None:
    code, out, err = rigcheck("doctor", "--from", str(CORPUS / fixture), "--json")
    assert code in (0, 1), err
    data = json.loads(out)
    assert data["snapshot"]["gpus"]
    assert data["findings"]


@pytest.mark.skipif(nvidia_gpu_present(), reason="this machine has a GPU")
def test_doctor_without_gpu_says_so_without_torch() -> None:
    # A finder that refuses torch: if doctor imported it, the run would end in an internal error.
    script = (
        "import sys\n"
        "class NoTorch:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'torch' or name.startswith('torch.'):\n"
        "            raise ImportError('torch must not be imported by doctor')\n"
        "sys.meta_path.insert(0, NoTorch())\n"
        "from rigcheck.cli.app import main\n"
        "main(['doctor'])\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode in (0, 1), proc.stderr
    assert "Traceback" not in proc.stderr
    assert "no NVIDIA GPU visible" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert "rigcheck doctor" in proc.stdout


# --- bad input -------------------------------------------------------------------------------------


def _write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("command", ["doctor", "topo", "snapshot", "power", "thermal"])
@pytest.mark.parametrize(
    ("name", "data", "needle"),
    [
        ("empty.txt", b"", "empty file"),
        ("blank.txt", b"\n  \n", "empty file"),
        ("garbage.bin", bytes(range(256)) * 8, "binary"),
        ("latin1.txt", b"GPU0\t\xe9\xe8 X\n", "not UTF-8"),
        ("prose.txt", b"hello, this is not an nvidia-smi output\n", "not a recognised input"),
        ("schema2.json", b'{"schema": "rigcheck.snapshot/2", "gpus": []}', "not supported"),
    ],
)
def test_bad_input_is_one_line_exit_2(
    command: str, name: str, data: bytes, needle: str, *, tmp_path: Path, rigcheck: Rigcheck
) -> None:
    path = _write(tmp_path, name, data)
    code, out, err = rigcheck(command, "--from", str(path))
    assert code == 2
    assert out == ""
    assert needle in err
    assert str(path) in err
    assert len(err.strip().splitlines()) == 1
    assert "Traceback" not in err


def test_truncated_q_is_an_error_or_partial(tmp_path: Path, rigcheck: Rigcheck) -> None:
    text = (CORPUS / "h100-vm/q.txt").read_text()
    head = "\n".join(text.splitlines()[:5]) + "\n"  # cut before any GPU section
    path = _write(tmp_path, "cut.txt", head.encode())
    code, out, err = rigcheck("snapshot", "--from", str(path))
    assert code == 2
    assert str(path) in err
    assert len(err.strip().splitlines()) == 1
    # Cut mid-GPU: what was read is kept, the rest is null with a reason.
    half = "\n".join(text.splitlines()[:120]) + "\n"
    path = _write(tmp_path, "half.txt", half.encode())
    code, out, err = rigcheck("snapshot", "--from", str(path))
    assert code == 0, err
    gpu = json.loads(out)["gpus"][0]
    assert gpu["name"] == "NVIDIA H100 80GB HBM3"
    assert gpu["temp_slowdown_c"] is None
    assert gpu["missing"]["temp_slowdown_c"] == "truncated"  # the file ends before the GPU's temperatures


def test_topology_with_missing_row_names_the_line(tmp_path: Path, rigcheck: Rigcheck) -> None:
    lines = (CORPUS / "topo/008-8xa100-nv12-realigned-columns.txt").read_text().splitlines()
    broken = [ln for ln in lines if not ln.lstrip().startswith("GPU5")]
    path = _write(tmp_path, "topo.txt", ("\n".join(broken) + "\n").encode())
    code, _, err = rigcheck("topo", "--from", str(path))
    assert code == 2
    assert f"{path}:" in err
    assert "GPU5" in err
    assert len(err.strip().splitlines()) == 1


def test_huge_file_is_refused_without_reading(tmp_path: Path, rigcheck: Rigcheck) -> None:
    path = tmp_path / "huge.txt"
    with path.open("wb") as fh:
        fh.truncate(100 * 1000 * 1000)  # sparse: 100 MB on paper, nothing on disk
    code, _, err = rigcheck("doctor", "--from", str(path))
    assert code == 2
    assert "too large" in err
    assert str(path) in err


def test_missing_file_and_directory(tmp_path: Path, rigcheck: Rigcheck) -> None:
    code, _, err = rigcheck("doctor", "--from", str(tmp_path / "nope.txt"))
    assert (code, "no such file" in err) == (2, True)
    code, _, err = rigcheck("doctor", "--from", str(tmp_path))
    assert (code, "directory" in err) == (2, True)


def test_bad_option_is_usage_error(rigcheck: Rigcheck) -> None:
    code, _, err = rigcheck("doctor", "--format", "yaml")
    assert code == 2
    assert "yaml" in err
    code, _, _ = rigcheck("power", "plan", "--gpu", "TITAN RTX", "--count", "0")
    assert code == 2


def test_version_and_help(rigcheck: Rigcheck) -> None:
    code, out, _ = rigcheck("--version")
    assert code == 0
    assert out.startswith("rigcheck ")
    code, out, _ = rigcheck("--help")
    assert code == 0
    for command in ("doctor", "topo", "snapshot", "power", "thermal"):
        assert command in out


@pytest.mark.parametrize("command", [["doctor"], ["bench", "train"], ["burn"], ["monitor"]])
def test_help_shows_flags_bare_and_values_with_their_type(command: list[str], rigcheck: Rigcheck) -> None:
    """`--json <bool>` would read as if the flag took a value; options that take one keep their label."""
    code, out, _ = rigcheck(*command, "--help")
    assert code == 0
    assert "--json" in out
    assert "<bool>" not in out
    assert "<file>" in out  # an option that takes a value still shows what it takes


def _raise(exc: BaseException) -> object:
    def boom(*_: object, **__: object) -> object:
        raise exc

    return boom


def test_ctrl_c_is_one_line_exit_130(monkeypatch: pytest.MonkeyPatch, rigcheck: Rigcheck) -> None:
    monkeypatch.setattr("rigcheck.cli.doctor.run_checks", _raise(KeyboardInterrupt()))
    code, out, err = rigcheck("doctor", "--from", str(SNAPSHOTS / "healthy-8x-h100.json"))
    assert code == 130
    assert out == ""
    assert err == "rigcheck: interrupted\n"


def test_bug_is_exit_3_with_a_hint(monkeypatch: pytest.MonkeyPatch, rigcheck: Rigcheck) -> None:
    monkeypatch.delenv("RIGCHECK_DEBUG", raising=False)
    monkeypatch.setattr("rigcheck.cli.doctor.run_checks", _raise(RuntimeError("checks exploded")))
    code, _, err = rigcheck("doctor", "--from", str(SNAPSHOTS / "healthy-8x-h100.json"))
    assert code == 3
    assert "internal error: RuntimeError: checks exploded" in err
    assert "RIGCHECK_DEBUG=1" in err
    assert len(err.strip().splitlines()) == 1


def test_power_view_explains_missing_cells(rigcheck: Rigcheck) -> None:
    code, out, _ = rigcheck("power", "--from", str(SNAPSHOTS / "consumer-power-not-supported.json"))
    assert code == 0
    assert "GPU0 n/a: not supported (draw, limit, default, enforced, min, max)" in out
    code, out, _ = rigcheck("power", "--from", str(SNAPSHOTS / "consumer-power-not-supported.json"), "--json")
    data = json.loads(out)
    assert data["schema"] == "rigcheck.power/1"
    assert data["gpus"][0]["power_limit_w"] is None
    assert data["gpus"][0]["missing"]["power_limit_w"] == "not_supported"
    assert {f["category"] for f in data["findings"]} == {"power"}


@pytest.mark.skipif(nvidia_gpu_present(), reason="this machine has a GPU")
def test_topo_without_gpu_is_one_line(rigcheck: Rigcheck) -> None:
    code, out, err = rigcheck("topo")
    assert code == 1
    assert out == ""
    assert err.startswith("rigcheck: no NVIDIA GPU visible")
    assert "--from" in err
    assert len(err.strip().splitlines()) == 1


def test_markdown_shows_placeholder_gpu(rigcheck: Rigcheck) -> None:
    code, out, _ = rigcheck("doctor", "--from", str(SNAPSHOTS / "gpu-lost.json"), "--format", "markdown")
    assert code == 1
    assert "| 2 | unreadable: " in out
    assert "GPUs: 4 × NVIDIA A100-SXM4-80GB (1 unreadable)" in out
    assert "| FAIL | `health.gpu-unreadable` | GPU2 |" in out


def test_doctor_writes_html_and_markdown_files(tmp_path: Path, rigcheck: Rigcheck) -> None:
    html, md = tmp_path / "rig.html", tmp_path / "rig.md"
    argv = ["doctor", "--from", str(SNAPSHOTS / "ecc-errors.json"), "--html", str(html), "--markdown", str(md)]
    code, out, err = rigcheck(*argv)
    assert code == 1
    assert "Result: problems found" in out  # the terminal report is still printed
    page = html.read_text()
    assert "health.ecc-uncorrected-volatile" in page
    assert "<script" not in page
    assert md.read_text().startswith("# rigcheck doctor")
    assert f"wrote {html}" in err


def test_doctor_html_to_a_bad_path_is_one_line(tmp_path: Path, rigcheck: Rigcheck) -> None:
    target = tmp_path / "no-such-dir" / "rig.html"
    code, _, err = rigcheck("doctor", "--from", str(SNAPSHOTS / "healthy-8x-h100.json"), "--html", str(target))
    assert code == 2
    assert str(target) in err
    assert len(err.strip().splitlines()) == 1

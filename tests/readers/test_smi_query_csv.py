"""`doctor --from` a saved `nvidia-smi --query-gpu=... --format=csv`: with its header, each documented field lands
on the snapshot's GPU; without it, only `index,gpu_recovery_action` is read (its words tell it), the rest refused
with one line; a trace (a GPU on several rows) is refused, naming burn --analyze."""

from __future__ import annotations

from pathlib import Path

import pytest

from rigcheck.errors import ParseError
from rigcheck.model import Missing
from rigcheck.readers.from_file import detect_kind, load_file, load_text
from tests.support.cli import Rigcheck

CORPUS = Path(__file__).parent.parent / "fixtures" / "corpus"
RESET_CSV = CORPUS / "smi-q-fabric/203-8gpu-query-gpu-recovery-action-reset-csv.txt"
H100_QUERY = CORPUS / "h100-vm/query.csv"  # real: one H100, --format=csv with units
BURN_TRACE = CORPUS / "telemetry/smi-lms-torch-bf16-burn.csv"  # real: 583 rows of GPU 0, -lms 100


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines()


def test_noheader_recovery_action_fails_gpu1_with_reset(rigcheck: Rigcheck) -> None:
    """DCGM issue #263's `--query-gpu=index,gpu_recovery_action --format=csv,noheader`: GPU 1 asks for a reset."""
    code, out, _ = rigcheck("doctor", "--from", str(RESET_CSV))
    assert code == 1
    fail = next(line for line in out.splitlines() if line.startswith("FAIL"))
    assert "GPU1" in fail
    assert "recovery action: Reset" in fail
    snap = load_file(str(RESET_CSV))
    assert [g.recovery_action for g in snap.gpus] == ["None", "Reset"] + ["None"] * 6
    # The author's annotation after "Reset" is not nvidia-smi's: named in a diagnostic, not read as the value.
    assert any("GPU is unusable" in d.message and d.gpu == 1 for d in snap.diagnostics)


def test_headered_query_fields_land_in_the_snapshot() -> None:
    """The real H100 query (units in header and values), and the same line under `--format=csv,nounits`."""
    snap = load_file(str(H100_QUERY))
    assert snap.source.kind == "nvidia-smi-query-csv"
    (gpu,) = snap.gpus
    assert gpu.name == "NVIDIA H100 80GB HBM3"
    assert gpu.pci_bus_id == "00000000:00:06.0"
    assert (gpu.power_draw_w, gpu.power_limit_w, gpu.power_default_limit_w) == (74.22, 700.0, 700.0)
    assert (gpu.temp_c, gpu.temp_memory_c) == (43, 46)
    assert (gpu.clock_sm_mhz, gpu.clock_sm_max_mhz) == (345, 1980)
    assert gpu.clock_event_reasons_active == ["idle"]
    assert (gpu.pcie_gen_current, gpu.pcie_gen_max, gpu.pcie_width_current, gpu.pcie_width_max) == (5, 5, 16, 16)
    assert gpu.missing["ecc_uncorrected_volatile"] == Missing.NOT_IN_SOURCE
    assert not [d for d in snap.diagnostics if "does not read" in d.message]  # every column of it is read


def test_nounits_and_health_columns_with_an_unknown_one_named_once() -> None:
    """Synthetic (labelled): the real H100 line's header with health fields added, as --format=csv,nounits prints
    them (units only in the header), and a column rigcheck has no field for."""
    text = (
        "index, name, power.draw [W], power.limit [W], gpu_recovery_action, fabric.state, fabric.status, "
        "ecc.errors.uncorrected.volatile.total, clocks_event_reasons.active, utilization.memory [%]\n"
        "0, NVIDIA H100 80GB HBM3, 74.22, 700.00, None, [N/A], [N/A], 0, 0x0000000000000001, 0\n"
        "1, NVIDIA H100 80GB HBM3, 74.90, 700.00, Reboot, Completed, Success, 3, 0x0000000000000004, 0\n"
    )
    assert detect_kind(text) == "nvidia-smi-query-csv"
    snap = load_text(text, "q.csv")
    g0, g1 = snap.gpus
    assert (g0.power_draw_w, g0.power_limit_w, g0.recovery_action) == (74.22, 700.0, "None")
    assert g0.fabric_state is None
    assert g0.missing["fabric_state"] == Missing.REPORTED_NA
    assert (g1.recovery_action, g1.fabric_state, g1.fabric_status) == ("Reboot", "Completed", "Success")
    assert g1.ecc_uncorrected_volatile == 3
    assert g1.clock_event_reasons_active == ["sw_power_cap"]
    unread = [d.message for d in snap.diagnostics if "does not read" in d.message]
    assert unread == ["columns rigcheck does not read: utilization.memory [%]"]


@pytest.mark.parametrize(
    "text",
    [
        BURN_TRACE.read_text(),  # real: -lms 100 with the timestamp first
        # The same columns without the timestamp (-lms still): rows of GPU 0 again and again.
        "\n".join(line.partition(", ")[2] for line in _lines(BURN_TRACE)[:4]) + "\n",
    ],
    ids=["timestamp", "no-timestamp"],
)
def test_a_trace_is_refused_naming_burn_analyze(text: str) -> None:
    """A GPU on several rows is a trace: one row of it is not the machine's state; burn --analyze judges all."""
    assert detect_kind(text) == "nvidia-smi-query-csv"
    with pytest.raises(ParseError, match=r"rigcheck burn --analyze FILE"):
        load_text(text, "trace.csv")


def test_a_noheader_gpu_twice_is_a_trace_too() -> None:
    with pytest.raises(ParseError, match=r"3 rows of 2 GPUs.*burn --analyze"):
        load_text("0, None\n1, Reset\n1, Reset\n", "q.csv")


@pytest.mark.parametrize(
    ("name", "text", "needle"),
    [
        ("empty.csv", "", "empty file"),
        ("garbage.csv", "@@@ ### !!!\n%%% ^^^\n", "`nvidia-smi --query-gpu=... --format=csv`"),
        ("header-only.csv", _lines(H100_QUERY)[0] + "\n", "header without any row"),
        ("cut.csv", "\n".join(_lines(H100_QUERY)) + "\n" + _lines(H100_QUERY)[1][:40], "a cut or foreign row"),
        ("noheader.csv", "\n".join(_lines(H100_QUERY)[1:]) + "\n", "save it with the header (--format=csv)"),
        ("all-none.csv", "0, None\n1, None\n", "save it with the header"),
        ("bad-value.csv", "index, power.draw [W]\n0, lots W\n", "power.draw [W]: cannot read 'lots W' as watts"),
    ],
)
def test_bad_query_csv_is_one_line_exit_2(
    name: str, text: str, needle: str, tmp_path: Path, rigcheck: Rigcheck
) -> None:
    path = tmp_path / name
    path.write_text(text)
    code, out, err = rigcheck("doctor", "--from", str(path))
    assert code == 2
    assert out == ""
    assert len(err.strip().splitlines()) == 1
    assert needle in err
    assert "Traceback" not in err


def test_several_rows_without_a_gpu_column_are_refused() -> None:
    """Rows without index, uuid or pci.bus_id could be GPUs or samples: not guessed."""
    with pytest.raises(ParseError, match="add index to --query-gpu"):
        load_text("power.draw [W], temperature.gpu\n74.22 W, 43\n75.01 W, 44\n", "q.csv")

"""What `rigcheck burn` checks beyond its trace (issue 28): the kernel log's lines new during the run (a fake dmesg
through the live reader), judged by the doctor's rules; the cross-GPU fingerprint before the load, on CPU ranks."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from functools import partial
from typing import Any

import pytest
import torch
from rich.console import Console

from rigcheck.bench import burn as burn_module
from rigcheck.bench.burn_fingerprint import visible_devices
from rigcheck.bench.burn_kernel_log import judge_run_log, new_events
from rigcheck.checks.burn.judge import is_problem
from rigcheck.cli import monitor as monitor_cmd
from rigcheck.cli.burn import burn_document, burn_exit_code
from rigcheck.model.burn import GpuBurnAnalysis
from rigcheck.model.fingerprint import FLIP_VAR
from rigcheck.model.kernel_log import KernelEvent, KernelLogRead
from rigcheck.probe.kernel_log import parse_kernel_events, read_live
from rigcheck.probe.nvml import NvmlPoller
from rigcheck.report.render import Format, render
from tests.support.burn import cpu_burn
from tests.support.cli import Rigcheck
from tests.support.fakenvml import H100_BUS_IDS, burn_power_capped_h100

# The fake H100s' bus ids: GPU0 00000000:18:00.0, GPU1 00000000:2A:00.0 (the driver prints "PCI:0000:2a:00").
OLD_XID_GPU0 = "2025-02-23T16:00:00,000001+00:00 NVRM: Xid (PCI:0000:18:00): 13, pid=99, name=old, Graphics Exception"
XID_79_GPU1 = (
    "2025-02-23T16:30:00,000001+00:00 NVRM: Xid (PCI:0000:2a:00): 79, pid=1234, name=python, fallen off the bus"
)
AER_GPU0 = (
    "2025-02-23T16:30:01,000002+00:00 nvidia 0000:18:00.0: PCIe Bus Error: severity=Corrected, type=Physical Layer, "
    "(Receiver ID)"
)
FATAL_SXID = "2025-02-23T16:30:03,000004+00:00 nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 24007, Fatal, Link 04 timeout"
SXID = "2025-02-23T16:30:02,000003+00:00 nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link 04 RX Short"


class Dmesg:
    """`dmesg --time-format iso` holding ``lines``; ``during`` added once the run has read it the first time."""

    def __init__(self, *lines: str, during: tuple[str, ...] = ()) -> None:
        self.lines = list(lines)
        self.during = during
        self.reads = 0

    def __call__(self, argv: list[str]) -> tuple[int, str, str]:
        self.reads += 1
        if self.reads == 2:
            self.lines += self.during
        return 0, "\n".join(self.lines) + "\n", ""

    def reader(self) -> Callable[[], tuple[list[KernelEvent], KernelLogRead]]:
        return lambda: read_live(self)


_cpu_burn = partial(cpu_burn, minutes=0.015, size=32, preroll_s=0.2)


# --- the kernel log ------------------------------------------------------------------------------------------------
def test_new_lines_during_the_run_land_on_their_gpu_and_a_fatal_xid_fails_the_burn() -> None:
    dmesg = Dmesg(OLD_XID_GPU0, during=(XID_79_GPU1, AER_GPU0, SXID))
    run = _cpu_burn(burn_power_capped_h100(2), kernel_log=dmesg.reader())
    assert dmesg.reads == 2  # before and after the run
    gpu0, gpu1 = run.analyses
    assert [e.code for e in gpu1.kernel_events] == [79]
    assert [f.id for f in gpu1.findings] == ["xid.hardware"]
    assert gpu1.findings[0].message.startswith("new in the kernel log during the burn: GPU1 (0000:2a:00.0)")
    assert is_problem(gpu1)
    assert [e.kind for e in gpu0.kernel_events] == ["aer"]  # the old Xid 13 was there before: not counted
    assert [f.id for f in gpu0.findings] == ["xid.aer-corrected"]
    assert not is_problem(gpu0)  # a corrected AER is named, not failed
    assert run.kernel_log is not None
    assert (run.kernel_log.method, run.kernel_log.unreadable) == ("dmesg", None)
    assert [e.kind for e in run.kernel_log.other_events] == ["sxid"]  # an NVSwitch's line: on no GPU of the burn
    assert [f.id for f in run.kernel_log.findings] == ["xid.sxid"]
    assert burn_exit_code(run) == 1
    doc = json.loads(json.dumps(burn_document(run, 1).to_json_dict()))
    assert doc["gpus"][1]["kernel_events"][0]["code"] == 79
    assert doc["kernel_log"]["other_events"][0]["code"] == 12028
    text = _terminal(burn_document(run, 1))
    assert "  kernel log during the run: 1 new line: Xid 79: fallen off the bus\n" in text
    assert "kernel log during the run, on no GPU of the burn: 1 new line: SXid 12028: Non-fatal, Link 04" in text
    assert "WARN xid.sxid: new in the kernel log during the burn: NVSwitch" in text
    markdown = render(burn_document(run, 1), Format.MARKDOWN)
    assert isinstance(markdown, str)
    assert "- kernel log during the run: 1 new line: Xid 79: fallen off the bus\n" in markdown
    page = render(burn_document(run, 1), Format.HTML)
    assert isinstance(page, str)
    assert '<p class="run-check">kernel log during the run: 1 new line: Xid 79: fallen off the bus</p>' in page


def _terminal(doc: Any) -> str:
    console = Console(file=io.StringIO(), width=200, color_system=None)
    console.print(render(doc, Format.TERMINAL))
    return console.file.getvalue()  # type: ignore[attr-defined,no-any-return]


def test_a_quiet_log_gives_each_gpu_an_empty_list_and_passes() -> None:
    run = _cpu_burn(burn_power_capped_h100(1), kernel_log=Dmesg(OLD_XID_GPU0).reader())
    assert run.analyses[0].kernel_events == []
    assert burn_exit_code(run) == 0
    assert burn_document(run, 0).to_json_dict()["gpus"][0]["kernel_events"] == []
    run.kernel_log = judge_run_log(  # the same run, had an NVSwitch logged a fatal SXid meanwhile
        run.analyses, {}, read_live(Dmesg()), read_live(Dmesg(FATAL_SXID))
    )
    assert [f.id for f in run.kernel_log.findings] == ["xid.sxid-fatal"]
    assert burn_exit_code(run) == 1  # on no GPU of the burn, and still a fault of the node during the run
    assert "the kernel log shows a fault during the run on no GPU of the burn" in _terminal(burn_document(run, 1))


def _analyses(n: int) -> list[GpuBurnAnalysis]:
    return [
        GpuBurnAnalysis(
            index=i,
            loaded_s=10.0,
            power_draw_w_median_loaded=None,
            power_enforced_limit_w=None,
            temp_c_max=None,
            temp_slowdown_c=None,
            sm_clock_mhz_median_loaded=None,
            reasons_time_fraction={},
            limiter="unknown",
            verdict="",
            advice="",
        )
        for i in range(n)
    ]


def test_an_unreadable_log_leaves_the_lines_out_with_the_reason() -> None:
    refused = ([], KernelLogRead(method="dmesg", unreadable="dmesg: Operation not permitted; journalctl -k: No access"))
    analyses = _analyses(2)
    log = judge_run_log(analyses, {0: H100_BUS_IDS[0]}, ([], KernelLogRead(method="dmesg")), refused)
    assert log.unreadable is not None
    assert log.unreadable.startswith("the kernel log could not be read after the run: dmesg: Operation not permitted")
    assert all(a.kernel_events is None for a in analyses)
    dumped = analyses[0].model_dump(mode="json")
    assert "kernel_events" not in dumped  # absent, not null
    two_tools = judge_run_log(
        analyses, {}, ([], KernelLogRead(method="dmesg")), ([], KernelLogRead(method="journalctl -k"))
    )
    assert two_tools.unreadable is not None
    assert "cannot be matched" in two_tools.unreadable
    assert "interrupted" in (judge_run_log(analyses, {}, ([], KernelLogRead(method="dmesg")), None).unreadable or "")


def test_a_line_is_new_as_many_times_as_it_was_printed_again() -> None:
    twice = parse_kernel_events(f"{XID_79_GPU1}\n{XID_79_GPU1}\n")
    assert new_events(twice[:1], twice) == twice[1:]  # read once before, twice after: new once
    assert new_events(twice, twice[:1]) == []  # scrolled out of the ring buffer: nothing new


# --- the fingerprint -----------------------------------------------------------------------------------------------
def test_the_fingerprint_before_the_load_fails_the_gpu_apart_from_its_peers(monkeypatch: pytest.MonkeyPatch) -> None:
    """Three GPUs on CPU ranks (the `verify --cpu` path), the test hook flipping GPU1's first product."""
    monkeypatch.setenv(FLIP_VAR, "1")
    run = _cpu_burn(burn_power_capped_h100(3), fingerprint=True, minutes=0.005)
    assert run.fingerprint is not None
    assert run.fingerprint.error is None
    assert [(g.index, g.verdict) for g in run.fingerprint.gpus] == [(0, "pass"), (1, "fail"), (2, "pass")]
    assert run.fingerprint.gpus[1].first_difference == "gemm_fp32_1"
    failed = run.analyses[1].findings
    assert [f.id for f in failed] == ["sdc.fingerprint-mismatch"]
    assert "differs from 2 of 3 identical GPUs from step gemm_fp32_1 on" in failed[0].message
    assert not any(is_problem(a) for a in (run.analyses[0], run.analyses[2]))
    assert burn_exit_code(run) == 1
    assert run.workload.gpus[1].matmuls > 0  # the load ran after it
    text = _terminal(burn_document(run, 1))
    assert "  fingerprint before the load: pass: 8 steps equal bit for bit to those of 2 identical peers\n" in text
    assert "FAIL sdc.fingerprint-mismatch: fingerprint before the load: its result differs" in text
    assert "fingerprint before the load: fail" not in text  # said once, by the finding


def test_ctrl_c_during_the_fingerprint_ends_the_run_before_any_load() -> None:
    seen: list[str] = []

    def progress(line: str) -> None:
        seen.append(line)
        if len(seen) == 2:  # the first line after "burn: fingerprint of 2 GPU(s)": the ranks are starting
            raise KeyboardInterrupt

    run = _cpu_burn(burn_power_capped_h100(2), fingerprint=True, on_progress=progress, kernel_log=Dmesg().reader())
    assert seen[0].startswith("burn: fingerprint of 2 GPU(s)")
    assert run.interrupted
    assert run.fingerprint is not None
    assert (run.fingerprint.error or "").startswith("interrupted")
    assert {g.verdict for g in run.fingerprint.gpus} == {"incomplete"}
    assert run.workload.load_s == 0.0
    assert [g.matmuls for g in run.workload.gpus] == [0, 0]
    assert run.kernel_log is not None
    assert run.kernel_log.unreadable == "the run was interrupted before the log was read again"
    assert burn_exit_code(run) == 130


def test_the_ranks_are_the_burns_gpus_and_no_other() -> None:
    """Ranks 0..n-1 are CUDA's devices 0..n-1: the workers see only the burn's GPUs, in the burn's order."""
    assert visible_devices([0, 1, 2], {}) == {}  # already so: the whole node
    assert visible_devices([1, 3], {}) == {"CUDA_VISIBLE_DEVICES": "1,3"}
    assert visible_devices([1, 0], {}) == {"CUDA_VISIBLE_DEVICES": "1,0"}  # CUDA numbers them otherwise than NVML
    # this process sees four GPUs of eight: its ordinals 1 and 3 are the machine's 5 and 7
    assert visible_devices([1, 3], {"CUDA_VISIBLE_DEVICES": "4, 5,6,7"}) == {"CUDA_VISIBLE_DEVICES": "5,7"}


# --- the command line ---------------------------------------------------------------------------------------------
def test_no_fingerprint_is_recorded_and_the_live_kernel_log_is_read(
    rigcheck: Rigcheck, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`burn --no-fingerprint` on the fake NVML, its load on a CPU device: the document says the fingerprint was
    skipped and why, and how this machine's kernel log was read (or why it could not be)."""
    real = burn_module.run_burn
    seen: dict[str, Any] = {}

    def on_cpu(poller: Any, **kwargs: Any) -> Any:
        seen.update(kwargs)
        kwargs.update(minutes=0.01, device_for=lambda i: torch.device("cpu"), size=32, preroll_s=0.2)
        return real(poller, **kwargs)

    monkeypatch.setattr(monitor_cmd, "make_poller", lambda gpus=None: NvmlPoller(burn_power_capped_h100(1), gpus=gpus))
    monkeypatch.setattr(burn_module, "run_burn", on_cpu)
    code, out, err = rigcheck("burn", "--no-fingerprint", "--interval", "0.02", "--json")
    assert code == 0, err
    assert seen["fingerprint"] is False
    doc = json.loads(out)
    assert doc["fingerprint"] == {"method": None, "skipped": "--no-fingerprint", "error": None, "rerun": [], "gpus": []}
    log = doc["kernel_log"]
    assert (log["method"] is None) == (log["unreadable"] is not None)
    assert ("kernel_events" in doc["gpus"][0]) == (log["unreadable"] is None)

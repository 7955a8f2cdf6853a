"""`nvidia-smi nvlink -s` (rigcheck.readers.smi.nvlink_status) on the real outputs of the corpus: every GPU gets
its links with their state and speed, "all links are inactive" included."""

from __future__ import annotations

from pathlib import Path

import pytest

from rigcheck.errors import ParseError
from rigcheck.model import Missing, Snapshot
from rigcheck.readers.smi.nvlink_status import parse_nvlink_status

NVLINK = Path(__file__).parent.parent / "fixtures" / "corpus" / "nvlink"
INACTIVE = "NVML: Unable to retrieve NVLink information as all links are inActive\n"  # as nvlink/002 prints it


def _parse(name: str) -> Snapshot:
    path = NVLINK / name
    return parse_nvlink_status(path.read_text(encoding="utf-8"), str(path))


def _state(snap: Snapshot, index: int) -> list[tuple[int, bool | None, float | None]]:
    gpu = snap.gpu(index)
    assert gpu is not None
    assert gpu.nvlinks is not None, gpu.missing.get("nvlinks")
    return [(link.link, link.active, link.speed_gbps) for link in gpu.nvlinks]


def test_the_third_a6000_without_a_bridge_has_four_inactive_links() -> None:
    """ "All links are inActive": as many links as the other RTX A6000 of the output printed, none up."""
    snap = _parse("002-3xa6000-bridge-pair-third-inactive.txt")
    assert _state(snap, 0) == [(n, True, 14.062) for n in range(4)]
    assert _state(snap, 2) == [(n, False, None) for n in range(4)]
    gpu2 = snap.gpu(2)
    assert gpu2 is not None
    assert gpu2.nvlinks is not None
    assert all(link.missing["speed_gbps"] == Missing.REPORTED_NA for link in gpu2.nvlinks)
    notes = [d.message for d in snap.diagnostics if d.gpu == 2]
    assert any("all links are inActive" in m for m in notes)
    assert any("links 0-3 listed as inactive" in m for m in notes)


def test_an_sxm_a100_with_all_links_inactive_lists_its_twelve_links_down() -> None:
    """No other GPU in the output: the count is the catalog's (A100 SXM4: 12, its datasheet)."""
    snap = _parse("003-1xa100-gpu6-all-links-inactive.txt")
    assert _state(snap, 6) == [(n, False, None) for n in range(12)]
    assert any("A100 SXM4 80GB has 12" in d.message and "datasheet" in d.message for d in snap.diagnostics)


def test_v100_links_printed_inactive() -> None:
    snap = _parse("005-1xv100-gpu3-links-3-5-inactive-elided.txt")
    assert _state(snap, 3) == [
        (0, True, 25.781),
        (1, True, 25.781),
        (2, True, 25.781),
        (3, False, None),
        (4, True, 25.781),
        (5, False, None),
    ]
    gpu = snap.gpu(3)
    assert gpu is not None
    assert (gpu.uuid, gpu.missing["uuid"]) == (None, Missing.NOT_IN_SOURCE)  # "UUID: ..." is no UUID
    # the author's "...." before the header is kept as a note, not refused
    assert any("'....'" in d.message and d.gpu is None for d in snap.diagnostics)


def test_gb200_nvlink5_speed_and_an_elided_tail() -> None:
    snap = _parse("006-2xgb200-18links-53.125-fragment.txt")
    assert _state(snap, 0) == [(n, True, 53.125) for n in range(18)]
    assert _state(snap, 1) == [(0, True, 53.125), (1, True, 53.125)]
    assert any("'...'" in d.message and d.gpu == 1 for d in snap.diagnostics)


def test_h100_status_long_option() -> None:
    snap = _parse("007-2xh100-18links-26.562-status-long-option.txt")
    for index in (0, 1):
        assert _state(snap, index) == [(n, True, 26.562) for n in range(18)]
    assert snap.diagnostics == []


def test_all_inactive_on_a_gpu_without_nvlink_lists_none() -> None:
    text = "GPU 0: NVIDIA GeForce RTX 4090 (UUID: GPU-1)\n" + INACTIVE
    snap = parse_nvlink_status(text)
    assert snap.gpus[0].nvlinks == []
    assert any("GeForce RTX 4090 has 0" in d.message for d in snap.diagnostics)


def test_all_inactive_on_an_unknown_gpu_says_the_count_is_unknown() -> None:
    text = "GPU 0: NVIDIA Some Future GPU (UUID: GPU-1)\n" + INACTIVE.replace("NVML: ", "NVML:").replace(
        "NVLink", "Nvlink"
    )
    snap = parse_nvlink_status(text)
    assert snap.gpus[0].nvlinks == []
    assert any("how many links this GPU has is not known" in d.message for d in snap.diagnostics)


def test_another_nvml_error_leaves_the_state_unknown() -> None:
    text = "GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-1)\nNVML: Unknown Error\n"
    gpu = parse_nvlink_status(text).gpus[0]
    assert (gpu.nvlinks, gpu.missing["nvlinks"]) == (None, Missing.REPORTED_NA)


def test_a_link_before_any_header_is_refused() -> None:
    with pytest.raises(ParseError, match="link line before any GPU header") as info:
        parse_nvlink_status("\t Link 0: 25.781 GB/s\nGPU 0: Tesla V100 (UUID: GPU-1)\n", "n.txt")
    assert info.value.line == 1

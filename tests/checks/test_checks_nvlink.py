"""checks/doctor/nvlink.py on real `nvidia-smi nvlink -s` outputs and snapshots: links down on SXM parts fail, on a
bridged pair they warn, a bridge card without a bridge is information."""

from __future__ import annotations

from pathlib import Path

import pytest

from rigcheck.checks.doctor import run_checks
from rigcheck.checks.doctor.nvlink import check_nvlink
from rigcheck.model import Missing, NvLink, Severity, Snapshot
from rigcheck.readers.from_file import load_file
from tests.support.checkutil import ids, only, severities
from tests.support.snapshots import healthy_8x_h100, make_gpu, make_pairs, make_snapshot, make_topology, nvlinks

NVLINK = Path(__file__).parent.parent / "fixtures" / "corpus" / "nvlink"
A6000 = "NVIDIA RTX A6000"


def _load(name: str) -> Snapshot:
    return load_file(str(NVLINK / name))


def test_a100_sxm_with_every_link_inactive_fails() -> None:
    # Azure's health-check "bad" sample: GPU 6 of an A100 SXM4 node, "all links are inactive".
    found = check_nvlink(_load("003-1xa100-gpu6-all-links-inactive.txt"))
    f = only(found, "nvlink.links-down")
    assert f.severity is Severity.FAIL
    assert f.subject == "GPU6"
    assert f.message.startswith("NVIDIA A100-SXM4-80GB: 0 of 12 NVLinks active (all down)")
    assert "fabricmanager" in (f.advice or "")
    assert "Xid 74" in (f.advice or "")
    # and the doctor exits 1 on it: a broken machine never passes
    assert max(x.severity.rank for x in run_checks(_load("003-1xa100-gpu6-all-links-inactive.txt"))) == (
        Severity.FAIL.rank
    )


def test_v100_sxm_with_two_links_inactive_fails_and_names_them() -> None:
    f = only(check_nvlink(_load("005-1xv100-gpu3-links-3-5-inactive-elided.txt")), "nvlink.links-down")
    assert f.severity is Severity.FAIL
    assert f.subject == "GPU3"
    assert "4 of 6 NVLinks active (links 3, 5 down)" in f.message
    assert f.measured == "4 of 6 NVLinks active"


@pytest.mark.parametrize(
    ("name", "count", "message"),
    [
        ("001-8xv100-6links-25.781.txt", 8, "6 of 6 NVLinks active at 25.781 GB/s each"),
        ("004-1xa100-gpu7-12links-25gbs.txt", 1, "12 of 12 NVLinks active at 25 GB/s each"),
        ("007-2xh100-18links-26.562-status-long-option.txt", 2, "18 of 18 NVLinks active at 26.562 GB/s each"),
    ],
)
def test_every_link_up_is_ok(name: str, count: int, message: str) -> None:
    found = check_nvlink(_load(name))
    assert ids(found) == ["nvlink.ok"] * count
    assert all(f.message == message for f in found)


def test_a_fragment_says_which_links_it_does_not_hold() -> None:
    # nvlink/006: the second GB200 block was cut after two links by the author ("...").
    found = check_nvlink(_load("006-2xgb200-18links-53.125-fragment.txt"))
    assert severities(found, "nvlink.ok") == [Severity.OK, Severity.OK]
    second = only(found, "nvlink.ok", "GPU1")
    assert second.message.startswith("2 of 2 NVLinks active")
    assert "the GB200 has 18: the others are not in this input" in second.message


def test_third_a6000_without_a_bridge_is_information_not_a_fault() -> None:
    # nvlink/002: GPU0 and GPU1 bridged (4 links up each), GPU2 "all links are inActive": no bridge on it.
    found = check_nvlink(_load("002-3xa6000-bridge-pair-third-inactive.txt"))
    assert severities(found, "nvlink.ok") == [Severity.OK, Severity.OK]
    f = only(found, "nvlink.no-bridge")
    assert f.severity is Severity.INFO
    assert f.subject == "GPU2"
    assert f.message.startswith("NVIDIA RTX A6000: no active NVLink (0 of 4 NVLinks active)")
    assert "nvlink.links-down" not in ids(found)


def test_bridged_pair_with_a_link_down_warns() -> None:
    # The A6000 pair of nvlink/002 with link 2 of GPU1 down (as `nvlink -s` prints it: "<inactive>").
    up = nvlinks(4, version=3, speed_gbps=14.062)
    half = [*nvlinks(2, version=3, speed_gbps=14.062), *nvlinks(2, active=False)]
    half[2].link, half[3].link = 2, 3
    snap = make_snapshot([make_gpu(0, name=A6000, nvlinks=up), make_gpu(1, name=A6000, nvlinks=half)])
    f = only(check_nvlink(snap), "nvlink.links-down")
    assert f.severity is Severity.WARN
    assert f.subject == "GPU1"
    assert "2 of 4 NVLinks active (links 2, 3 down)" in f.message
    assert "2/4 of its NVLink bandwidth" in f.message
    assert "reseat" in (f.advice or "")


def test_a_bridge_card_with_every_link_down_but_an_nv_pair_in_the_matrix_warns() -> None:
    # topo -m (taken earlier) shows the bridge, NV4; the link state now shows GPU1's links all down.
    pairs = make_pairs(range(2), "NV4")
    gpus = [
        make_gpu(0, name=A6000, nvlinks=nvlinks(4, version=3, speed_gbps=14.062)),
        make_gpu(1, name=A6000, nvlinks=nvlinks(4, active=False)),
    ]
    snap = make_snapshot(gpus, pairs=pairs, topology=make_topology(pairs, 2, ["0-31"] * 2, ["0"] * 2))
    f = only(check_nvlink(snap), "nvlink.links-down")
    assert f.severity is Severity.WARN
    assert "0 of 4 NVLinks active (all down)" in f.message


def test_healthy_hgx_is_ok_and_an_h100_with_one_link_down_fails() -> None:
    assert ids(check_nvlink(healthy_8x_h100())) == ["nvlink.ok"] * 8
    snap = healthy_8x_h100()
    links = snap.gpus[5].nvlinks
    assert links is not None
    links[7] = NvLink(link=7, active=False)
    f = only(check_nvlink(snap), "nvlink.links-down")
    assert f.severity is Severity.FAIL
    assert f.subject == "GPU5"
    assert "17 of 18 NVLinks active (link 7 down)" in f.message


def test_sxm_gpus_without_link_state_are_unknown_unless_the_matrix_shows_nvlink() -> None:
    gpus = [make_gpu(i, nvlinks=None, missing={"nvlinks": Missing.NOT_IN_SOURCE}) for i in range(2)]
    f = only(check_nvlink(make_snapshot(gpus)), "nvlink.state-unknown")
    assert f.severity is Severity.UNKNOWN
    assert "GPU0 (not_in_source), GPU1 (not_in_source)" in f.message
    assert "nvidia-smi nvlink -s" in (f.advice or "")
    pairs = make_pairs(range(2), "NV18")
    with_matrix = make_snapshot(gpus, pairs=pairs, topology=make_topology(pairs, 2, ["0-51"] * 2, ["0"] * 2))
    assert check_nvlink(with_matrix) == []
    # One SXM GPU alone (a VM given one GPU of a board: h100-vm, whose nvlink -s is empty) needs no NVLink.
    assert check_nvlink(make_snapshot([make_gpu(0, nvlinks=[])])) == []


def test_a_card_without_nvlink_says_nothing() -> None:
    rtx4090 = make_gpu(0, name="NVIDIA GeForce RTX 4090", nvlinks=[])
    assert check_nvlink(make_snapshot([rtx4090, make_gpu(1, name="NVIDIA GeForce RTX 4090", nvlinks=[])])) == []


H100_PCIE = "NVIDIA H100 PCIe"
# nvidia-smi nvlink -s on two bridged H100 PCIe cards (driver 555, as posted): 18 slots, 12 at 26.562 GB/s and
# links 4, 5, 10, 11, 16, 17 "<inactive>"; the card has 12 NVLinks (facts/catalog.py).
SLOTS_DOWN = (4, 5, 10, 11, 16, 17)


def _slots(down: tuple[int, ...]) -> list[NvLink]:
    links = nvlinks(18, version=4)
    for link in links:
        if link.link in down:
            link.active, link.speed_gbps = False, None
    return links


def test_an_h100_pcie_with_its_12_links_up_of_18_slots_is_ok() -> None:
    """It warned "12 of 18 NVLinks active ... runs at 12/18 of its NVLink bandwidth" and advised a reseat."""
    snap = make_snapshot([make_gpu(i, name=H100_PCIE, nvlinks=_slots(SLOTS_DOWN)) for i in range(2)])
    findings = check_nvlink(snap)
    assert {f.severity for f in findings} == {Severity.OK}
    assert len(findings) == 2
    ok = only(findings, "nvlink.ok", "GPU0")
    assert ok.measured == "12 of 12 NVLinks active"
    assert "nvidia-smi lists 18 slots; the H100 PCIe has 12 links" in ok.message


def test_an_h100_pcie_bridge_with_links_down_counts_against_its_12() -> None:
    snap = make_snapshot(
        [
            make_gpu(0, name=H100_PCIE, nvlinks=_slots(SLOTS_DOWN)),
            make_gpu(1, name=H100_PCIE, nvlinks=_slots((*SLOTS_DOWN, 0, 1, 2, 3))),
        ]
    )
    f = only(check_nvlink(snap), "nvlink.links-down")
    assert f.severity is Severity.WARN
    assert f.subject == "GPU1"
    assert f.measured == "8 of 12 NVLinks active"
    assert "8/12 of its NVLink bandwidth" in f.message


def test_nvlink_status_pasted_with_an_indent_is_read(tmp_path: Path) -> None:
    """Pasted into a post as a code block, every line indented: it was "not a recognised input"."""
    lines = [f"GPU {g}: {H100_PCIE} (UUID: GPU-6968dfc2-d444-d92c-c36b-6abe53445cb{g})" for g in range(2)]
    body = [f"         Link {n}: {'<inactive>' if n in SLOTS_DOWN else '26.562 GB/s'}" for n in range(18)]
    text = "\n".join(f"      {line}" for g in lines for line in (g, *body)) + "\n"
    path = tmp_path / "nvlink-s.txt"
    path.write_text(text, encoding="utf-8")
    snap = load_file(str(path))
    assert [(g.index, g.name) for g in snap.gpus] == [(0, H100_PCIE), (1, H100_PCIE)]
    assert [sum(1 for link in g.nvlinks or [] if link.active) for g in snap.gpus] == [12, 12]
    assert severities(run_checks(snap), "nvlink.ok") == [Severity.OK, Severity.OK]

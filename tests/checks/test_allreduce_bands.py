"""All-reduce bands per condition (facts/allreduce_bands.py) on real nccl-tests outputs: NVLS on and off, the
message size, an 8-GPU SXM board as NVSwitch, PCIe boxes, and runs across hosts against the NICs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rigcheck.checks.verify.bands import explain_bands, node_allreduce_fact
from rigcheck.errors import UsageError
from rigcheck.facts import allreduce_bands as ab
from rigcheck.facts.catalog import lookup
from rigcheck.model.bench import CollectiveDocument
from rigcheck.readers.reference.nccl_tests import parse_nccl_tests
from rigcheck.readers.reference.nccl_tests_doc import collective_document, parse_link
from tests.support.cli import Rigcheck

HERE = Path(__file__).parent.parent / "fixtures"
BANDS = HERE / "allreduce-bands"
H100_NVLS = BANDS / "8xh100-nvls-dgxc-recipe.txt"
H200_NVLS = BANDS / "8xh200-nvls-8g-azure.txt"
A100_8 = HERE / "nccl-tests-extra" / "old-allreduce-8xa100-c0.log"
TWO_HOSTS = HERE / "nccl-tests-extra" / "new-allreduce-16xh100-2hosts-markdown.txt"
PCIE_2080TI = HERE / "corpus" / "nccl-tests" / "001-2x2080ti-allreduce-pcie-no-p2p.txt"


def _doc(text: str, *, gpu: str | None = None, nics: str | None = None) -> CollectiveDocument:
    return collective_document(
        parse_nccl_tests(text), op="allreduce", path="x", choice=parse_link(None, None, gpu, nics)
    )


def _verdict(doc: CollectiveDocument) -> tuple[str, float | None, str]:
    assert doc.judgement is not None
    return doc.judgement.verdict, doc.judgement.band_floor_gbps, doc.judgement.reason


def _scaled(path: Path, factor: float, *, extra: str = "", drop_over: int | None = None) -> str:
    """**Synthetic**: a real output with every row's time divided and bandwidths multiplied by ``factor`` (a
    slower or faster machine of the same shape), rows over ``drop_over`` bytes left out, ``extra`` lines put
    before the table. Used where no real output of that condition was found (tests/fixtures/allreduce-bands)."""
    out: list[str] = []
    for raw in path.read_text().splitlines():
        cells, line = raw.split(), raw
        if len(cells) >= 13 and cells[0].isdigit() and cells[1].isdigit():
            if drop_over is not None and int(cells[0]) > drop_over:
                continue
            for i in (5, 9):
                cells[i] = f"{float(cells[i]) / factor:.1f}"
            for i in (6, 7, 10, 11):
                cells[i] = f"{float(cells[i]) * factor:.2f}"
            line = "  ".join(cells)
        elif raw.startswith("#  Rank  7") and extra:
            line = f"{raw}\n{extra}"
        out.append(line)
    return "\n".join(out) + "\n"


# --- 8x H100 / H200 on NVSwitch: NVLS on or off ----------------------------------------------------------------


def test_healthy_8xh100_with_nvls_passes_naming_nvls_on_and_its_margin() -> None:
    verdict, floor, reason = _verdict(_doc(H100_NVLS.read_text()))
    assert (verdict, floor) == ("pass", 400.0)
    assert "busbw 479.9 GB/s at 16 GiB, floor 400 (NVLS on, >= 1 GiB" in reason
    assert "only NVLS passes it" in reason  # no INFO lines: the figure's shape says NVLS
    assert "20% above" in reason


def test_healthy_8xh200_at_8_gib_passes() -> None:
    verdict, floor, reason = _verdict(_doc(H200_NVLS.read_text()))
    assert (verdict, floor) == ("pass", 400.0)
    assert "476.72 GB/s at 8 GiB" in reason
    assert "NVLS on" in reason


def test_healthy_8xh100_without_nvls_passes_the_nvls_off_floor() -> None:
    # Synthetic: the DGX sweep at 367/480 of its figures (NVLS off peaks ~367 GB/s, ml-engineering's 16 GiB
    # figure), with NCCL's line saying NVLS was turned off. The old 460 floor failed such a node.
    text = _scaled(H100_NVLS, 367.2 / 479.9, extra="host:1:1 [0] NCCL INFO NCCL_NVLS_ENABLE set by environment to 0.")
    verdict, floor, reason = _verdict(_doc(text))
    assert (verdict, floor) == ("pass", 300.0)
    assert "floor 300 (NVLS off, >= 1 GiB; NCCL_NVLS_ENABLE=0;" in reason


def test_nvls_on_but_at_ring_speed_fails_where_nvls_unknown_would_pass() -> None:
    slow = 380.0 / 479.9  # synthetic: a node whose NVLS all-reduce runs at ring speed
    on = _scaled(H100_NVLS, slow, extra="host:1:1 [0] NCCL INFO NVLS multicast support is available on dev 0")
    verdict, floor, reason = _verdict(_doc(on))
    assert (verdict, floor) == ("fail", 400.0)
    assert "NVLS multicast support is available" in reason
    assert "5% below" in reason
    unknown = _verdict(_doc(_scaled(H100_NVLS, slow)))
    assert unknown[:2] == ("pass", 300.0)
    assert "NVLS unknown, the NVLS-off floor" in unknown[2]


def test_a_run_of_small_sizes_is_not_judged_and_says_why() -> None:
    text = _scaled(H100_NVLS, 1.0, drop_over=128 << 20)
    verdict, floor, reason = _verdict(_doc(text))
    assert (verdict, floor) == ("unjudged", None)
    assert "128 MiB" in reason
    assert "256 MiB" in reason
    assert "-e 8G" in reason


def test_the_size_tier_under_1_gib_has_its_own_floor() -> None:
    verdict, floor, reason = _verdict(_doc(_scaled(H100_NVLS, 1.0, drop_over=512 << 20)))
    assert (verdict, floor) == ("pass", 370.0)
    assert "at 512 MiB" in reason
    assert ">= 256 MiB" in reason


@pytest.mark.parametrize(
    ("env", "shown", "state"),
    [
        ({"NCCL_NVLS_ENABLE": "0"}, (True, 16, "2.21.5", 470.0), False),
        ({"NCCL_ALGO": "Ring"}, (True, None, "2.21.5", None), False),
        ({"NCCL_ALGO": "^Tree"}, (True, None, "2.21.5", None), True),
        ({}, (False, None, "2.21.5", None), False),
        ({}, (None, None, "2.16.5", 470.0), False),
        ({}, (None, 16, "2.18.3", None), True),
        ({}, (None, None, None, 450.0), True),
        ({}, (None, None, "2.21.5", 360.0), None),
    ],
)
def test_nvls_state_from_what_a_run_shows(
    env: dict[str, str], shown: tuple[bool | None, int | None, str | None, float | None], state: bool | None
) -> None:
    support, channels, version, busbw = shown
    found, why = ab.nvls_state(
        env=env, support=support, channels=channels, nccl_version=version, busbw=busbw, ring_max=ab.HOPPER_RING_MAX
    )
    assert found is state
    assert why


def test_the_probe_reads_nvls_lines_and_the_environment() -> None:
    text = _scaled(
        H100_NVLS,
        1.0,
        extra="h:1:2 [3] NCCL INFO NVLS multicast support is not available on dev 3\n"
        "h:1:2 [0] NCCL INFO NVLS multicast support is available on dev 0\n"
        "h:1:2 [0] NCCL INFO 16 coll channels, 16 nvls channels, 16 p2p channels\n"
        "mpirun -x NCCL_ALGO=NVLS ./all_reduce_perf",
    )
    run_ = parse_nccl_tests(text)
    assert run_.nvls_support is False  # one device without multicast turns NVLS off for the communicator
    assert run_.nvls_channels == 16
    assert run_.env == {"NCCL_ALGO": "NVLS"}


def test_every_floor_sits_under_its_lowest_published_healthy_figure() -> None:
    for tier in (*ab.HOPPER_NVLS_ON, *ab.HOPPER_NVLS_OFF, *ab.A100_TIERS):
        assert tier.floor < tier.lowest_healthy
        assert tier.margin >= ab.CLOSE, tier.evidence
    assert ab.NETWORK_FRACTION < ab.NETWORK_LOWEST_FRACTION
    assert ab.PCIE_FRACTION < ab.PCIE_LOWEST_FRACTION
    assert ab.Condition(415.0, "x", "s", 430.0).close
    assert not ab.Condition(400.0, "x", "s", 430.0).close


# --- 8 SXM A100: an NVSwitch board -----------------------------------------------------------------------------


def test_8xa100_sxm4_with_no_machine_description_is_judged_as_nvswitch() -> None:
    verdict, floor, reason = _verdict(_doc(A100_8.read_text()))
    assert (verdict, floor) == ("pass", 180.0)
    assert "235.26 GB/s at 8 GiB" in reason
    assert "ring (A100 has no NVLS)" in reason
    assert "no public figure" not in reason
    assert "8 A100 SXM4 40GB (an 8-GPU SXM board is NVSwitch)" in reason  # the rule that judged it, said


def test_nvswitch_board_is_8_sxm_gpus_of_ampere_or_later() -> None:
    assert ab.is_nvswitch_board("Ampere", "sxm", 8)
    assert ab.is_nvswitch_board("Hopper", "sxm", 8)
    assert not ab.is_nvswitch_board("Hopper", "sxm", 4)  # HGX 4-GPU: GPUs joined directly
    assert not ab.is_nvswitch_board("Volta", "sxm", 8)  # DGX-1: hybrid cube mesh
    assert not ab.is_nvswitch_board("Ada Lovelace", "pcie", 8)


def test_verify_holds_its_own_all_reduce_to_the_condition_band() -> None:
    spec = lookup("H100 SXM5")
    assert spec is not None
    fact, why = node_allreduce_fact(spec, ranks=8, size=8 << 30, busbw=367.0, nccl="2.21.5")
    assert fact is not None
    assert fact.expected_min == 300.0
    assert "NVLS unknown" in fact.basis
    assert not why
    fact, _ = node_allreduce_fact(spec, ranks=8, size=8 << 30, busbw=470.0, nccl="2.21.5")
    assert fact is not None
    assert fact.expected_min == 400.0
    fact, why = node_allreduce_fact(spec, ranks=8, size=64 << 20, busbw=300.0, nccl="2.21.5")
    assert fact is None
    assert "64 MiB" in why


# --- PCIe boxes --------------------------------------------------------------------------------------------------


def test_a_pcie_pair_without_p2p_is_judged_against_its_link() -> None:
    verdict, floor, reason = _verdict(_doc(PCIE_2080TI.read_text()))
    assert (verdict, floor) == ("pass", 3.15)
    assert "over PCIe, Gen3 x16 as built" in reason
    assert "27% above" in reason


# --- across hosts: the NICs ------------------------------------------------------------------------------------


def test_two_hosts_are_judged_against_the_nics_given() -> None:
    verdict, floor, reason = _verdict(_doc(TWO_HOSTS.read_text(), nics="8x400"))
    assert (verdict, floor) == ("pass", 160.0)
    assert "8x400 Gb/s NICs = 400 GB/s" in reason
    assert "--nics" in reason


def test_two_hosts_at_6_gbps_on_8x400g_fail_on_the_command_line(rigcheck: Rigcheck, tmp_path: Path) -> None:
    # Synthetic: the real 2-host run slowed to 6 GB/s at its largest size (a socket fallback's figure).
    slow = tmp_path / "slow.txt"
    slow.write_text(_scaled(TWO_HOSTS, 6.0 / 338.82))
    code, out, err = rigcheck("bench", "allreduce", "--from", str(slow), "--nics", "8x400", "--json")
    assert code == 1, err
    judgement = json.loads(out)["judgement"]
    assert (judgement["verdict"], judgement["band_floor_gbps"]) == ("fail", 160.0)
    assert "busbw 6 GB/s at 8 GiB" in judgement["reason"]
    assert "96% below" in judgement["reason"]


def test_no_nic_known_uses_the_stated_default() -> None:
    # 8x H100 nodes: the smallest published fabric of the class (4x200G), said in the verdict.
    verdict, floor, reason = _verdict(_doc(TWO_HOSTS.read_text()))
    assert (verdict, floor) == ("pass", 40.0)
    assert "NICs not given, assumed the smallest published fabric for 8x H100/H200 nodes, 4x200 Gb/s" in reason


@pytest.mark.parametrize(
    ("text", "nics"),
    [("8x400", (8, 400.0)), ("8×400G", (8, 400.0)), ("2x200Gb/s", (2, 200.0)), ("4 x 100gbps", (4, 100.0))],
)
def test_nics_option_forms(text: str, nics: tuple[int, float]) -> None:
    assert ab.parse_nics(text) == nics


@pytest.mark.parametrize("text", ["400", "0x400", "8x", "eightx400", "8x-1"])
def test_bad_nics_are_refused(text: str) -> None:
    assert ab.parse_nics(text) is None
    with pytest.raises(UsageError, match="--nics"):
        parse_link(None, None, None, text)


def test_verify_explain_lists_each_condition_with_its_margin() -> None:
    doc = explain_bands(["H100 SXM5"], None, None)
    (note,) = [n for n in doc.notes if n.startswith("allreduce:")]
    assert "NVLS on >= 1 GiB floor 400 GB/s, lowest published healthy 430, margin 7%" in note
    assert "NVLS off or not shown >= 1 GiB floor 300 GB/s, lowest published healthy 330, margin 9%" in note
    assert "40% of the NICs' aggregate" in note
    assert "CLOSE" not in note  # no floor sits within 5% of its lowest healthy figure today
    (band,) = [b for b in doc.gpus[0].bands if b.check == "allreduce"]
    assert band.expected_min == 400.0
    assert "NVLS on" in band.basis


def test_more_ranks_than_an_hgx_board_holds_are_judged_across_nodes() -> None:
    # Synthetic: the DGX sweep without its rank lines and with 16 ranks' busbw/algbw ratio (2 x 15/16 = 1.875)
    # stands for a two-node run whose excerpt names no host; an 8-GPU SXM board cannot hold 16 H100s.
    rows = [line for line in _scaled(H100_NVLS, 1.0).splitlines() if "Rank" not in line]
    text = "\n".join(
        line.replace(cells[7], f"{float(cells[6]) * 1.875:.2f}", 1)
        if len(cells := line.split()) >= 13 and cells[0].isdigit()
        else line
        for line in rows
    )
    doc = _doc(text, gpu="H100 SXM5", nics="8x400")
    assert doc.world_size == 16
    verdict, floor, reason = _verdict(doc)
    assert (verdict, floor) == ("pass", 160.0)
    assert "16 ranks of H100 SXM5, more than one 8-GPU board holds" in reason


def test_an_nccl_log_given_beside_the_output_says_nvls_was_off(rigcheck: Rigcheck, tmp_path: Path) -> None:
    # Synthetic: the DGX sweep at ring speed (367 GB/s at 16 GiB) and, as a second --from, two INFO lines in
    # NCCL's own wording (an NCCL_DEBUG=INFO log of the run, taken apart from the output).
    measured, log = tmp_path / "allreduce.txt", tmp_path / "nccl.log"
    measured.write_text(_scaled(H100_NVLS, 367.2 / 479.9))
    log.write_text(
        "node:1:1 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n"
        "node:1:9 [0] NCCL INFO NVLS multicast support is not available on dev 0\n"
    )
    code, out, err = rigcheck("bench", "allreduce", "--from", str(measured), "--from", str(log), "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["versions"]["nccl"] == "2.21.5+cuda12.4"
    assert "floor 300 (NVLS off, >= 1 GiB; NCCL: NVLS multicast support is not available;" in doc["judgement"]["reason"]
    assert any("read as the run's NCCL log" in n for n in doc["notes"])

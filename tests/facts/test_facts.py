"""Static facts: connectors, PCIe, NVLink and the GPU catalog (lookup over every name in the corpus)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from rigcheck.facts import catalog, connectors, nvlink, pcie

CORPUS = Path(__file__).parent.parent / "fixtures" / "corpus"


# --- connectors --------------------------------------------------------------------------------------------
def test_connector_ratings_match_the_guide() -> None:
    assert connectors.CONNECTORS["slot"].watts == 75
    assert connectors.CONNECTORS["6-pin"].watts == 75
    assert connectors.CONNECTORS["8-pin"].watts == 150
    assert connectors.CONNECTORS["12VHPWR"].watts == 600
    assert connectors.CONNECTORS["12V-2x6"].watts == 600
    assert connectors.CONNECTORS["12-pin"].watts is None  # NVIDIA published no rating
    assert connectors.PIGTAIL_CABLE_W == 150
    assert "one cable" in connectors.PIGTAIL_RULE.lower()


def test_every_connector_names_a_source() -> None:
    for c in connectors.CONNECTORS.values():
        assert c.source.strip(), c.kind


def test_rated_watts() -> None:
    assert connectors.rated_watts((("8-pin", 2),)) == 375
    assert connectors.rated_watts((("8-pin", 2),), include_slot=False) == 300
    assert connectors.rated_watts((("8-pin", 1), ("6-pin", 1))) == 300
    assert connectors.rated_watts((("12-pin", 1),)) is None
    assert connectors.rated_watts((("no-such", 1),)) is None


# --- PCIe --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("gen", "width", "expected"),
    [
        (1, 16, 4.0),
        (2, 16, 8.0),
        (3, 16, 15.754),
        (4, 16, 31.508),
        (5, 16, 63.015),
        (6, 16, 128.0),
        (3, 4, 3.938),
        (4, 1, 1.969),
    ],
)
def test_pcie_bandwidth_hand_worked(gen: int, width: int, expected: float) -> None:
    got = pcie.pcie_bandwidth_gbps(gen, width)
    assert got == pytest.approx(expected, abs=1e-3)


def test_pcie_unknown_gen_or_width_is_none() -> None:
    assert pcie.pcie_bandwidth_gbps(7, 16) is None
    assert pcie.pcie_bandwidth_gbps(0, 16) is None
    assert pcie.pcie_bandwidth_gbps(4, 3) is None
    assert pcie.pcie_bandwidth_gbps(4, 0) is None


def test_pcie_encodings() -> None:
    assert pcie.PCIE_GENERATIONS[2].encoding == "8b/10b"
    assert pcie.PCIE_GENERATIONS[3].encoding == "128b/130b"
    assert pcie.PCIE_GENERATIONS[6].encoding.startswith("1b/1b")
    assert [g.transfer_rate_gts for g in pcie.PCIE_GENERATIONS.values()] == [2.5, 5, 8, 16, 32, 64]


# --- NVLink ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("who", "links", "expected"),
    [
        ("GA102", 4, 56.25),  # the guide's quote of the GA102 whitepaper
        ("NVIDIA GeForce RTX 3090", 4, 56.25),
        ("NVIDIA RTX A6000", 4, 56.25),  # nvlink/002: 4 links of 14.062 GB/s
        ("TITAN RTX", 2, 50.0),  # the guide's NV2
        ("Turing", 2, 50.0),
        ("Tesla V100-SXM2-32GB", 6, 150.0),
        ("Volta", 1, 25.0),
        ("NVIDIA A100-SXM4-80GB", 12, 300.0),
        ("NVIDIA H100 80GB HBM3", 18, 450.0),
        ("Hopper", 18, 450.0),
        ("Pascal", 4, 80.0),
        ("B200", 18, 900.0),
        ("Blackwell", 18, 900.0),
    ],
)
def test_nvlink_pair_bandwidth(who: str, links: int, expected: float) -> None:
    assert nvlink.nvlink_pair_bandwidth_gbps(who, links) == pytest.approx(expected)


def test_nvlink_unknown_or_absent_is_none() -> None:
    assert nvlink.nvlink_pair_bandwidth_gbps("Ampere", 4) is None  # GA100 and GA102 differ
    assert nvlink.nvlink_pair_bandwidth_gbps("NVIDIA GeForce RTX 4090", 2) is None  # no NVLink
    assert nvlink.nvlink_pair_bandwidth_gbps("not a gpu", 2) is None
    assert nvlink.nvlink_pair_bandwidth_gbps("", 2) is None
    with pytest.raises(ValueError, match="links"):
        nvlink.nvlink_pair_bandwidth_gbps("GA102", -1)


def test_nvlink_flagship_totals() -> None:
    by_gen = {(v.generation, v.chips[0]): v for v in nvlink.NVLINK_VARIANTS}
    assert by_gen[(4, "GH100")].max_gbps == 450
    assert by_gen[(3, "GA100")].max_gbps == 300
    assert by_gen[(3, "GA102")].max_gbps == 56.25
    assert by_gen[(2, "GV100")].max_gbps == 150
    assert by_gen[(5, "GB100")].max_gbps == 900


# --- catalog -----------------------------------------------------------------------------------------------
def test_catalog_size_and_required_families() -> None:
    names = set(catalog.all_names())
    assert len(names) >= 40
    for must in ("TITAN RTX", "GeForce RTX 4090", "H100 SXM5", "A100 SXM4 80GB", "RTX 6000 Ada Generation", "B200"):
        assert must in names


def test_catalog_entries_are_sane() -> None:
    for g in catalog.GPUS:
        assert g.source.strip(), g.name
        assert g.memory_gib > 0, g.name
        assert g.board_power_w is None or 30 <= g.board_power_w <= 1200, g.name
        if g.form_factor in ("sxm", "superchip"):
            assert g.power_sockets == (), f"{g.name}: SXM parts have no PCIe sockets"
        for kind, n in g.power_sockets:
            assert kind in connectors.CONNECTORS, (g.name, kind)
            assert n >= 1
        assert (g.nvlink_links == 0) == (g.nvlink_generation == 0), g.name
        if g.nvlink_generation:
            assert nvlink.variant_for_chip(g.chip) is not None, g.name
            assert nvlink.variant_for_chip(g.chip).generation == g.nvlink_generation  # type: ignore[union-attr]
        if g.architecture in ("Kepler", "Pascal", "Volta", "Turing"):
            assert g.bf16_tflops is None, f"{g.name}: no BF16 before Ampere"
            assert g.tf32_tflops is None, f"{g.name}: no TF32 before Ampere"
        for t in (g.bf16_tflops, g.fp16_tflops, g.tf32_tflops):
            assert t is None or t > 0
        if g.tf32_tflops is not None and g.fp16_tflops is not None:
            assert g.tf32_tflops < g.fp16_tflops, g.name


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("TITAN RTX", "TITAN RTX"),
        ("NVIDIA TITAN RTX", "TITAN RTX"),
        ("titan rtx", "TITAN RTX"),
        ("NVIDIA GeForce RTX 4090", "GeForce RTX 4090"),
        ("RTX 4090", "GeForce RTX 4090"),
        ("GeForce GTX 1080 Ti", "GeForce GTX 1080 Ti"),
        ("NVIDIA H100 80GB HBM3", "H100 SXM5"),
        ("Tesla V100-SXM2-32GB", "Tesla V100 SXM2 32GB"),
        ("NVIDIA A100-SXM4-80GB", "A100 SXM4 80GB"),
        ("NVIDIA A100 80GB PCIe", "A100 PCIe 80GB"),
        ("NVIDIA RTX 6000 Ada Gene...", "RTX 6000 Ada Generation"),
        ("NVIDIA RTX 6000 Ada Generation", "RTX 6000 Ada Generation"),
        ("Quadro RTX 6000", "Quadro RTX 6000"),
        ("GeForce GTX 108...", "GeForce GTX 1080 Ti"),
        ("NVIDIA GeForce RTX 3090", "GeForce RTX 3090"),
        ("NVIDIA GeForce RTX 3090 Ti", "GeForce RTX 3090 Ti"),
    ],
)
def test_lookup(name: str, expected: str) -> None:
    spec = catalog.lookup(name)
    assert spec is not None, name
    assert spec.name == expected


@pytest.mark.parametrize(
    "name",
    [
        "RTX 6000",  # Quadro RTX 6000 / RTX 6000 Ada / RTX PRO 6000
        "NVIDIA RTX PRO 6000 Blac...",  # Workstation and Max-Q
        "NVIDIA GeForce RTX 3090...",  # 3090 and 3090 Ti
        "Tesla V100-SXM2...",  # 16 GB and 32 GB
        "A100",
        "RTX 5060",  # not the 5060 Ti
        "NVIDIA A10G",  # not the A10
        "NVIDIA Graphics Device",  # what some drivers print for GB200 (nccl-tests/004)
        "...",
        "",
    ],
)
def test_lookup_ambiguous_or_unknown_is_none(name: str) -> None:
    assert catalog.lookup(name) is None


def test_candidates_for_ambiguous_rtx_6000() -> None:
    found = catalog.candidates("RTX 6000")
    assert "Quadro RTX 6000" in found
    assert "RTX 6000 Ada Generation" in found


def _corpus_gpu_names() -> set[str]:
    names: set[str] = set()
    manifest = json.loads((CORPUS / "manifest.json").read_text())

    def walk(obj: object) -> None:
        if isinstance(obj, dict):
            for k, v in obj.items():
                if k in ("name", "product_name") and isinstance(v, str):
                    names.add(v)
                walk(v)
        elif isinstance(obj, list):
            for v in obj:
                walk(v)

    # Kernel-log facts name processes (an Xid line's `name=python3`), not GPUs.
    walk([e for e in manifest if e.get("kind") not in ("kernel-log",)])
    for path in (CORPUS / "smi-xml").glob("*.xml"):
        names.update(re.findall(r"<product_name>([^<]+)</product_name>", path.read_text()))
    for path in [*(CORPUS / "nvlink").glob("*.txt"), CORPUS / "h100-vm" / "q.txt"]:
        text = path.read_text()
        names.update(re.findall(r"^GPU \d+: (.+?) \(UUID", text, flags=re.M))
        names.update(re.findall(r"Product Name\s+: (.+?)\s*$", text, flags=re.M))
    for path in (CORPUS / "smi").glob("*.txt"):
        # the table row: "|   0  NVIDIA TITAN V      On   | ..." (name column ends before Persistence-M On/Off)
        names.update(
            m.strip() for m in re.findall(r"^\|\s+\d+\s+(.+?)\s+(?:On|Off)\s+\|", path.read_text(), flags=re.M)
        )
    return names


# "NVIDIA Graphics Device" is a GB200 that the driver did not name: nothing can be looked up from it.
UNNAMEABLE = {"NVIDIA Graphics Device"}


def test_corpus_names_are_collected() -> None:
    names = _corpus_gpu_names()
    # names seen in the corpus files themselves, not only in the manifest
    for must in (
        "NVIDIA RTX 6000 Ada Gene...",
        "Tesla K20m",
        "Tesla T4",
        "NVIDIA H100 80GB HBM3",
        "Tesla V100-SXM2-32GB",
    ):
        assert must in names
    assert len(names) >= 12


def test_every_corpus_gpu_name_is_in_the_catalog() -> None:
    missing = sorted(n for n in _corpus_gpu_names() - UNNAMEABLE if catalog.lookup(n) is None)
    assert missing == []
    assert catalog.lookup("NVIDIA Graphics Device") is None


def test_corpus_names_resolve_to_the_right_parts() -> None:
    want = {
        "NVIDIA RTX 6000 Ada Gene...": ("RTX 6000 Ada Generation", 300),
        "NVIDIA GeForce RTX 2080 Ti": ("GeForce RTX 2080 Ti", 250),  # smi/002 prints 250W
        "NVIDIA H100 80GB HBM3": ("H100 SXM5", 700),  # smi/003 prints 700W
        "Tesla K20m": ("Tesla K20m", 225),  # smi/004 prints 225W
        "NVIDIA TITAN V": ("TITAN V", 250),  # smi/005 prints 250W
        "Tesla T4": ("Tesla T4", 70),  # smi-xml/001: 70.00 W
        "NVIDIA RTX A5000": ("RTX A5000", 230),  # smi-xml/005: 230.00 W
        "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition": (
            "RTX PRO 6000 Blackwell Max-Q Workstation Edition",
            300,
        ),
    }
    for name, (canonical, watts) in want.items():
        spec = catalog.lookup(name)
        assert spec is not None, name
        assert (spec.name, spec.board_power_w) == (canonical, watts)

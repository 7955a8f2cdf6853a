"""The VBIOS version from each saved nvidia-smi output: -q text, -q -x XML, and the table (which lacks it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rigcheck.model import Missing
from rigcheck.readers.from_file import load_file
from rigcheck.readers.smi.query_text import parse_query_text
from rigcheck.readers.smi.query_xml import parse_query_xml

CORPUS = Path(__file__).parent.parent / "fixtures" / "corpus"


@pytest.mark.parametrize(
    ("path", "versions"),
    [
        ("smi-q/001-1xh100-545-full-event-reasons-tlimit.txt", ["96.00.74.00.0D"]),
        ("h100-vm/q.txt", ["96.00.DA.00.0C"]),
        ("h100-vm/q.xml", ["96.00.DA.00.0C"]),
        ("smi-xml/001-tesla-t4-515-v11.xml", ["90.04.84.00.06"]),
        ("smi-xml/004-rtx3080-windows-wddm-536-v12.xml", ["94.02.71.40.72"]),
        ("smi-xml/005-2xa5000-590-v13.xml", ["94.02.6D.00.0D", "94.02.6D.00.0D"]),
        ("smi-xml/006-rtxpro6000-blackwell-maxq-590-v13.xml", ["98.02.6A.00.03"]),
    ],
)
def test_corpus_outputs_give_their_vbios_version(path: str, versions: list[str]) -> None:
    snap = load_file(str(CORPUS / path))
    assert [g.vbios_version for g in snap.gpus] == versions
    assert all("vbios_version" not in g.missing for g in snap.gpus)


@pytest.mark.parametrize(
    "path",
    ["smi/003-1xh100-545.txt", "smi-q/003-1gpu-340-temperature-only.txt", "h100-vm/topo-m.txt"],
)
def test_an_output_without_the_field_says_not_in_source(path: str) -> None:
    """The table and topo -m never print it; a `-q -d TEMPERATURE` output leaves it out."""
    for gpu in load_file(str(CORPUS / path)).gpus:
        assert gpu.vbios_version is None
        assert gpu.missing["vbios_version"] is Missing.NOT_IN_SOURCE


def _q(vbios_line: str) -> str:
    return f"GPU 00000000:01:00.0\n    Product Name : NVIDIA A40\n{vbios_line}\n    Persistence Mode : Enabled\n"


@pytest.mark.parametrize(
    "line",
    [
        "    VBIOS Version                         : 94.02.5C.00.02",
        "\tVBIOS Version\t:\t94.02.5C.00.02   ",
        "    VBIOS  version:94.02.5C.00.02",
    ],
)
def test_q_line_read_whatever_its_spacing(line: str) -> None:
    assert parse_query_text(_q(line)).gpus[0].vbios_version == "94.02.5C.00.02"


@pytest.mark.parametrize("line", ["    VBIOS Version : N/A", "    VBIOS Version : [N/A]", "    VBIOS Version :"])
def test_q_na_or_empty_is_reported_na(line: str) -> None:
    gpu = parse_query_text(_q(line)).gpus[0]
    assert gpu.vbios_version is None
    assert gpu.missing["vbios_version"] is Missing.REPORTED_NA


def test_q_crlf_file(tmp_path: Path) -> None:
    """A -q saved on Windows (CRLF line ends) gives the version without a trailing carriage return."""
    path = tmp_path / "q-windows.txt"
    text = (CORPUS / "smi-q/001-1xh100-545-full-event-reasons-tlimit.txt").read_text(encoding="utf-8")
    path.write_bytes(text.replace("\n", "\r\n").encode())
    assert load_file(str(path)).gpus[0].vbios_version == "96.00.74.00.0D"


def test_q_cut_inside_the_version_is_truncated_not_a_shorter_version() -> None:
    text = "GPU 00000000:01:00.0\n    Product Name : NVIDIA A40\n    VBIOS Version : 94.02.5"
    gpu = parse_query_text(text).gpus[0]
    assert gpu.vbios_version is None
    assert gpu.missing["vbios_version"] is Missing.TRUNCATED


def _xml(element: str) -> str:
    return (
        '<?xml version="1.0" ?>\n<nvidia_smi_log>\n<driver_version>550.54.15</driver_version>\n'
        f'<gpu id="00000000:01:00.0">\n<product_name>NVIDIA A40</product_name>\n{element}\n'
        "<persistence_mode>Enabled</persistence_mode>\n</gpu>\n</nvidia_smi_log>\n"
    )


def test_xml_element_read_with_spaces_around_it() -> None:
    gpu = parse_query_xml(_xml("<vbios_version>\n\t 94.02.5C.00.02 \n</vbios_version>")).gpus[0]
    assert gpu.vbios_version == "94.02.5C.00.02"


@pytest.mark.parametrize(
    "element", ["<vbios_version>N/A</vbios_version>", "<vbios_version></vbios_version>", "<vbios_version/>"]
)
def test_xml_na_or_empty_is_reported_na(element: str) -> None:
    gpu = parse_query_xml(_xml(element)).gpus[0]
    assert gpu.vbios_version is None
    assert gpu.missing["vbios_version"] is Missing.REPORTED_NA


def test_xml_without_the_element_is_not_in_source() -> None:
    gpu = parse_query_xml(_xml("")).gpus[0]
    assert gpu.missing["vbios_version"] is Missing.NOT_IN_SOURCE


def test_xml_cut_inside_the_element_is_truncated() -> None:
    text = _xml("<vbios_version>94.02.5C").split("\n<persistence_mode>")[0]
    gpu = parse_query_xml(text).gpus[0]
    assert gpu.vbios_version is None
    assert gpu.missing["vbios_version"] is Missing.TRUNCATED

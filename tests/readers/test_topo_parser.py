"""`nvidia-smi topo -m` parser: every corpus file fact by fact, variants, bad input, round trips."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rigcheck.errors import ParseError
from rigcheck.model import GpuPair, TopoGpu, TopoMatrix
from rigcheck.readers.smi.topo import pairs_from_topology, parse_topo

FIXTURES = Path(__file__).parent.parent / "fixtures"
CORPUS = FIXTURES / "corpus"
BAD = FIXTURES / "topo-bad"

_MANIFEST: list[dict[str, Any]] = json.loads((CORPUS / "manifest.json").read_text(encoding="utf-8"))
TOPO_ENTRIES = [e for e in _MANIFEST if e["kind"] == "topo"]

# The one-GPU VM capture is not in manifest.json; its facts, read off the file (see h100-vm/README.md).
H100_VM = {
    "file": "h100-vm/topo-m.txt",
    "kind": "topo",
    "facts": {
        "gpu_count": 1,
        "gpus": ["GPU0"],
        "link_matrix": [["X"]],
        "nic_columns": [],
        "nic_devices": [],
        "nic_legend": None,
        "gpu_to_nic": None,
        "header_columns_after_devices": ["CPU Affinity", "NUMA Affinity", "GPU NUMA ID"],
        "cpu_affinity": {"GPU0": "0-15"},
        "numa_affinity": {"GPU0": "0"},
        "gpu_numa_id": {"GPU0": "N/A"},
        "legend_present": True,
        "legend_variant": "new (X/SYS/NODE/PHB/PXB/PIX/NV#)",
        "nic_legend_present": False,
        "matrix_symmetric_with_X_diagonal": True,
        "format": {"separator": "tab", "ansi_escapes": True, "final_newline": True},
    },
}
ALL_ENTRIES = [*TOPO_ENTRIES, H100_VM]

# Every fact key the corpus uses, and whether the parser's output is checked against it.
CHECKED_FACTS = {
    "gpu_count",
    "gpus",
    "link_matrix",
    "nic_columns",
    "nic_devices",
    "nic_legend",
    "gpu_to_nic",
    "header_columns_after_devices",
    "cpu_affinity",
    "numa_affinity",
    "gpu_numa_id",
    "legend_present",
    "legend_variant",
    "nic_legend_present",
    "matrix_symmetric_with_X_diagonal",
    "format",
}
PROSE_FACTS = {"machine", "notes"}
AFFINITY = (("CPU Affinity", "cpu_affinity"), ("NUMA Affinity", "numa_affinity"), ("GPU NUMA ID", "gpu_numa_id"))


def _read(rel: str) -> str:
    return (CORPUS / rel).read_bytes().decode("utf-8")


def _check_facts(topo: TopoMatrix, facts: dict[str, Any]) -> None:
    """Assert every fact of a manifest entry against the parsed matrix."""
    assert set(facts) <= CHECKED_FACTS | PROSE_FACTS, f"unchecked facts: {set(facts) - CHECKED_FACTS - PROSE_FACTS}"
    labels = topo.labels
    gpu_labels = [lab for lab in labels if lab.startswith("GPU")]
    nic_labels = [lab for lab in labels if not lab.startswith("GPU")]
    at = {lab: i for i, lab in enumerate(labels)}

    assert gpu_labels == facts["gpus"]
    assert len(topo.gpus) == facts["gpu_count"]
    assert [f"GPU{g.index}" for g in topo.gpus] == facts["gpus"]
    assert [[topo.matrix[at[r]][at[c]] for c in gpu_labels] for r in gpu_labels] == facts["link_matrix"]

    # The matrix is square over all labels with X exactly on the diagonal.
    assert len(topo.matrix) == len(labels)
    for i, row in enumerate(topo.matrix):
        assert len(row) == len(labels)
        assert [j for j, code in enumerate(row) if code == "X"] == [i]
    if facts["matrix_symmetric_with_X_diagonal"]:
        assert all(topo.matrix[i][j] == topo.matrix[j][i] for i in range(len(labels)) for j in range(len(labels)))

    assert nic_labels == facts["nic_columns"]
    assert [n.label for n in topo.nics] == facts["nic_columns"]
    assert [n.name or n.label for n in topo.nics] == facts["nic_devices"]
    if facts["nic_legend"] is None:
        assert all(n.name is None or n.name == n.label for n in topo.nics)
    else:
        assert {n.label: n.name for n in topo.nics} == facts["nic_legend"]
    assert bool(facts["nic_legend"]) == facts["nic_legend_present"]

    if facts["gpu_to_nic"] is None:
        assert nic_labels == []
    else:
        got = {g: {n: topo.matrix[at[g]][at[n]] for n in nic_labels} for g in gpu_labels}
        assert got == facts["gpu_to_nic"]

    by_label = {f"GPU{g.index}": g for g in topo.gpus}
    present = [name for name, attr in AFFINITY if any(getattr(g, attr) is not None for g in topo.gpus)]
    assert present == facts["header_columns_after_devices"]
    for name, attr in AFFINITY:
        expected = facts[attr]
        if name not in facts["header_columns_after_devices"]:
            assert expected is None
            assert all(getattr(g, attr) is None for g in topo.gpus)
        else:
            assert {lab: getattr(by_label[lab], attr) for lab in gpu_labels} == expected

    variant = facts["legend_variant"]
    expected_legend = "none" if variant is None else variant.split()[0]
    assert facts["legend_present"] == (variant is not None)
    assert topo.legend == expected_legend


@pytest.mark.parametrize("entry", ALL_ENTRIES, ids=[e["file"] for e in ALL_ENTRIES])
def test_corpus_file_every_fact(entry: dict[str, Any]) -> None:
    text = _read(entry["file"])
    fmt = entry["facts"]["format"]
    # The fixture really has the shape the manifest claims, so each quirk is exercised.
    assert ("\x1b[" in text) == fmt["ansi_escapes"]
    assert text.endswith("\n") == fmt["final_newline"]
    assert ("\t" in text) == (fmt["separator"] == "tab")
    _check_facts(parse_topo(text, entry["file"]), entry["facts"])


def test_corpus_covers_the_quirks() -> None:
    files = {e["file"] for e in TOPO_ENTRIES}
    assert len(files) == 17
    assert any(e["facts"]["legend_variant"] is None for e in TOPO_ENTRIES)
    assert any((e["facts"]["legend_variant"] or "").startswith("old") for e in TOPO_ENTRIES)
    assert any(e["facts"]["nic_legend_present"] for e in TOPO_ENTRIES)


TAB_ENTRIES = [e for e in ALL_ENTRIES if e["facts"]["format"]["separator"] == "tab"]


@pytest.mark.parametrize("entry", TAB_ENTRIES, ids=[e["file"] for e in TAB_ENTRIES])
def test_tabs_copied_from_a_terminal_as_spaces_parse_the_same(entry: dict[str, Any]) -> None:
    text = _read(entry["file"])
    spaced = "\n".join(line.expandtabs(8) for line in text.split("\n"))
    assert "\t" not in spaced
    assert parse_topo(spaced) == parse_topo(text)
    _check_facts(parse_topo(spaced), entry["facts"])


@pytest.mark.parametrize("entry", ALL_ENTRIES, ids=[e["file"] for e in ALL_ENTRIES])
def test_crlf_and_missing_final_newline(entry: dict[str, Any]) -> None:
    text = _read(entry["file"])
    expected = parse_topo(text)
    assert parse_topo(text.replace("\n", "\r\n")) == expected
    assert parse_topo(text.rstrip("\n")) == expected


def test_prompt_line_before_the_header_is_skipped() -> None:
    text = "$ nvidia-smi topo -m\n" + _read("topo/017-2x5090-phb-tabs.txt")
    assert parse_topo(text) == parse_topo(_read("topo/017-2x5090-phb-tabs.txt"))


def test_empty_cpu_affinity_stays_empty_with_tabs() -> None:
    text = (
        "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"
        "GPU0\t X \tSYS\t\t0\t\tN/A\n"
        "GPU1\tSYS\t X \t0-7\t\t\tN/A\n"
    )
    topo = parse_topo(text)
    assert topo.gpus == [
        TopoGpu(index=0, cpu_affinity="", numa_affinity="0", gpu_numa_id="N/A"),
        TopoGpu(index=1, cpu_affinity="0-7", numa_affinity="", gpu_numa_id="N/A"),
    ]
    # The same table copied from a terminal (spaces) keeps the empty cells in place.
    assert parse_topo(text.expandtabs(8)).gpus == topo.gpus


def test_empty_cell_in_hand_aligned_columns_is_placed_by_header_position() -> None:
    text = (
        "      GPU0  GPU1  CPU Affinity  NUMA Affinity\n"
        "GPU0   X    PHB                 0\n"
        "GPU1  PHB    X    0-11          1\n"
    )
    topo = parse_topo(text)
    assert [(g.cpu_affinity, g.numa_affinity) for g in topo.gpus] == [("", "0"), ("0-11", "1")]
    assert topo.matrix == [["X", "PHB"], ["PHB", "X"]]


def test_wrapped_legend_and_nic_legend() -> None:
    text = (
        "\tGPU0\tNIC0\tCPU Affinity\tNUMA Affinity\n"
        "GPU0\t X \tPIX\t0-63\t0\n"
        "NIC0\tPIX\t X \n"
        "\n"
        "Legend:\n"
        "\n"
        "  X    = Self\n"
        "  SYS  = Connection traversing PCIe as well as the SMP interconnect\n"
        "         between NUMA nodes (e.g., QPI/UPI)\n"
        "  NV#  = Connection traversing a bonded set of # NVLinks\n"
        "\n"
        "NIC Legend:\n"
        "\n"
        "  NIC0: mlx5_bond_0\n"
    )
    topo = parse_topo(text)
    assert topo.legend == "new"
    assert [(n.label, n.name) for n in topo.nics] == [("NIC0", "mlx5_bond_0")]
    assert topo.matrix == [["X", "PIX"], ["PIX", "X"]]
    assert topo.gpus == [TopoGpu(index=0, cpu_affinity="0-63", numa_affinity="0")]


def test_rows_in_another_order_follow_the_header() -> None:
    text = "\tGPU0\tGPU1\nGPU1\tNV2\t X \nGPU0\t X \tNV2\n"
    topo = parse_topo(text)
    assert topo.labels == ["GPU0", "GPU1"]
    assert topo.matrix == [["X", "NV2"], ["NV2", "X"]]
    assert [g.index for g in topo.gpus] == [0, 1]
    assert topo.gpus[0].cpu_affinity is None


# --- bad input -------------------------------------------------------------------------------------

BAD_CASES = [
    # file, expected line (None: no line applies), words the message must contain
    ("empty.txt", None, "empty"),
    ("blank-lines.txt", None, "empty"),
    ("no-header.txt", 1, "no header row"),
    ("not-topo.txt", 1, "no header row"),
    ("missing-gpu-row.txt", 5, "no GPU3 row"),
    ("short-row.txt", 3, "'0-15' is not a link code"),
    ("long-row.txt", 3, "more link codes"),
    ("bad-code.txt", 2, "'QPI' is not a link code"),
    ("diagonal-not-x.txt", 3, "expected X on the diagonal"),
    ("duplicate-row.txt", 3, "GPU0 appears twice"),
]


@pytest.mark.parametrize(("name", "line", "words"), BAD_CASES, ids=[c[0] for c in BAD_CASES])
def test_bad_input_names_file_and_line(name: str, line: int | None, words: str) -> None:
    path = f"topo-bad/{name}"
    with pytest.raises(ParseError) as info:
        parse_topo((BAD / name).read_text(encoding="utf-8"), path)
    err = info.value
    assert err.path == path
    assert err.line == line
    assert words in err.detail
    assert "\n" not in str(err)
    assert str(err).startswith(f"{path}:{line}: " if line is not None else f"{path}: ")


@pytest.mark.parametrize("encoding", ["utf-8", "latin-1"])
def test_binary_garbage(encoding: str) -> None:
    data = (BAD / "binary.bin").read_bytes()
    with pytest.raises(ParseError) as info:
        parse_topo(data.decode(encoding, errors="replace"), "binary.bin")
    assert info.value.line == 2
    assert "binary data" in info.value.detail
    assert info.value.path == "binary.bin"


def test_too_few_codes_at_end_of_row() -> None:
    with pytest.raises(ParseError, match=r"row GPU1 has 1 link codes, the header names 2 devices") as info:
        parse_topo("\tGPU0\tGPU1\nGPU0\t X \tPHB\nGPU1\tPHB\n")
    assert info.value.line == 3


def test_extra_values_after_codes() -> None:
    with pytest.raises(ParseError, match=r"row GPU0 has 2 values") as info:
        parse_topo("\tGPU0\tCPU Affinity\nGPU0\t X \t0-3\tsurprise\n")
    assert info.value.line == 2


# --- pairs -----------------------------------------------------------------------------------------


def test_pairs_from_topology_mixed_nvlink_and_pcie() -> None:
    topo = parse_topo(_read("topo/014-3xa6000-nv4-bridge-pair-plus-pcie-ansi.txt"))
    assert pairs_from_topology(topo) == [
        GpuPair(a=0, b=1, link="NV4", kind="nvlink", nvlinks=4),
        GpuPair(a=0, b=2, link="NODE", kind="numa_local", nvlinks=None),
        GpuPair(a=1, b=2, link="NODE", kind="numa_local", nvlinks=None),
    ]


def test_pairs_skip_nics_and_map_old_soc() -> None:
    topo = parse_topo(_read("topo/009-4xk40m-phb-soc-mlx4-old-legend.txt"))
    pairs = pairs_from_topology(topo)
    assert [(p.a, p.b, p.link, p.kind) for p in pairs] == [
        (0, 1, "PHB", "host_bridge"),
        (0, 2, "SOC", "cross_numa"),
        (0, 3, "SOC", "cross_numa"),
        (1, 2, "SOC", "cross_numa"),
        (1, 3, "SOC", "cross_numa"),
        (2, 3, "PHB", "host_bridge"),
    ]


def test_asymmetric_pair_takes_the_worse_code() -> None:
    topo = TopoMatrix(
        labels=["GPU0", "GPU1", "GPU2"],
        matrix=[["X", "NV4", "NV2"], ["PHB", "X", "PIX"], ["NV8", "SYS", "X"]],
        gpus=[TopoGpu(index=i) for i in range(3)],
    )
    assert [(p.a, p.b, p.link, p.kind, p.nvlinks) for p in pairs_from_topology(topo)] == [
        (0, 1, "PHB", "host_bridge", None),
        (0, 2, "NV2", "nvlink", 2),
        (1, 2, "SYS", "cross_numa", None),
    ]


def test_pairs_of_a_single_gpu() -> None:
    assert pairs_from_topology(parse_topo(_read("h100-vm/topo-m.txt"))) == []


# --- round trip --------------------------------------------------------------------------------------

CODES = ["PIX", "PXB", "PHB", "NODE", "SYS", "SOC", "NV1", "NV2", "NV4", "NV12", "NV18"]
CPU_VALUES = ["", "0-15", "0-35,72-107", "56-111,168-223", "0", "N/A"]
NUMA_VALUES = ["", "0", "1", "N/A"]
GPU_NUMA_VALUES = ["", "N/A", "2"]
COLUMN_SETS: list[tuple[str, ...]] = [
    (),
    ("CPU Affinity",),
    ("CPU Affinity", "NUMA Affinity"),
    ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID"),
]


@st.composite
def _tables(draw: st.DrawFn) -> tuple[TopoMatrix, tuple[str, ...], bool]:
    n_gpu = draw(st.integers(1, 8))
    n_nic = draw(st.integers(0, 2))
    labels = [f"GPU{i}" for i in range(n_gpu)] + [f"NIC{i}" for i in range(n_nic)]
    n = len(labels)
    matrix = [["X" if i == j else draw(st.sampled_from(CODES)) for j in range(n)] for i in range(n)]
    columns = draw(st.sampled_from(COLUMN_SETS))
    gpus = [
        TopoGpu(
            index=i,
            cpu_affinity=draw(st.sampled_from(CPU_VALUES)) if "CPU Affinity" in columns else None,
            numa_affinity=draw(st.sampled_from(NUMA_VALUES)) if "NUMA Affinity" in columns else None,
            gpu_numa_id=draw(st.sampled_from(GPU_NUMA_VALUES)) if "GPU NUMA ID" in columns else None,
        )
        for i in range(n_gpu)
    ]
    with_legend = draw(st.booleans())
    nics = [{"label": f"NIC{i}", "name": f"mlx5_{i}" if with_legend else None} for i in range(n_nic)]
    topo = TopoMatrix.model_validate(
        {"labels": labels, "matrix": matrix, "gpus": gpus, "nics": nics, "legend": "new" if with_legend else "none"}
    )
    return topo, columns, draw(st.booleans())


def _render(topo: TopoMatrix, columns: tuple[str, ...], spaces: bool) -> str:
    """Print the table the way nvidia-smi does: a tab after each cell, two after NUMA Affinity."""
    lines = ["\t" + "\t".join([*topo.labels, *columns])]
    for label, row in zip(topo.labels, topo.matrix, strict=True):
        cells = [" X " if code == "X" else code for code in row]
        line = label + "\t" + "\t".join(cells)
        if label.startswith("GPU") and columns:
            gpu = topo.gpus[int(label[3:])]
            values = [gpu.cpu_affinity or "", gpu.numa_affinity or "", gpu.gpu_numa_id or ""][: len(columns)]
            if len(values) == 3:
                line += "\t" + values[0] + "\t" + values[1] + "\t\t" + values[2]
            else:
                line += "\t" + "\t".join(values)
        lines.append(line)
    if topo.legend == "new":
        lines += ["", "Legend:", "", "  X    = Self", "  NV#  = Connection traversing a bonded set of # NVLinks"]
        if topo.nics:
            lines += ["", "NIC Legend:", ""] + [f"  {n.label}: {n.name}" for n in topo.nics]
    text = "\n".join(lines) + "\n"
    return "\n".join(line.expandtabs(8) for line in text.split("\n")) if spaces else text


@settings(max_examples=300, deadline=None)
@given(_tables())
def test_rendered_matrix_parses_back(case: tuple[TopoMatrix, tuple[str, ...], bool]) -> None:
    topo, columns, spaces = case
    text = _render(topo, columns, spaces)
    assert parse_topo(text) == topo


# --- header and rows aligned differently, read as a person reads them ---------------------------------------------

EXTRA = FIXTURES / "topo-extra"


def _mixed(text: str, part: str) -> str:
    """``text`` with only some of its tabs expanded, as a terminal copy (or an editor) leaves them:
    ``header`` the header row alone, ``rows`` the matrix rows alone, ``half`` the first half of every line."""
    lines = text.split("\n")
    header = next(i for i, line in enumerate(lines) if "GPU0" in line and " X " not in line and "\tX" not in line)
    out = []
    for i, line in enumerate(lines):
        if (part == "header" and i == header) or (part == "rows" and i > header and line.strip()):
            out.append(line.expandtabs(8))
        elif part == "half":
            cut = len(line) // 2
            out.append(line[:cut].expandtabs(8) + line[cut:])
        else:
            out.append(line)
    return "\n".join(out)


@pytest.mark.parametrize("part", ["header", "rows", "half"])
@pytest.mark.parametrize("entry", TAB_ENTRIES, ids=[e["file"] for e in TAB_ENTRIES])
def test_header_and_rows_separated_differently_parse_the_same(entry: dict[str, Any], part: str) -> None:
    text = _read(entry["file"])
    mixed = _mixed(text, part)
    assert mixed != text
    assert parse_topo(mixed) == parse_topo(text)


def test_a_header_of_spaces_over_rows_of_tabs() -> None:
    """The case #10 names: spaces between the header's names (its leading tab kept), tabs in the rows (the
    2x RTX 5090 of the corpus)."""
    text = _read("topo/017-2x5090-phb-tabs.txt")
    header, *rest = text.split("\n")
    mixed = "\n".join(["\t" + header.expandtabs(8).lstrip(), *rest])
    assert mixed.split("\n")[0].startswith("\tGPU0    GPU1    CPU Affinity")
    topo = parse_topo(mixed)
    assert topo.matrix == [["X", "PHB"], ["PHB", "X"]]
    assert [(g.cpu_affinity, g.numa_affinity, g.gpu_numa_id) for g in topo.gpus] == [("0-63", "0", "N/A")] * 2


def test_a_tab_cell_holding_two_space_apart_cells_is_split() -> None:
    """One tab kept in a line otherwise copied as spaces: the cell "GPU0     X " is two cells."""
    text = (
        "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"
        "GPU0     X \tPHB\t0-11\t0\t\tN/A\n"
        "GPU1\tPHB      X      0-11    0               N/A\n"
    )
    topo = parse_topo(text)
    assert topo.matrix == [["X", "PHB"], ["PHB", "X"]]
    assert [(g.cpu_affinity, g.numa_affinity, g.gpu_numa_id) for g in topo.gpus] == [("0-11", "0", "N/A")] * 2


def test_prompt_glued_to_the_header_line() -> None:
    path = EXTRA / "001-2x5070-prompt-glued-to-header-spaces.txt"
    topo = parse_topo(path.read_text(), str(path))
    assert topo.labels == ["GPU0", "GPU1"]
    assert topo.matrix == [["X", "PHB"], ["PHB", "X"]]
    assert [(g.cpu_affinity, g.numa_affinity, g.gpu_numa_id) for g in topo.gpus] == [("0-23", "0", "N/A")] * 2


def test_prose_naming_gpus_before_the_header_is_not_the_header() -> None:
    text = "Topology of GPU0 GPU1 below:\n" + _read("topo/017-2x5090-phb-tabs.txt")
    assert parse_topo(text) == parse_topo(_read("topo/017-2x5090-phb-tabs.txt"))

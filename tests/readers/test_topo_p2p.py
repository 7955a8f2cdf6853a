"""`nvidia-smi topo -p2p r|w|rw|n|a|p` (rigcheck.readers.smi.topo_p2p) on the real outputs of the corpus: every
pair's status for the capability shown, the printed codes' meaning, the layouts, bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rigcheck.errors import ParseError
from rigcheck.model import Missing, P2PStatus, snapshot_from_json, snapshot_to_json
from rigcheck.readers.smi.topo_p2p import FIELDS, P2P_CODES, looks_like_topo_p2p, parse_topo_p2p

CORPUS = Path(__file__).parent.parent / "fixtures" / "corpus"
ENTRIES: list[dict[str, Any]] = [
    e for e in json.loads((CORPUS / "manifest.json").read_text(encoding="utf-8")) if e["kind"] == "topo-p2p"
]


def _parse(rel: str) -> Any:
    path = CORPUS / rel
    return parse_topo_p2p(path.read_text(encoding="utf-8"), path=str(path))


def test_manifest_lists_every_topo_p2p_file() -> None:
    listed = {e["file"] for e in ENTRIES}
    assert listed == {f"topo-p2p/{p.name}" for p in (CORPUS / "topo-p2p").glob("*.txt")}
    assert len(listed) >= 4


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["file"] for e in ENTRIES])
def test_every_pair_gets_the_printed_status(entry: dict[str, Any]) -> None:
    facts = entry["facts"]
    snap = _parse(entry["file"])
    assert snap.source.kind == "topo-p2p"
    assert [g.index for g in snap.gpus] == [int(label[3:]) for label in facts["gpus"]]  # by index only
    assert all(g.missing["name"] == Missing.NOT_IN_SOURCE for g in snap.gpus)
    cap = facts["command"].split()[-1]
    fields = next(f for c, f in FIELDS.items() if c == cap)
    indices = [int(label[3:]) for label in facts["gpus"]]
    assert len(snap.pairs) == len(indices) * (len(indices) - 1) // 2
    for pair in snap.pairs:
        i, j = indices.index(pair.a), indices.index(pair.b)
        printed = facts["matrix"][i][j]
        assert facts["matrix"][j][i] == printed
        for field in ("p2p_read", "p2p_write", "p2p_nvlink", "p2p_atomics", "p2p_pcie"):
            expected = P2P_CODES[printed][0] if field in fields else None
            assert getattr(pair, field) == expected, (pair, field)
        assert pair.link is None
        assert pair.missing["link"] == Missing.NOT_IN_SOURCE
    # the capability came from the file (its name or a command line), not from a guess
    assert not any("not in the input" in d.message for d in snap.diagnostics)
    assert snapshot_from_json(snapshot_to_json(snap)) == snap


def test_gns_on_two_5090s_is_not_ok_for_read_and_write() -> None:
    snap = _parse("topo-p2p/201-2x5090-p2p-rw-gns-tabs-dr-legend.txt")
    (pair,) = snap.pairs
    gns = P2PStatus.GPU_NOT_SUPPORTED
    assert (pair.a, pair.b, pair.p2p_read, pair.p2p_write) == (0, 1, gns, gns)
    assert pair.missing["p2p_nvlink"] == Missing.NOT_IN_SOURCE


def test_the_same_matrix_with_spaces_reads_the_same() -> None:
    tabs = _parse("topo-p2p/201-2x5090-p2p-rw-gns-tabs-dr-legend.txt")
    spaces = _parse("topo-p2p/203-2x5090-p2p-rw-gns-spaces.txt")
    assert spaces.pairs == tabs.pairs


def test_eight_gpus_all_ok() -> None:
    snap = _parse("topo-p2p/202-8gpu-vfio-guest-p2p-r-all-ok.txt")
    assert len(snap.pairs) == 28
    assert {p.p2p_read for p in snap.pairs} == {P2PStatus.OK}
    assert all(p.p2p_write is None for p in snap.pairs)


def test_the_command_line_in_the_text_names_the_capability() -> None:
    """The prompt was pasted with the output: `-p2p p` (and a failed `-p2p -p` before it)."""
    snap = _parse("topo-p2p/204-5gpu-p2p-p-all-ok-prompts-kept-cut.txt")
    assert len(snap.pairs) == 10
    assert {p.p2p_pcie for p in snap.pairs} == {P2PStatus.OK}
    assert all(p.p2p_read is None for p in snap.pairs)
    assert '"p2p_pcie":"ok"' in snapshot_to_json(snap).replace(" ", "").replace("\n", "")


def test_h100_vm_one_gpu_has_no_pair() -> None:
    path = CORPUS / "h100-vm/topo-p2p-r.txt"
    text = path.read_text()
    assert looks_like_topo_p2p(text)
    snap = parse_topo_p2p(text, path=str(path))
    assert snap.pairs == []
    assert snap.diagnostics == []  # "topo-p2p-r" names the capability


def test_without_a_name_or_command_the_matrix_is_read_as_p2p_read_and_says_so() -> None:
    text = (CORPUS / "topo-p2p/201-2x5090-p2p-rw-gns-tabs-dr-legend.txt").read_text()
    snap = parse_topo_p2p(text)
    (pair,) = snap.pairs
    assert (pair.p2p_read, pair.p2p_write) == (P2PStatus.GPU_NOT_SUPPORTED, None)
    assert any("not in the input" in d.message for d in snap.diagnostics)
    given = parse_topo_p2p(text, capability="w").pairs[0]
    assert (given.p2p_read, given.p2p_write) == (None, P2PStatus.GPU_NOT_SUPPORTED)


@pytest.mark.parametrize(
    ("code", "status"),
    [
        ("OK", P2PStatus.OK),
        ("CNS", P2PStatus.CHIPSET_NOT_SUPPORTED),
        ("GNS", P2PStatus.GPU_NOT_SUPPORTED),
        ("TNS", P2PStatus.IOH_TOPOLOGY_NOT_SUPPORTED),
        ("NS", P2PStatus.NOT_SUPPORTED),
        ("DR", P2PStatus.DISABLED_BY_REGKEY),
        ("U", P2PStatus.UNKNOWN),
    ],
)
def test_every_legend_code_maps_to_nvml_status(code: str, status: P2PStatus) -> None:
    """The legend of the corpus's 2x RTX 5090 output, code by code, against nvml.h's nvmlGpuP2PStatus_t."""
    legend = (CORPUS / "topo-p2p/201-2x5090-p2p-rw-gns-tabs-dr-legend.txt").read_text()
    assert f"  {code.ljust(4)} = {P2P_CODES[code][1]}" in legend
    text = legend.replace("GNS\t\n GPU1", f"{code}\t\n GPU1").replace("\tGNS\tX", f"\t{code}\tX")
    assert parse_topo_p2p(text, capability="r").pairs[0].p2p_read == status


def test_a_code_no_legend_names_is_unknown_and_kept() -> None:
    text = " \tGPU0\tGPU1\t\n GPU0\tX\tXYZ\t\n GPU1\tXYZ\tX\t\n"
    snap = parse_topo_p2p(text, capability="r")
    assert snap.pairs[0].p2p_read == P2PStatus.UNKNOWN
    assert any("'XYZ'" in d.message for d in snap.diagnostics)


def test_asymmetric_pair_gets_the_worse_status() -> None:
    text = " \tGPU0\tGPU1\t\n GPU0\tX\tOK\t\n GPU1\tCNS\tX\t\n"
    snap = parse_topo_p2p(text, capability="r")
    assert snap.pairs[0].p2p_read == P2PStatus.CHIPSET_NOT_SUPPORTED
    assert any("GPU0 -> GPU1 prints OK, GPU1 -> GPU0 prints CNS" in d.message for d in snap.diagnostics)


def test_a_read_and_a_write_matrix_in_one_file() -> None:
    """A script printing both (titles with the command, as in a rig report)."""
    r = (CORPUS / "topo-p2p/202-8gpu-vfio-guest-p2p-r-all-ok.txt").read_text()
    w = (CORPUS / "topo-p2p/201-2x5090-p2p-rw-gns-tabs-dr-legend.txt").read_text()
    text = f"=== P2P read (nvidia-smi topo -p2p r) ===\n{r}\n=== P2P write (nvidia-smi topo -p2p w) ===\n{w}"
    snap = parse_topo_p2p(text)
    pair01 = next(p for p in snap.pairs if (p.a, p.b) == (0, 1))
    assert (pair01.p2p_read, pair01.p2p_write) == (P2PStatus.OK, P2PStatus.GPU_NOT_SUPPORTED)
    assert len(snap.pairs) == 28


def test_topo_m_output_is_not_topo_p2p() -> None:
    for path in sorted((CORPUS / "topo").glob("*.txt")):
        assert not looks_like_topo_p2p(path.read_text()), path.name
    assert looks_like_topo_p2p((CORPUS / "topo-p2p/202-8gpu-vfio-guest-p2p-r-all-ok.txt").read_text())


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("", "empty"),
        ("hello\n", "no header row"),
        (" \tGPU0\tGPU1\t\n GPU0\tX\tOK\t\n", "no GPU1 row"),
        (" \tGPU0\tGPU1\t\n GPU0\tX\t\n GPU1\tOK\tX\t\n", "1 status codes"),
        (" \tGPU0\tGPU1\t\n GPU0\tOK\tOK\t\n GPU1\tOK\tX\t\n", "on the diagonal"),
        (" \tGPU0\tGPU1\t\n GPU0\tX\tOK\t\n GPU1\tOK\tX\t\n GPU1\tOK\tX\t\n", "appears twice"),
        (" \tGPU0\tGPU1\t\n GPU0\tX\t\x01\t\n", "binary"),
    ],
)
def test_bad_input_names_the_file_and_line(text: str, words: str) -> None:
    with pytest.raises(ParseError, match=words) as info:
        parse_topo_p2p(text, path="p2p.txt")
    assert info.value.path == "p2p.txt"

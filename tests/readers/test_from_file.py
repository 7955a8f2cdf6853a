"""`--from`: every corpus output is recognised as its kind, and odd encodings are handled."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

from rigcheck.errors import InputError, ParseError
from rigcheck.inputs import read_input_text
from rigcheck.readers.from_file import detect_kind, load_file, load_text

CORPUS = Path(__file__).parent.parent / "fixtures" / "corpus"
MANIFEST = json.loads((CORPUS / "manifest.json").read_text())
KIND = {
    "topo": "topo",
    "smi": "nvidia-smi-table",
    "smi-q": "nvidia-smi-q",
    "smi-xml": "nvidia-smi-xml",
    "nvlink": "nvlink-status",
    "topo-p2p": "topo-p2p",
    "smi-err": "nvidia-smi-table",
    "driver-errors": "nvidia-smi-error",
    "smi-q-fabric": "nvidia-smi-q",  # the Fabric block of `-q`, alone (a grep) or in a fragment
    "nvlink-errors": "nvlink-errors",
    "fabricmanager": "fabric-manager",
    "kernel-log": "kernel-log",  # dmesg, dmesg -T, journalctl -k, syslog
    # `--query-gpu=index,gpu_recovery_action --format=csv,noheader`: a recovery action is told by its words
    "smi-query-csv": "nvidia-smi-query-csv",
}


@pytest.mark.parametrize("entry", MANIFEST, ids=[e["file"] for e in MANIFEST])
def test_corpus_files_are_recognised(entry: dict[str, object]) -> None:
    path = CORPUS / str(entry["file"])
    # nccl logs, nccl-tests and p2pBandwidthLatencyTest are not snapshot inputs (issue #4 reads them).
    assert detect_kind(read_input_text(str(path), "a saved output")) == KIND.get(str(entry["kind"]))


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("q.txt", "nvidia-smi-q"),
        ("q-d.txt", "nvidia-smi-q"),
        ("q.xml", "nvidia-smi-xml"),
        ("nvidia-smi.txt", "nvidia-smi-table"),
        ("topo-m.txt", "topo"),
        ("topo-p2p-r.txt", "topo-p2p"),
        ("query.csv", "nvidia-smi-query-csv"),  # `nvidia-smi --query-gpu=... --format=csv`
        ("dmon.txt", None),
    ],
)
def test_h100_outputs_are_recognised(name: str, kind: str | None) -> None:
    assert detect_kind(read_input_text(str(CORPUS / "h100-vm" / name), "a saved output")) == kind


def test_p2p_matrix_is_read_not_mistaken_for_topo_m() -> None:
    """`topo -p2p` has topo -m's shape ("GPU0  X  OK"): it is detected first and read by its own parser."""
    snap = load_file(str(CORPUS / "h100-vm/topo-p2p-r.txt"))
    assert snap.source.kind == "topo-p2p"
    assert snap.topology is None
    assert snap.pairs == []  # one GPU: no pair


@pytest.mark.parametrize("path", sorted((CORPUS / "topo-p2p").glob("*.txt")), ids=lambda p: p.name)
def test_every_p2p_matrix_is_recognised_and_read(path: Path) -> None:
    text = read_input_text(str(path), "a saved output")
    assert detect_kind(text) == "topo-p2p"
    snap = load_file(str(path))
    assert snap.source.kind == "topo-p2p"
    assert snap.pairs
    for pair in snap.pairs:  # each pair has the status of the capability the matrix shows
        assert any(getattr(pair, f) is not None for f in type(pair).model_fields if f.startswith("p2p_")), pair


def test_utf16_from_powershell_is_read(tmp_path: Path) -> None:
    text = (CORPUS / "smi/002-2x2080ti-550.txt").read_text()
    path = tmp_path / "smi.txt"
    path.write_bytes(b"\xff\xfe" + text.encode("utf-16-le"))
    snap = load_file(str(path))
    assert [g.name for g in snap.gpus] == ["NVIDIA GeForce RTX 2080 Ti"] * 2


def test_utf8_bom_and_crlf(tmp_path: Path) -> None:
    text = (CORPUS / "topo/017-2x5090-phb-tabs.txt").read_text()
    path = tmp_path / "topo.txt"
    path.write_bytes(b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode())
    snap = load_file(str(path))
    assert snap.topology is not None
    assert snap.topology.matrix[0][1] == "PHB"


def test_stdin_dash(monkeypatch: pytest.MonkeyPatch) -> None:
    data = (CORPUS / "topo/006-2gpu-nv2-minimal-no-legend.txt").read_bytes()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    snap = load_file("-")
    assert snap.pairs[0].link == "NV2"
    assert snap.source.path == "-"


def test_topo_only_snapshot_marks_everything_else_not_in_source() -> None:
    snap = load_text((CORPUS / "topo/010-2x2080ti-pix-numa1.txt").read_text(), "t.txt")
    gpu = snap.gpus[0]
    assert gpu.power_limit_w is None
    assert gpu.missing["power_limit_w"] == "not_in_source"
    assert gpu.numa_node == 1
    assert snap.source.kind == "topo"


def test_unrecognised_text_lists_what_is_accepted() -> None:
    with pytest.raises(InputError, match="expected `nvidia-smi -q`"):
        load_text("a note on the rack\nfan 3 replaced on tuesday\n", "notes.txt")  # no format at all


SNAPSHOT_INPUTS = [str(e["file"]) for e in MANIFEST if e["kind"] in KIND] + [
    "h100-vm/q.txt",
    "h100-vm/q-d.txt",
    "h100-vm/q.xml",
    "h100-vm/nvidia-smi.txt",
    "h100-vm/topo-m.txt",
    "h100-vm/query.csv",
]


@pytest.mark.parametrize("name", SNAPSHOT_INPUTS)
def test_every_input_gives_a_valid_replayable_snapshot(name: str) -> None:
    import jsonschema

    from rigcheck.model import snapshot_from_json, snapshot_to_dict, snapshot_to_json
    from rigcheck.model.schema import snapshot_schema

    snap = load_file(str(CORPUS / name))
    jsonschema.validate(snapshot_to_dict(snap), snapshot_schema())
    assert snapshot_from_json(snapshot_to_json(snap)) == snap
    # A driver failure lists no GPU, and says why instead; a Fabric Manager log says nothing of GPUs, nor does a
    # kernel log of NVSwitch (SXid) lines only.
    assert (
        snap.gpus
        or (snap.driver is not None and snap.gpu_absent_reason)
        or snap.fabric_manager is not None
        or (snap.kernel_events and snap.gpu_absent_reason)
    )


@pytest.mark.parametrize(
    ("name", "gpu_lost"),
    [("003-handle-error-gpu-is-lost.txt", True), ("004-handle-error-unknown-error.txt", False)],
)
def test_nvidia_smi_handle_error_alone_is_an_unreadable_gpu(name: str, gpu_lost: bool) -> None:
    """`nvidia-smi` printing only "Unable to determine the device handle" names a GPU it lost: a placeholder."""
    from rigcheck.checks.doctor import run_checks
    from rigcheck.model import Missing, Severity

    snap = load_file(str(CORPUS / "smi-err" / name))
    assert snap.source.kind == "nvidia-smi-error"
    assert len(snap.gpus) == 1
    assert snap.gpus[0].read_error is (Missing.GPU_LOST if gpu_lost else Missing.ERROR)
    failed = [f.id for f in run_checks(snap) if f.severity is Severity.FAIL]
    assert failed == ["health.gpu-unreadable"]


@pytest.mark.parametrize(
    ("name", "finding"),
    [
        ("201-journal-api-mismatch-535-vs-530-octal-012.txt", "health.driver-version-mismatch"),
        ("202-truenas-nvml-version-mismatch-580-plus-proc-version.txt", "health.driver-version-mismatch"),
        ("203-container-nvidia-smi-failed-couldnt-communicate.txt", "health.driver-not-loaded"),
    ],
)
def test_driver_failure_text_is_a_failed_machine_never_no_gpu(name: str, finding: str) -> None:
    from rigcheck.checks.doctor import run_checks
    from rigcheck.model import Severity

    snap = load_file(str(CORPUS / "driver-errors" / name))
    assert snap.driver is not None
    failed = {f.id for f in run_checks(snap) if f.severity is Severity.FAIL}
    assert finding in failed
    assert "health.no-gpu" not in failed


@pytest.mark.parametrize(
    ("fixture", "command"),
    [
        ("corpus/nccl-tests/001-2x2080ti-allreduce-pcie-no-p2p.txt", "rigcheck bench allreduce --from"),
        ("corpus/p2p/001-2x2080ti-cannot-access-peer.txt", "rigcheck bench p2p --from"),
        ("reference-tools/nvbandwidth-1xh100-vm-v0.8.txt", "rigcheck bench hostlink --from"),  # reads like -q
        ("reference-tools/nvbandwidth-2gpu-json-synthetic.json", "rigcheck bench hostlink --from"),
        ("dcgm/gb10-r1-dcgm4.2.3-software-fail.json", "rigcheck verify --from DIR"),  # JSON, like a snapshot
    ],
)
def test_a_measurement_given_as_a_machine_names_the_command_that_reads_it(fixture: str, command: str) -> None:
    path = Path(__file__).parent.parent / "fixtures" / fixture
    with pytest.raises(ParseError) as raised:
        load_text(path.read_text(), str(path))
    assert "not a machine description" in str(raised.value)
    assert command in str(raised.value)

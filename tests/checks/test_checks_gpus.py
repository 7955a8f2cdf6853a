"""checks/doctor/gpus.py: mixed GPU models in one box."""

from __future__ import annotations

from pathlib import Path

from rigcheck.checks.doctor.gpus import check_gpus
from rigcheck.model import Severity
from rigcheck.readers.from_file import load_file
from tests.support.checkutil import only
from tests.support.snapshots import healthy_8x_h100, make_gpu, make_snapshot

CORPUS = Path(__file__).parent.parent / "fixtures" / "corpus"


def test_a_5090_beside_a_3090_ti_is_a_mixed_box() -> None:
    # smi/006: the `nvidia-smi` table of a rig with an RTX 5090 and an RTX 3090 Ti (club-3090 issue #769).
    snap = load_file(str(CORPUS / "smi" / "006-5090-plus-3090ti-mixed-595-cut.txt"))
    f = only(check_gpus(snap), "gpus.mixed-models")
    assert f.severity is Severity.WARN
    assert f.subject == "host"
    assert f.message == (
        "2 GPU models in one box: 1x NVIDIA GeForce RTX 5090 (GPU0); 1x NVIDIA GeForce RTX 3090 Ti (GPU1)"
    )
    assert "slowest card" in (f.advice or "")
    assert "CUDA_VISIBLE_DEVICES" in (f.advice or "")
    assert "DistributedDataParallel" in (f.source or "")


def test_the_larger_group_comes_first() -> None:
    # machine-01 of lukolszewski/llama.cpp's benches: six 3090s and a 5060 Ti driving the display.
    gpus = [make_gpu(i, name="NVIDIA GeForce RTX 3090") for i in range(6)]
    gpus.append(make_gpu(6, name="NVIDIA GeForce RTX 5060 Ti"))
    f = only(check_gpus(make_snapshot(gpus)), "gpus.mixed-models")
    assert f.message.startswith("2 GPU models in one box: 6x NVIDIA GeForce RTX 3090 (GPU0, GPU1, GPU2, GPU3, GPU4,")
    assert f.message.endswith("; 1x NVIDIA GeForce RTX 5060 Ti (GPU6)")


def test_one_model_is_no_finding_even_when_names_are_printed_differently() -> None:
    assert check_gpus(healthy_8x_h100()) == []
    # the `nvidia-smi` table truncates long names; the catalog knows both are the RTX 6000 Ada
    same = [
        make_gpu(0, name="NVIDIA RTX 6000 Ada Gene..."),
        make_gpu(1, name="NVIDIA RTX 6000 Ada Generation"),
    ]
    assert check_gpus(make_snapshot(same)) == []
    # a GPU whose name is not known is not counted as a model
    assert check_gpus(make_snapshot([make_gpu(0), make_gpu(1, name=None)])) == []


def test_gpus_of_one_model_on_two_vbios_versions_warn_once_naming_each_version() -> None:
    gpus = [make_gpu(i, vbios_version="96.00.74.00.0D") for i in range(4)]
    gpus[3].vbios_version = "96.00.DA.00.0C"
    f = only(check_gpus(make_snapshot(gpus)), "gpus.mixed-vbios")
    assert f.severity is Severity.WARN
    assert f.subject == "host"
    assert f.message == (
        "2 VBIOS versions among 4 NVIDIA H100 80GB HBM3 GPUs: 96.00.74.00.0D on GPU0, GPU1, GPU2; "
        "96.00.DA.00.0C on GPU3"
    )
    assert f.measured == "96.00.74.00.0D on GPU0, GPU1, GPU2; 96.00.DA.00.0C on GPU3"
    assert "firmware" in (f.advice or "")
    assert "nvmlDeviceGetVbiosVersion" in (f.source or "")


def test_two_a5000s_of_the_corpus_agree_and_one_reflashed_does_not(tmp_path: Path) -> None:
    # smi-xml/005: two RTX A5000s, both on 94.02.6D.00.0D.
    xml = CORPUS / "smi-xml" / "005-2xa5000-590-v13.xml"
    assert [f.id for f in check_gpus(load_file(str(xml)))] == []
    reflashed = tmp_path / "005-reflashed.xml"
    reflashed.write_text(xml.read_text().replace("94.02.6D.00.0D", "94.02.6D.00.0E", 1))
    f = only(check_gpus(load_file(str(reflashed))), "gpus.mixed-vbios")
    assert "94.02.6D.00.0D on GPU" in f.message
    assert "94.02.6D.00.0E on GPU" in f.message
    assert "among 2 NVIDIA RTX A5000 GPUs" in f.message


def test_vbios_compared_per_model_and_only_where_known() -> None:
    # Different models have different VBIOS: that is gpus.mixed-models alone.
    mixed = [make_gpu(0, vbios_version="96.00.74.00.0D"), make_gpu(1, name="NVIDIA A100-SXM4-80GB")]
    mixed[1].vbios_version = "92.00.45.00.06"
    assert [f.id for f in check_gpus(make_snapshot(mixed))] == ["gpus.mixed-models"]
    # One GPU knowing its version compares nothing; neither does a box where none knows it.
    one_known = [make_gpu(0, vbios_version="96.00.74.00.0D"), make_gpu(1), make_gpu(2)]
    assert check_gpus(make_snapshot(one_known)) == []
    assert check_gpus(healthy_8x_h100()) == []
    # Two models, each split: one finding per model.
    split = [make_gpu(i, vbios_version=f"96.00.74.00.0{i % 2}") for i in range(2)]
    split += [make_gpu(i, name="NVIDIA A100-SXM4-80GB", vbios_version=f"92.00.45.00.0{i % 2}") for i in (2, 3)]
    found = [f for f in check_gpus(make_snapshot(split)) if f.id == "gpus.mixed-vbios"]
    assert [f.message.split(": ")[0] for f in found] == [
        "2 VBIOS versions among 2 NVIDIA H100 80GB HBM3 GPUs",
        "2 VBIOS versions among 2 NVIDIA A100-SXM4-80GB GPUs",
    ]

"""checks/gpus.py: mixed GPU models in one box."""

from __future__ import annotations

from pathlib import Path

from rigcheck.checks.gpus import check_gpus
from rigcheck.model import Severity
from rigcheck.probe.from_file import load_file
from tests.checkutil import only
from tests.snapshots import healthy_8x_h100, make_gpu, make_snapshot

CORPUS = Path(__file__).parent / "fixtures" / "corpus"


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

"""One TF32 API: rigcheck.bench.device.matmul.fp32_math (used by matmul, burn and the fingerprint) sets TF32 through the
API the installed torch has and never touches the other. On torch >= 2.9, reading the legacy
``allow_tf32`` after ``fp32_precision`` was set raises RuntimeError ("mix of the legacy and new APIs"),
seen on torch 2.13.0+cpu here."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import rigcheck
from rigcheck.bench.device.matmul import fp32_math

torch = pytest.importorskip("torch")


class _NewApi:
    """torch.backends.cuda.matmul of torch >= 2.9: touching allow_tf32 fails the test."""

    def __init__(self) -> None:
        self.fp32_precision = "none"
        self.writes: list[str] = []

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "allow_tf32":
            raise AssertionError("the legacy allow_tf32 was set")
        if name == "fp32_precision" and "writes" in self.__dict__:
            self.writes.append(value)
        object.__setattr__(self, name, value)

    def __getattr__(self, name: str) -> Any:  # only for attributes not set: allow_tf32
        raise AssertionError(f"{name} was read")


class _LegacyApi:
    """torch.backends.cuda.matmul before 2.9: only allow_tf32."""

    def __init__(self) -> None:
        self.allow_tf32 = False


def _torch_with(matmul: object) -> Any:
    return SimpleNamespace(backends=SimpleNamespace(cuda=SimpleNamespace(matmul=matmul)))


def test_new_api_set_and_restored_legacy_never_touched() -> None:
    flags = _NewApi()
    with fp32_math(_torch_with(flags), "tf32", cuda=True):
        assert flags.fp32_precision == "tf32"
    assert flags.fp32_precision == "none"
    with fp32_math(_torch_with(flags), "fp32", cuda=True):
        assert flags.fp32_precision == "ieee"
    assert flags.writes == ["tf32", "none", "ieee", "none"]


def test_legacy_api_where_torch_has_only_it() -> None:
    flags = _LegacyApi()
    with fp32_math(_torch_with(flags), "tf32", cuda=True):
        assert flags.allow_tf32 is True
        assert not hasattr(flags, "fp32_precision")
    assert flags.allow_tf32 is False


def test_restored_even_when_the_block_raises() -> None:
    flags = _NewApi()
    with pytest.raises(RuntimeError, match="boom"), fp32_math(_torch_with(flags), "tf32", cuda=True):
        raise RuntimeError("boom")
    assert flags.fp32_precision == "none"


def test_no_change_without_cuda_or_for_half_types() -> None:
    flags = _NewApi()
    for dtype, cuda in (("tf32", False), ("bf16", True), ("fp16", True)):
        with fp32_math(_torch_with(flags), dtype, cuda=cuda):
            assert flags.fp32_precision == "none"
    assert flags.writes == []


def test_no_other_module_touches_either_tf32_api() -> None:
    """One door: matmul's helper. burn (and anything later) goes through it rather than set a flag itself."""
    src = Path(rigcheck.__file__).parent
    touching = sorted(
        str(p.relative_to(src))
        for p in src.rglob("*.py")
        if "allow_tf32" in (text := p.read_text(encoding="utf-8")) or "fp32_precision" in text
    )
    assert touching == ["bench/device/matmul.py"]
    assert "fp32_math(torch, dtype" in (src / "bench" / "burn.py").read_text(encoding="utf-8")


def test_real_torch_legacy_flag_readable_after_the_block() -> None:
    """The installed torch: after a tf32 block the process is back on its own setting, so code that reads
    the legacy flag afterwards (the user's, a library's) does not hit the mixed-API error."""
    matmul = torch.backends.cuda.matmul
    before = matmul.fp32_precision
    with fp32_math(torch, "tf32", cuda=True):
        assert matmul.fp32_precision == "tf32"
    assert matmul.fp32_precision == before
    if before == "none":
        assert matmul.allow_tf32 is False  # raises RuntimeError if the new API were left set

"""What every benchmark attaches to its result: software versions, and torch itself (lazily)."""

from __future__ import annotations

import platform
from types import ModuleType
from typing import Any

from rigcheck import __version__
from rigcheck.errors import UsageError
from rigcheck.model.bench import Versions

TORCH_MISSING = "this benchmark needs PyTorch: pip install 'rigcheck[bench]' (or torch for your CUDA version)"


def require_torch() -> ModuleType:
    """Import torch, or say in one line how to get it."""
    try:
        import torch
    except ImportError:
        raise UsageError(TORCH_MISSING) from None
    return torch


def software_versions() -> Versions:
    """torch, its CUDA and NCCL, rigcheck and Python: what a result was measured with."""
    torch: Any = require_torch()
    nccl: str | None = None
    if torch.cuda.is_available() and hasattr(torch.cuda, "nccl"):
        version = torch.cuda.nccl.version()
        nccl = ".".join(str(v) for v in version) if isinstance(version, tuple) else str(version)
    return Versions(
        rigcheck=__version__,
        python=platform.python_version(),
        torch=str(torch.__version__),
        cuda=torch.version.cuda,
        nccl=nccl,
    )

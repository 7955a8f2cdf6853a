"""Software versions without importing torch: read from the installed distributions' metadata.

A package that is not installed gives ``None`` with reason ``not_in_source``: the closest existing
reason — the Python environment is the source, and it does not hold the package. (``not_supported``
would wrongly suggest the hardware or driver lacks something.)
"""

from __future__ import annotations

import platform
import re
from importlib import metadata

import rigcheck
from rigcheck.model.snapshot import Missing, Software

# NCCL wheels, newest CUDA first; torch's CUDA wheels depend on one of these.
NCCL_DISTRIBUTIONS = ("nvidia-nccl-cu13", "nvidia-nccl-cu12", "nvidia-nccl-cu11", "nvidia-nccl")
_LOCAL_CUDA_RE = re.compile(r"\+cu(\d+)(\d)$")  # "2.4.0+cu121" -> ("12", "1")
_CUDA_RUNTIME_RE = re.compile(r"^nvidia-cuda-runtime-cu\d+\s*[=~<>!]=*\s*(\d+)\.(\d+)")


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def torch_cuda_from_metadata(version: str, requires: list[str] | None) -> str | None:
    """The CUDA version a torch wheel was built for: from "+cu121", else its CUDA runtime pin."""
    m = _LOCAL_CUDA_RE.search(version)
    if m:
        return f"{m.group(1)}.{m.group(2)}"
    for req in requires or []:
        r = _CUDA_RUNTIME_RE.match(req.strip())
        if r:
            return f"{r.group(1)}.{r.group(2)}"
    return None


def probe_versions() -> Software:
    """torch, torch's CUDA, NCCL (from the nvidia-nccl wheels), Python and rigcheck versions."""
    sw = Software(python_version=platform.python_version(), rigcheck_version=rigcheck.__version__)
    torch = _version("torch")
    sw.torch_version = torch
    if torch is None:
        sw.mark_missing("torch_version", Missing.NOT_IN_SOURCE)
        sw.mark_missing("torch_cuda_version", Missing.NOT_IN_SOURCE)
    else:
        sw.torch_cuda_version = torch_cuda_from_metadata(torch, metadata.requires("torch"))
        if sw.torch_cuda_version is None:  # a CPU-only build, or one that does not say
            sw.mark_missing("torch_cuda_version", Missing.NOT_IN_SOURCE)
    sw.nccl_version = next((v for d in NCCL_DISTRIBUTIONS if (v := _version(d)) is not None), None)
    if sw.nccl_version is None:
        sw.mark_missing("nccl_version", Missing.NOT_IN_SOURCE)
    return sw

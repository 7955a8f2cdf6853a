"""The one door to NVML: every call goes through :func:`call`, which names the function once and maps what
pynvml raises to a reason (as nvitop's ``nvmlQuery`` does). The only module of rigcheck that imports pynvml.

How an NVML return code reads (:func:`reason_for`): NotSupported -> not_supported, NoPermission ->
no_permission, GpuIsLost -> gpu_lost, a function the driver (or the installed pynvml) lacks, or a struct
version it does not know -> driver_too_old, anything else -> error. What a caller then does with the reason
(a Diagnostic, a cache of absent functions, a GPU given up on) is its own business.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

import pynvml

from rigcheck.errors import ProbeError
from rigcheck.model.snapshot import Missing, NvmlState
from rigcheck.probe.nvml.constants import (
    ERR_ARGUMENT_VERSION_MISMATCH,
    ERR_DRIVER_NOT_LOADED,
    ERR_FUNCTION_NOT_FOUND,
    ERR_GPU_IS_LOST,
    ERR_LIB_RM_VERSION_MISMATCH,
    ERR_LIBRARY_NOT_FOUND,
    ERR_NO_PERMISSION,
    ERR_NOT_SUPPORTED,
    FABRIC_INFO_V3,
    PYNVML_ATTR,
)
from rigcheck.probe.nvml.library import FabricInfo, NvmlLibrary

log = logging.getLogger(__name__)

T = TypeVar("T")

_REASONS = {
    ERR_NOT_SUPPORTED: Missing.NOT_SUPPORTED,
    ERR_NO_PERMISSION: Missing.NO_PERMISSION,
    ERR_GPU_IS_LOST: Missing.GPU_LOST,
    ERR_FUNCTION_NOT_FOUND: Missing.DRIVER_TOO_OLD,
    ERR_ARGUMENT_VERSION_MISMATCH: Missing.DRIVER_TOO_OLD,
}


def reason_for(code: int | None) -> Missing:
    """The reason a value is missing, from the NVML return code of its call (or of its field value)."""
    return _REASONS.get(code, Missing.ERROR) if code is not None else Missing.ERROR


class NvmlFailure(Exception):
    """One NVML call failed: which function, why (the reason a record keeps), and the NVML return code.

    ``error`` is pynvml's own words ("NVMLError_NotSupported: Not Supported"); ``detail`` prefixes the function.
    """

    def __init__(self, function: str, error: str, code: int | None) -> None:
        super().__init__(f"{function}: {error}")
        self.function = function
        self.error = error
        self.code = code
        self.reason = reason_for(code)
        self.detail = f"{function}: {error}"


def call(lib: NvmlLibrary, name: str, fn: Callable[[], T]) -> T:
    """``fn()``, the NVML function ``name``: its result, or NvmlFailure (never a pynvml error).

    A function the installed pynvml does not have fails as FunctionNotFound without being called.
    """
    if not hasattr(lib, PYNVML_ATTR.get(name, name)):
        raise NvmlFailure(name, "not available", ERR_FUNCTION_NOT_FOUND)
    try:
        return fn()
    except pynvml.NVMLError as exc:
        raise NvmlFailure(name, f"{type(exc).__name__}: {exc}", getattr(exc, "value", None)) from None


def real_library() -> NvmlLibrary:
    """nvidia-ml-py's ``pynvml`` module (it loads libnvidia-ml.so only in nvmlInit)."""
    lib: NvmlLibrary = pynvml
    return lib


def fabric_info_struct(version: int | None) -> FabricInfo:
    """A pynvml struct for nvmlDeviceGetGpuFabricInfoV to fill: ``version`` FABRIC_INFO_V3 or _V2 (the struct
    carries its version), or None for the deprecated nvmlDeviceGetGpuFabricInfo's unversioned struct."""
    if version is None:
        info: FabricInfo = pynvml.c_nvmlGpuFabricInfo_t()
    elif version == FABRIC_INFO_V3:
        info = pynvml.c_nvmlGpuFabricInfo_v3_t()
    else:
        info = pynvml.c_nvmlGpuFabricInfo_v2_t()
    return info


_INIT_STATES: dict[int, NvmlState] = {
    ERR_LIBRARY_NOT_FOUND: "library_not_found",
    ERR_DRIVER_NOT_LOADED: "driver_not_loaded",
    ERR_LIB_RM_VERSION_MISMATCH: "version_mismatch",
    ERR_NO_PERMISSION: "no_permission",
}
_INIT_MESSAGES: dict[NvmlState, str] = {
    "library_not_found": "no NVIDIA driver found (libnvidia-ml.so not loadable)",
    "driver_not_loaded": "NVIDIA driver not loaded (libnvidia-ml.so found, but the kernel module is not running)",
    "no_permission": "no permission to talk to the NVIDIA driver (check /dev/nvidia* permissions)",
    "version_mismatch": "NVIDIA driver/library version mismatch (reboot or reload the nvidia kernel module)",
}


NO_GPUS_LISTED = "the NVIDIA driver is loaded but reports no GPUs"


class NoGpuError(ProbeError):
    """NVML gives no GPU to read: it could not start (``state`` says why, ``error`` in NVML's words), or it
    started (``state`` "ok") and lists none."""

    def __init__(self, message: str, state: NvmlState, error: str | None = None) -> None:
        super().__init__(message)
        self.state: NvmlState = state
        self.error = error


def start(lib: NvmlLibrary) -> None:
    """``nvmlInit``; NoGpuError with one line saying why when NVML cannot start at all."""
    try:
        call(lib, "nvmlInit", lib.nvmlInit)
    except NvmlFailure as failure:
        state = _INIT_STATES.get(failure.code, "error") if failure.code is not None else "error"
        message = _INIT_MESSAGES.get(state, f"NVML could not start: {failure.error}")
        raise NoGpuError(message, state, failure.error) from None


def stop(lib: NvmlLibrary) -> None:
    """``nvmlShutdown``; a failure there changes nothing that was read, so it is only logged."""
    try:
        call(lib, "nvmlShutdown", lib.nvmlShutdown)
    except NvmlFailure as failure:
        log.debug("nvmlShutdown failed: %s", failure.error)

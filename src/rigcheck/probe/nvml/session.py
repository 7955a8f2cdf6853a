"""One snapshot's calls into NVML: the cache of functions the driver lacks, the diagnostics, and the reader of
one GPU that stops asking once the GPU has fallen off the bus."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TypeVar

from rigcheck.model.snapshot import Diagnostic, Gpu, Missing
from rigcheck.probe.nvml.calls import NvmlFailure, call
from rigcheck.probe.nvml.constants import ERR_FUNCTION_NOT_FOUND, ERR_INVALID_ARGUMENT
from rigcheck.probe.nvml.library import NvmlLibrary

log = logging.getLogger(__name__)

T = TypeVar("T")


class Session:
    """Calls into NVML for one snapshot: a function found missing is not asked for again (and is listed in
    ``missing_functions``); any other error is a Diagnostic naming the function, unless the caller expects
    its code (``quiet``)."""

    def __init__(self, lib: NvmlLibrary) -> None:
        self.lib = lib
        self.missing_functions: list[str] = []
        self.diagnostics: list[Diagnostic] = []

    def _note_missing(self, name: str) -> None:
        if name not in self.missing_functions:
            self.missing_functions.append(name)
            log.debug("NVML function %s is not available", name)

    def call(self, name: str, fn: Callable[[], T], *, gpu: int | None = None, quiet: frozenset[int] = frozenset()) -> T:
        if name in self.missing_functions:
            raise NvmlFailure(name, "not available", ERR_FUNCTION_NOT_FOUND)
        try:
            return call(self.lib, name, fn)
        except NvmlFailure as failure:
            if failure.reason is Missing.DRIVER_TOO_OLD:
                self._note_missing(name)
            elif failure.reason is Missing.ERROR and failure.code not in quiet:
                self.diagnostics.append(Diagnostic(source="nvml", message=failure.detail, gpu=gpu))
            raise


class GpuReader:
    """Reads one GPU; after GpuIsLost every further read is skipped and marked gpu_lost."""

    def __init__(self, session: Session, gpu: Gpu) -> None:
        self.s = session
        self.gpu = gpu
        self.lost_detail: str | None = None

    def fail(self, fields: Sequence[str], reason: Missing, detail: str) -> None:
        if reason is Missing.GPU_LOST and self.lost_detail is None:
            self.lost_detail = detail
        for field in fields:
            self.gpu.mark_missing(field, reason)

    def get(self, fields: str | Sequence[str], name: str, fn: Callable[[], T], *, enum_arg: bool = False) -> T | None:
        return self.first(fields, [(name, fn)], enum_arg=enum_arg)

    def first(
        self, fields: str | Sequence[str], attempts: Sequence[tuple[str, Callable[[], T]]], *, enum_arg: bool = False
    ) -> T | None:
        """Try versioned symbols in order, moving on only when the driver lacks one.

        ``enum_arg``: the read takes an enum value that a driver may predate; its InvalidArgument then means
        "not supported by this driver", not an error worth a diagnostic."""
        names = (fields,) if isinstance(fields, str) else tuple(fields)
        if self.lost_detail is not None:
            for field in names:
                self.gpu.mark_missing(field, Missing.GPU_LOST)
            return None
        quiet = frozenset({ERR_INVALID_ARGUMENT}) if enum_arg else frozenset()
        for i, (name, fn) in enumerate(attempts):
            try:
                return self.s.call(name, fn, gpu=self.gpu.index, quiet=quiet)
            except NvmlFailure as failure:
                if failure.reason is Missing.DRIVER_TOO_OLD and i + 1 < len(attempts):
                    continue
                reason = failure.reason
                if enum_arg and failure.code == ERR_INVALID_ARGUMENT:
                    reason = Missing.NOT_SUPPORTED
                self.fail(names, reason, failure.detail)
                return None
        return None

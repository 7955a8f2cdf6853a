"""A GPU nvidia-smi lists but cannot read becomes a placeholder (``read_error`` set): the doctor fails it.

Two shapes in real outputs:

- the GPU is printed, but every reading is an error: the table's ``ERR!`` in every cell after an Xid 119
  (NVIDIA/open-gpu-kernel-modules#446), ``Unknown Error`` / ``GPU is lost`` in ``-q`` and ``-q -x``;
  the memory cell may still parse (the driver keeps it), so it does not count as a reading;
- nvidia-smi prints ``Unable to determine the device handle for GPU 0000:0B:00.0: Unknown Error`` (or
  ``GPU is lost.  Reboot the system to recover this GPU``) in place of the GPU, alone or above the GPUs
  it could read.

A placeholder keeps what was read of its identity (index, bus id, name, UUID); every other field is null
with the read error as its reason.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from rigcheck.model.snapshot import Diagnostic, Gpu, Missing
from rigcheck.readers.smi.values import na_reason, text_lines

# Readings nvidia-smi takes from the GPU each time: when none of those printed holds a value and they are
# errors, the GPU cannot be read. Identity (name, bus id), modes and memory usage come from the driver.
READINGS: dict[str, str] = {
    "temp_c": "temperature",
    "power_draw_w": "power draw",
    "power_limit_w": "power limit",
    "fan_percent": "fan",
    "utilization_gpu_percent": "utilization",
    "pstate": "P-state",
    "clock_graphics_mhz": "graphics clock",
    "clock_sm_mhz": "SM clock",
    "clock_mem_mhz": "memory clock",
}
_ERRORS = frozenset({Missing.ERROR, Missing.GPU_LOST})
_NOT_PRINTED = frozenset({Missing.NOT_IN_SOURCE, Missing.TRUNCATED})
_IDENTITY = ("name", "uuid", "pci_bus_id")


def unreadable_reason(gpu: Gpu) -> tuple[Missing, str] | None:
    """(reason, what failed) when nvidia-smi could not read this GPU; None when it could."""
    if gpu.read_error is not None:
        return None
    lost = sorted(f for f, r in gpu.missing.items() if r is Missing.GPU_LOST)
    if lost:
        return Missing.GPU_LOST, "nvidia-smi reports the GPU lost or needing a reset"
    printed = [f for f in READINGS if getattr(gpu, f) is not None or gpu.missing.get(f) not in _NOT_PRINTED]
    if not printed or any(getattr(gpu, f) is not None for f in printed):
        return None
    errors = [f for f in printed if gpu.missing.get(f) in _ERRORS]
    if len(errors) < min(2, len(printed)):
        return None
    return Missing.ERROR, "nvidia-smi could not read it: errors for " + ", ".join(READINGS[f] for f in errors)


def placeholder(gpu: Gpu, reason: Missing, detail: str) -> Gpu:
    """``gpu`` reduced to its identity, marked unreadable: the checks see only the read error."""
    out = Gpu(index=gpu.index, read_error=reason, read_error_detail=detail)
    for attr in _IDENTITY:
        value = getattr(gpu, attr)
        if value is not None and na_reason(str(value)) is None:
            setattr(out, attr, value)
        elif attr in gpu.missing:
            out.mark_missing(attr, gpu.missing[attr])
    out.mark_unset_missing(reason)
    return out


def mark_unreadable(gpus: list[Gpu], source: str, diagnostics: list[Diagnostic], where: dict[int, str]) -> None:
    """Replace each GPU that could not be read by its placeholder (``where``: GPU index -> "line 12")."""
    for i, gpu in enumerate(gpus):
        found = unreadable_reason(gpu)
        if found is None:
            continue
        reason, what = found
        place = f" ({where[gpu.index]})" if gpu.index in where else ""
        gpus[i] = placeholder(gpu, reason, f"{what}{place}")
        diagnostics.append(Diagnostic(source=source, message=f"GPU unreadable: {what}{place}", gpu=gpu.index))


# "... for GPU0000:3B:00.0: Unknown Error" (older drivers) or "... for GPU1: 0000:34:00.0: Unknown Error" (newer
# ones put nvidia-smi's index first).
_HANDLE_ERROR = re.compile(
    r"Unable to (?:determine|detect) the device handle for GPU\s*(?:(?P<ordinal>\d+)\s*:\s*)?"
    r"(?P<bus>[0-9A-Fa-f]+:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])\s*:\s*(?P<error>.*?)\s*$",
    re.IGNORECASE,
)


_BUS = re.compile(r"^[0-9A-Fa-f]+:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f]$")


def _bus_key(bus: str) -> str:
    """``0000:0C:00.0`` and ``00000000:0c:00.0`` name the same device."""
    domain, rest = bus.split(":", 1)
    return f"{int(domain, 16):08x}:{rest}".lower()


class HandleError(NamedTuple):
    """A GPU nvidia-smi could not open: the line, its bus id as printed, why, the message, and the index nvidia-smi
    gives it where it prints one."""

    line: int
    bus: str
    reason: Missing
    message: str
    printed_index: int | None


def handle_errors(text: str) -> list[HandleError]:
    """The GPUs nvidia-smi could not open, in file order."""
    out: list[HandleError] = []
    for number, line in enumerate(text_lines(text), start=1):
        match = _HANDLE_ERROR.search(line)
        if match is None:
            continue
        error = match.group("error").split(".")[0].strip()
        reason = na_reason(error) or Missing.ERROR
        if reason not in _ERRORS:
            reason = Missing.ERROR
        ordinal = match.group("ordinal")
        out.append(
            HandleError(number, match.group("bus"), reason, match.group(0).strip(), int(ordinal) if ordinal else None)
        )
    return out


def add_handle_errors(text: str, gpus: list[Gpu], source: str, diagnostics: list[Diagnostic]) -> None:
    """Add a placeholder for each GPU nvidia-smi could not open, unless the text lists it anyway.

    Its index is the one nvidia-smi prints with the error where it is free, else the first one missing from the
    GPUs listed (nvidia-smi skips the index of a GPU it could not open), else the next after them.
    """
    listed = {_bus_key(g.pci_bus_id) for g in gpus if g.pci_bus_id and _BUS.match(g.pci_bus_id)}
    for number, bus, reason, message, printed in handle_errors(text):
        if _bus_key(bus) in listed:
            continue
        listed.add(_bus_key(bus))
        taken = {g.index for g in gpus}
        gap = next(i for i in range(len(taken) + 1) if i not in taken)
        index = printed if printed is not None and printed not in taken else gap
        gpu = Gpu(index=index, pci_bus_id=bus, read_error=reason, read_error_detail=f"{message} (line {number})")
        gpu.mark_unset_missing(reason)
        gpus.append(gpu)
        diagnostics.append(Diagnostic(source=source, message=f"GPU unreadable: {message} (line {number})", gpu=index))
    gpus.sort(key=lambda g: g.index)

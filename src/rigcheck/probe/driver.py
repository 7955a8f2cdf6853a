"""Is the NVIDIA driver working here? The kernel module, the NVIDIA GPUs on the PCI bus, and how NVML's start
went, in one DriverState; and the same facts read from the text a broken driver leaves behind.

Live (:func:`probe_driver`): ``/sys/module/nvidia/version`` (the loaded module's version; NVIDIA's README names
it as the way to ask), else the ``NVRM version:`` line of ``/proc/driver/nvidia/version``; the GPUs on the bus
from sysfs (rigcheck.probe.sysfs.pci_nvidia_gpus); NVML's state from the caller.

From text (:func:`driver_state_from_text`): nvidia-smi's own failure lines ("Failed to initialize NVML: ...",
"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver", "NVIDIA-SMI couldn't find
libnvidia-ml.so"), the kernel's "NVRM: API mismatch" message in any log framing (dmesg timestamps, journal
indentation, syslog's ``#012`` for a newline), and ``/proc/driver/nvidia/version``.
"""

from __future__ import annotations

import re
from pathlib import Path

from rigcheck.inputs import read_sys_text
from rigcheck.model.snapshot import DriverState, Missing, NvmlState
from rigcheck.probe.sysfs import pci_nvidia_gpus

_VERSION = r"(\d+(?:\.\d+)+)"
# "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.173.02  Tue Jun 23 ..." (proprietary) or
# "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  565.57.01  Release Build  (...)" (open modules).
_PROC_VERSION_RE = re.compile(r"NVRM version:.*?Kernel Module(?: for \S+)?\s+" + _VERSION)
# After the log framing is removed: "the client has the version 535.54.03, but this kernel module has the
# version 530.30.02." (older) or "the client 'kwin_wayland' (pid 1005) has the version 595.84, but ..." (newer).
_API_MISMATCH_RE = re.compile(
    r"API mismatch: the client (?:'[^']*' \(pid \d+\) )?has the version " + _VERSION + r", but this kernel module "
    r"has the version " + _VERSION
)
# A continuation line of a kernel message: its framing up to "NVRM:" (a newline or syslog's #012, then a
# timestamp, a journal indent or nothing).
_CONTINUATION_RE = re.compile(r"(?:#012|\n)[^\n]*?NVRM:")
_NVML_LIBRARY_RE = re.compile(r"NVML library version:\s*" + _VERSION)
_INIT_FAILED_RE = re.compile(r"Failed to initialize NVML: ([^\r\n]+)")

# nvidia-smi's words for nvmlInit's errors (nvml.h nvmlErrorString), lower-cased, and the state each means.
_INIT_ERROR_STATES: dict[str, NvmlState] = {
    "driver/library version mismatch": "version_mismatch",
    "insufficient permissions": "no_permission",
    "driver not loaded": "driver_not_loaded",
    "nvml shared library not found": "library_not_found",
}
# nvidia-smi's messages when NVML does not start at all (they replace "Failed to initialize NVML").
_SMI_MESSAGES: tuple[tuple[str, NvmlState], ...] = (
    ("couldn't communicate with the NVIDIA driver", "driver_not_loaded"),
    ("couldn't find libnvidia-ml.so", "library_not_found"),
    ("nvml error: driver/library version mismatch", "version_mismatch"),  # nvidia-container-cli
)


def parse_proc_version(text: str) -> str | None:
    """The kernel module's version from /proc/driver/nvidia/version (or a log line quoting it)."""
    m = _PROC_VERSION_RE.search(text)
    return m.group(1) if m else None


def api_mismatch(text: str) -> tuple[str, str] | None:
    """(the client's version, the kernel module's version) from the kernel's "NVRM: API mismatch" message."""
    start = text.find("API mismatch")
    if start < 0:
        return None
    joined = " ".join(_CONTINUATION_RE.sub(" ", ascii_quotes(text[start : start + 600])).split())
    m = _API_MISMATCH_RE.search(joined)
    return (m.group(1), m.group(2)) if m else None


def kernel_module_version(root: Path = Path("/")) -> tuple[str | None, Missing | None]:
    """The loaded nvidia module's version, or None and why (not_supported: no module loaded)."""
    text, reason = read_sys_text(root / "sys/module/nvidia/version")
    if text is not None and text.strip():
        return text.strip(), None
    proc, proc_reason = read_sys_text(root / "proc/driver/nvidia/version")
    version = parse_proc_version(proc) if proc is not None else None
    if version is not None:
        return version, None
    return None, reason or proc_reason or Missing.NOT_SUPPORTED


def probe_driver(root: Path, nvml: NvmlState, nvml_error: str | None = None) -> DriverState:
    """The driver's state on this machine, given how NVML's start went (``nvml_error``: NVML's words)."""
    state = DriverState(nvml=nvml, nvml_error=nvml_error)
    state.kernel_module_version, reason = kernel_module_version(root)
    if reason is not None:
        state.mark_missing("kernel_module_version", reason)
    state.mark_missing("library_version", Missing.NOT_IN_SOURCE)  # NVML cannot say when it fails to start
    state.pci_gpus, reason = pci_nvidia_gpus(root)
    if reason is not None:
        state.mark_missing("pci_gpus", reason)
    return state


# Typographic quotes, as a paste from a web page, a chat or a word processor prints them, read as ASCII ones: each
# maps one character to one, so positions in the normalised text are positions in the original.
_QUOTES = str.maketrans(
    {
        "\u2018": "'",  # left single quotation mark
        "\u2019": "'",  # right single quotation mark (the apostrophe in "couldn’t")
        "\u201a": "'",
        "\u201b": "'",
        "\u2032": "'",  # prime
        "\u02bc": "'",  # modifier letter apostrophe
        "\u00b4": "'",  # acute accent, typed for an apostrophe
        "\uff07": "'",  # fullwidth apostrophe
        "\u201c": '"',
        "\u201d": '"',
        "\u201e": '"',
        "\u201f": '"',
        "\u2033": '"',
    }
)


def ascii_quotes(text: str) -> str:
    """``text`` with typographic quotes and apostrophes as ASCII ones (same length, same positions)."""
    return text.translate(_QUOTES)


def _nvml_state_from_text(text: str) -> tuple[NvmlState, str] | None:
    text = ascii_quotes(text)
    m = _INIT_FAILED_RE.search(text)
    if m is not None:
        words = m.group(1).strip()
        return _INIT_ERROR_STATES.get(words.lower(), "error"), words
    lowered = text.lower()
    for phrase, state in _SMI_MESSAGES:
        at = lowered.find(phrase.lower())
        if at >= 0:
            line_start = text.rfind("\n", 0, at) + 1
            line_end = text.find("\n", at)
            return state, text[line_start : line_end if line_end >= 0 else len(text)].strip()
    return None


def says_nvml_failed(text: str) -> bool:
    """Whether the text holds nvidia-smi's (or NVML's) own failure words, not only the kernel's NVRM lines."""
    return _nvml_state_from_text(text) is not None


def driver_state_from_text(text: str) -> DriverState | None:
    """The driver's state as a saved output tells it; None when the text says nothing about the driver.

    What the text does not say stays null with reason not_in_source; the PCI bus is never in such text.
    """
    init = _nvml_state_from_text(text)
    mismatch = api_mismatch(text)
    module = parse_proc_version(text)
    if init is None and mismatch is None and module is None:
        return None
    state = DriverState()
    if init is not None:
        state.nvml, state.nvml_error = init
    elif mismatch is not None:  # the kernel refused a client: NVML would fail the same way
        state.nvml = "version_mismatch"
    if mismatch is not None:
        state.library_version, state.kernel_module_version = mismatch
    if module is not None:
        state.kernel_module_version = module
    library = _NVML_LIBRARY_RE.search(text)
    if library is not None and state.library_version is None:
        state.library_version = library.group(1)
    state.mark_unset_missing(Missing.NOT_IN_SOURCE, ("nvml", "kernel_module_version", "library_version", "pci_gpus"))
    return state

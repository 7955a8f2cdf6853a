"""Kernel-log events (Xid, SXid, PCIe AER, other NVRM lines) and how the kernel log was read.

Strings are kept as printed (bus id, time, process): the log is the evidence, and the checks map a bus id to a
GPU themselves. A snapshot that never read a kernel log has no events and no ``kernel_log`` (both are left out
of its JSON, so snapshots written before these fields existed read back unchanged).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

KernelEventKind = Literal["xid", "sxid", "aer", "nvrm"]


class KernelEvent(BaseModel):
    """One kernel-log line that says something about a GPU, an NVSwitch or their PCIe links."""

    model_config = ConfigDict(extra="forbid")

    kind: KernelEventKind
    code: int | None = None  # the Xid / SXid number; null for AER and other NVRM lines
    pci_bus_id: str | None = None  # as printed: "PCI:0000:03:00", "0000:03:00", "0000:00:08.0"
    time: str | None = None  # the line's timestamp as printed ("Sun Feb 23 16:24:18 2025", "31543.449440")
    pid: int | None = None  # new-format Xid lines only; null for "<unknown>" or the old format
    process: str | None = None  # name= of new-format Xid lines; null for "<unknown>"
    message: str  # the text after the code (Xid/SXid) or after the prefix, as printed
    # the printing device where the line names it ("nvidia-nvswitch1"), or the GPU ordinal a GSP line gives
    # ("GPU6": the driver's numbering)
    device: str | None = None


class KernelLogRead(BaseModel):
    """How the kernel log was read: by what, since when, and why not when it could not be."""

    model_config = ConfigDict(extra="forbid")

    method: str  # "dmesg", "journalctl -k", "file"
    since: str | None = None  # --since as given; null: since boot (live) or the whole file
    # Events with a parseable time before --since: read but not counted (left out of kernel_events).
    before_since: int = 0
    # Why the log could not be read (no permission, no dmesg/journalctl): the check says `unknown` with it.
    unreadable: str | None = None

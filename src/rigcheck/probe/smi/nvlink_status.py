"""Parse ``nvidia-smi nvlink -s`` (``--status``) into a Snapshot.

The output is a header per GPU, ``GPU 0: Tesla V100-SXM2-32GB (UUID: GPU-...)``, followed by one
line per link, ``\\t Link 0: 25.781 GB/s`` (or ``<inactive>``), or by one NVML message such as
``NVML: Unable to retrieve NVLink information as all links are inActive``.

What a GPU gets:
- ``index``, ``name``, ``uuid`` from its header; everything else is NOT_IN_SOURCE.
- ``nvlinks``: one :class:`NvLink` per printed link, ``active`` True with ``speed_gbps`` (GB/s per
  direction, as printed), or ``active`` False for ``<inactive>`` (speed REPORTED_NA).
- A GPU with an NVML message instead of links: ``nvlinks`` is None with REPORTED_NA (the state
  could not be read), and the message is kept in ``diagnostics``.
- A GPU header followed by no line at all: ``nvlinks`` is ``[]`` (nvidia-smi listed no link).

An empty file is a ParseError ("empty file"), as for every parser, although nvidia-smi prints
nothing at all on machines without NVLink (the H100 VM in the corpus): the caller that ran the
command knows that case and can say "no NVLink" itself; a file cannot tell it from a failed capture.
"""

from __future__ import annotations

import re

from rigcheck.errors import ParseError
from rigcheck.model.snapshot import Diagnostic, Gpu, Missing, NvLink, Snapshot, Source
from rigcheck.probe.smi.values import absent_reason, check_text, finish_missing, parse_gbps, text_lines

SOURCE = "nvlink-status"

_GPU = re.compile(r"^\s*GPU\s+(?P<index>\d+):\s*(?P<name>.*?)\s*(?:\(UUID:\s*(?P<uuid>[^)]*?)\s*\))?\s*$")
_LINK = re.compile(r"^\s*Link\s+(?P<link>\d+)\s*:\s*(?P<value>.*?)\s*$", re.IGNORECASE)
_MESSAGE = re.compile(r"^\s*(NVML|Failed|Unable|Error)\b", re.IGNORECASE)


def parse_nvlink_status(text: str, path: str | None = None) -> Snapshot:
    """Parse ``nvidia-smi nvlink -s`` output; ParseError for empty, binary or unrelated text."""
    check_text(text, path)
    snapshot = Snapshot(source=Source(kind="nvlink-status", path=path))
    diagnostics = snapshot.diagnostics
    current: Gpu | None = None
    links: dict[int, list[NvLink]] = {}
    lines = text_lines(text)
    if not any(_GPU.match(line) for line in lines):
        absent = absent_reason(text)
        if absent is not None:
            snapshot.gpu_absent_reason = absent
            return snapshot
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        header = _GPU.match(line)
        if header is not None:
            current = Gpu(index=int(header.group("index")), name=header.group("name") or None)
            if header.group("uuid"):
                current.uuid = header.group("uuid")
            snapshot.gpus.append(current)
            links[id(current)] = []
            continue
        link = _LINK.match(line)
        if link is not None:
            if current is None:
                raise ParseError("link line before any GPU header", path=path, line=number)
            value = link.group("value")
            nvlink = NvLink(link=int(link.group("link")))
            if "inactive" in value.lower():
                nvlink.active = False
                nvlink.mark_missing("speed_gbps", Missing.REPORTED_NA)
            else:
                speed = parse_gbps(value)
                if speed.value is not None:
                    nvlink.active = True
                    nvlink.speed_gbps = speed.value
                else:
                    nvlink.mark_missing("speed_gbps", speed.reason or Missing.ERROR)
                    nvlink.mark_missing("active", speed.reason or Missing.ERROR)
                    if speed.error is not None:
                        diagnostics.append(
                            Diagnostic(source=SOURCE, message=f"{speed.error} (line {number})", gpu=current.index)
                        )
            links[id(current)].append(nvlink)
            continue
        if _MESSAGE.match(line):
            message = line.strip()
            if current is not None:
                current.mark_missing("nvlinks", Missing.REPORTED_NA)
            diagnostics.append(
                Diagnostic(
                    source=SOURCE,
                    message=f"{message} (line {number})",
                    gpu=current.index if current is not None else None,
                )
            )
            continue
        if current is None:
            raise ParseError(
                "not `nvidia-smi nvlink -s` output (expected a line like 'GPU 0: NAME (UUID: ...)')",
                path=path,
                line=number,
            )
        message = f"line not understood: {line.strip()!r} (line {number})"
        diagnostics.append(Diagnostic(source=SOURCE, message=message, gpu=current.index))

    if not snapshot.gpus:
        raise ParseError("no GPU header found (not `nvidia-smi nvlink -s` output?)", path=path)
    for gpu in snapshot.gpus:
        gpu_links = links[id(gpu)]
        if gpu_links or "nvlinks" not in gpu.missing:
            gpu.nvlinks = gpu_links
            gpu.missing.pop("nvlinks", None)
            for nvlink in gpu_links:
                finish_missing(nvlink)
        finish_missing(gpu)
    return snapshot

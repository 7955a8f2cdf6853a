"""Parse ``nvidia-smi nvlink -s`` (``--status``) into a Snapshot.

The output is a header per GPU, ``GPU 0: Tesla V100-SXM2-32GB (UUID: GPU-...)``, followed by one
line per link, ``\\t Link 0: 25.781 GB/s`` (or ``<inactive>``), or by one NVML message such as
``NVML: Unable to retrieve NVLink information as all links are inActive`` (spelled ``inActive``,
``inactive``, ``NVML:Unable``, ``Nvlink`` by different drivers).

What a GPU gets:
- ``index``, ``name``, ``uuid`` from its header; everything else is NOT_IN_SOURCE.
- ``nvlinks``: one :class:`NvLink` per printed link, ``active`` True with ``speed_gbps`` (GB/s per
  direction, as printed), or ``active`` False for ``<inactive>`` (speed REPORTED_NA).
- A GPU whose links are "all inactive": every one of its links, ``active`` False. How many it has
  comes from a GPU of the same name in the same output that printed its links, else from the GPU
  catalog (facts/catalog.py, each count with its datasheet); when neither knows, ``nvlinks`` is ``[]``
  and a Diagnostic says that the links exist but none is up. The message is kept in ``diagnostics``.
- Another NVML message (an error reading the links): ``nvlinks`` is None with REPORTED_NA.
- A GPU header followed by no line at all: ``nvlinks`` is ``[]`` (nvidia-smi listed no link).

Lines that are not part of the output (a prompt, an author's ``....``) are kept as Diagnostics rather than
refused, as long as the text has GPU headers at all; a link line before the first header is refused (the top of
the output was cut off, so whose link it is cannot be told).

An empty file is a ParseError ("empty file"), as for every parser, although nvidia-smi prints
nothing at all on machines without NVLink (the H100 VM in the corpus): the caller that ran the
command knows that case and can say "no NVLink" itself; a file cannot tell it from a failed capture.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from rigcheck.errors import ParseError
from rigcheck.facts.catalog import lookup
from rigcheck.model.snapshot import Diagnostic, Gpu, Missing, NvLink, Snapshot, Source
from rigcheck.readers.smi.values import absent_reason, check_text, finish_missing, parse_gbps, text_lines

SOURCE = "nvlink-status"

_GPU = re.compile(r"^\s*GPU\s+(?P<index>\d+):\s*(?P<name>.*?)\s*(?:\(UUID:\s*(?P<uuid>[^)]*?)\s*\))?\s*$")
_LINK = re.compile(r"^\s*Link\s+(?P<link>\d+)\s*:\s*(?P<value>.*?)\s*$", re.IGNORECASE)
_MESSAGE = re.compile(r"^\s*(NVML|Failed|Unable|Error)\b", re.IGNORECASE)
# "Unable to retrieve NVLink information as all links are inActive" and its spellings.
_ALL_INACTIVE = re.compile(r"all\s+(?:nv)?links\s+are\s+in-?active", re.IGNORECASE)
# A link that is down: "<inactive>", and the words other tools print for it.
_DOWN = re.compile(r"\b(in-?active|disabled|down)\b", re.IGNORECASE)
# A placeholder UUID an author typed instead of the real one ("UUID: ...").
_ELIDED = re.compile(r"^\.*$")


@dataclass
class _Block:
    """One GPU header and what followed it."""

    gpu: Gpu
    links: list[NvLink] = field(default_factory=list)
    all_inactive: str | None = None  # the message, when NVML said every link is inactive
    error: bool = False  # another NVML message: the state could not be read


def parse_nvlink_status(text: str, path: str | None = None) -> Snapshot:
    """Parse ``nvidia-smi nvlink -s`` output; ParseError for empty, binary or unrelated text."""
    check_text(text, path)
    snapshot = Snapshot(source=Source(kind="nvlink-status", path=path))
    lines = text_lines(text)
    if not any(_GPU.match(line) for line in lines):
        absent = absent_reason(text)
        if absent is not None:
            snapshot.gpu_absent_reason = absent
            return snapshot
        first = next((n for n, line in enumerate(lines, start=1) if line.strip()), None)
        raise ParseError(
            "not `nvidia-smi nvlink -s` output (expected a line like 'GPU 0: NAME (UUID: ...)')", path=path, line=first
        )
    blocks = _read_blocks(lines, snapshot.diagnostics, path)
    _fill_all_inactive(blocks, snapshot.diagnostics)
    for block in blocks:
        gpu = block.gpu
        if block.error and not block.links and block.all_inactive is None:
            gpu.mark_missing("nvlinks", Missing.REPORTED_NA)
        else:
            gpu.nvlinks = block.links
            for nvlink in block.links:
                finish_missing(nvlink)
        finish_missing(gpu)
        snapshot.gpus.append(gpu)
    return snapshot


def _read_blocks(lines: list[str], diagnostics: list[Diagnostic], path: str | None) -> list[_Block]:
    blocks: list[_Block] = []
    current: _Block | None = None
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        header = _GPU.match(line)
        if header is not None:
            gpu = Gpu(index=int(header.group("index")), name=header.group("name") or None)
            uuid = header.group("uuid")
            if uuid and not _ELIDED.match(uuid):
                gpu.uuid = uuid
            current = _Block(gpu)
            blocks.append(current)
            continue
        gpu_index = current.gpu.index if current is not None else None
        link = _LINK.match(line)
        if link is not None:
            if current is None:  # the top of the output was cut off: whose link is it?
                raise ParseError("link line before any GPU header", path=path, line=number)
            current.links.append(_link(int(link.group("link")), link.group("value"), number, current, diagnostics))
            continue
        if _MESSAGE.match(line) and current is not None:
            if _ALL_INACTIVE.search(line):
                current.all_inactive = line.strip()
            else:
                current.error = True
            diagnostics.append(Diagnostic(source=SOURCE, message=f"{line.strip()} (line {number})", gpu=gpu_index))
            continue
        # A prompt, an author's "....", a line of another command: kept, not guessed at.
        message = f"line not understood: {line.strip()!r} (line {number})"
        diagnostics.append(Diagnostic(source=SOURCE, message=message, gpu=gpu_index))
    return blocks


def _link(number: int, value: str, line: int, block: _Block, diagnostics: list[Diagnostic]) -> NvLink:
    nvlink = NvLink(link=number)
    if _DOWN.search(value):
        nvlink.active = False
        nvlink.mark_missing("speed_gbps", Missing.REPORTED_NA)
        return nvlink
    speed = parse_gbps(value)
    if speed.value is not None:
        nvlink.active = True
        nvlink.speed_gbps = speed.value
        return nvlink
    nvlink.mark_missing("speed_gbps", speed.reason or Missing.ERROR)
    nvlink.mark_missing("active", speed.reason or Missing.ERROR)
    if speed.error is not None:
        diagnostics.append(Diagnostic(source=SOURCE, message=f"{speed.error} (line {line})", gpu=block.gpu.index))
    return nvlink


def _fill_all_inactive(blocks: list[_Block], diagnostics: list[Diagnostic]) -> None:
    """Give a GPU whose links are "all inactive" its links, each inactive, where their number is known."""
    printed: dict[str, int] = {}  # GPU name -> links a GPU of that name printed
    for block in blocks:
        if block.links and block.gpu.name:
            last = max(link.link for link in block.links) + 1
            printed[block.gpu.name] = max(printed.get(block.gpu.name, 0), last)
    for block in blocks:
        if block.all_inactive is None or block.links:
            continue
        count, why = _link_count(block.gpu.name or "", printed)
        if count is None:
            message = "all NVLinks inactive; how many links this GPU has is not known, so none is listed"
        elif count == 0:
            message = f"all NVLinks inactive; {why}: no link to list"
        else:
            block.links = [_inactive(n) for n in range(count)]
            message = f"all NVLinks inactive: links 0-{count - 1} listed as inactive ({why})"
        diagnostics.append(Diagnostic(source=SOURCE, message=message, gpu=block.gpu.index))


def _link_count(name: str, printed: dict[str, int]) -> tuple[int | None, str]:
    """How many links a GPU named ``name`` has: as a GPU of that name printed, else from the catalog."""
    if name in printed:
        return printed[name], f"as many as the other {name} of this output printed"
    spec = lookup(name) if name else None
    if spec is None:
        return None, ""
    return spec.nvlink_links, f"{spec.name} has {spec.nvlink_links} ({spec.source})"


def _inactive(number: int) -> NvLink:
    link = NvLink(link=number, active=False)
    link.mark_missing("speed_gbps", Missing.REPORTED_NA)
    return link

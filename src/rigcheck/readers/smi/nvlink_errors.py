"""Parse ``nvidia-smi nvlink -e`` (``--errorcounters``) into a Snapshot.

The output is a header per GPU, ``GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-...)`` (newer drivers may leave the
UUID out), then one line per link and counter, ``\\t Link 0: Replay Errors: 0``, with blank lines between links.
Drivers print the DL-layer counters NVML names in ``nvmlNvLinkErrorCounter_t``: replay, recovery and CRC. Some
print the CRC counter as two (flit and data CRC, as DCGM does): their sum is ``crc_errors``. A counter a driver
cannot read is ``N/A``: the field is REPORTED_NA.

What a GPU gets: ``index``, ``name``, ``uuid`` from its header and ``nvlinks``, one :class:`NvLink` per link
printed, with ``replay_errors``, ``recovery_errors`` and ``crc_errors``; the link's state and speed are
NOT_IN_SOURCE (``nvlink -s`` has them; combine the two with ``--from A --from B``). A link the author elided
("[...]") is simply not listed. Other counters (Hopper's ECC and data Tx/Rx errors, Blackwell's packet and BER
counters) are one Diagnostic per counter naming every link where it is not zero; any other line is a Diagnostic
of its own. Neither is guessed at.
"""

from __future__ import annotations

import re

from rigcheck.errors import ParseError
from rigcheck.model.snapshot import INPUT_ENDS_EARLY, Diagnostic, Gpu, Missing, NvLink, Snapshot, Source
from rigcheck.readers.smi.ansi import strip_ansi
from rigcheck.readers.smi.values import absent_reason, check_text, finish_missing, na_reason, text_lines

SOURCE = "nvlink-errors"

_GPU = re.compile(r"^\s*GPU\s+(?P<index>\d+):\s*(?P<name>.*?)\s*(?:\(UUID:\s*(?P<uuid>[^)]*?)\s*\))?\s*$")
# "Link 0: Replay Errors: 0" — the counter's label, then its value.
_COUNTER = re.compile(r"^\s*Link\s+(?P<link>\d+)\s*:\s*(?P<label>[^:]*?)\s*:\s*(?P<value>.*?)\s*$", re.IGNORECASE)
_ERROR_LINE = re.compile(r"^\s*Link\s+\d+\s*:\s*[^:]*errors?\s*:", re.IGNORECASE | re.MULTILINE)
_ELIDED_UUID = re.compile(r"^\.*$")

# Counter label (lower case, words) -> NvLink field. Several CRC labels add up to one figure.
_FIELDS = (("replay", "replay_errors"), ("recovery", "recovery_errors"), ("crc", "crc_errors"))


def looks_like_nvlink_errors(text: str) -> bool:
    """A GPU header and at least one ``Link N: ... Errors: value`` line."""
    return bool(_ERROR_LINE.search(text)) and any(_GPU.match(line) for line in text_lines(text)[:50])


def _field_for(label: str) -> str | None:
    words = label.lower()
    if "lane" in words or ("errors" not in words and "error" not in words):
        return None  # a per-lane (-ec) counter or a packet/BER figure: not one of the three
    return next((name for key, name in _FIELDS if key in words), None)


def parse_nvlink_errors(text: str, path: str | None = None) -> Snapshot:
    """Parse ``nvidia-smi nvlink -e`` output; ParseError for empty, binary or unrelated text."""
    check_text(text, path)
    snapshot = Snapshot(source=Source(kind="nvlink-errors", path=path))
    lines = text_lines(text)
    if not any(_GPU.match(line) for line in lines):
        absent = absent_reason(text)
        if absent is not None:
            snapshot.gpu_absent_reason = absent
            return snapshot
        first = next((n for n, line in enumerate(lines, start=1) if line.strip()), None)
        raise ParseError(
            "not `nvidia-smi nvlink -e` output (expected a line like 'GPU 0: NAME (UUID: ...)')", path=path, line=first
        )
    # A count on a last line without its line end may be cut ("Replay Errors: 1" of 12): it is truncated, never
    # read as a smaller number (the rule of the -q and table readers, rigcheck.readers.smi.query_text).
    cut_line = len(lines) if lines and not strip_ansi(text).endswith(("\n", "\r")) else None
    gpu: Gpu | None = None
    links: dict[int, NvLink] = {}
    others: dict[str, list[tuple[int, int, str]]] = {}  # a counter not held -> (gpu, link, value as printed)
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        header = _GPU.match(line)
        if header is not None:
            if gpu is not None:
                snapshot.gpus.append(_finish(gpu, links))
            gpu = Gpu(index=int(header.group("index")), name=header.group("name") or None)
            uuid = header.group("uuid")
            if uuid and not _ELIDED_UUID.match(uuid):
                gpu.uuid = uuid
            links = {}
            continue
        counter = _COUNTER.match(line)
        if counter is not None and gpu is None:
            raise ParseError("link line before any GPU header", path=path, line=number)
        field = _field_for(counter.group("label")) if counter is not None else None
        if counter is not None and field is None and gpu is not None:
            others.setdefault(counter.group("label"), []).append(
                (gpu.index, int(counter.group("link")), counter.group("value"))
            )
            continue
        if counter is None or field is None or gpu is None:
            index = gpu.index if gpu is not None else None
            note = f"line not read: {line.strip()!r} (line {number})"
            snapshot.diagnostics.append(Diagnostic(source=SOURCE, message=note, gpu=index))
            continue
        link = links.setdefault(int(counter.group("link")), NvLink(link=int(counter.group("link"))))
        if number == cut_line:
            setattr(link, field, None)
            link.mark_missing(field, Missing.TRUNCATED)
            note = f"{INPUT_ENDS_EARLY}: the text stops inside line {number} (link {link.link} {field})"
            snapshot.diagnostics.append(Diagnostic(source=SOURCE, message=note, gpu=gpu.index))
            continue
        _put(link, field, counter.group("value"), line=number, gpu=gpu.index, diagnostics=snapshot.diagnostics)
    if gpu is not None:
        snapshot.gpus.append(_finish(gpu, links))
    snapshot.diagnostics += [_other_counter(label, seen) for label, seen in others.items()]
    return snapshot


_SHOWN = 8  # non-zero counters named in a diagnostic before "..."


def _other_counter(label: str, seen: list[tuple[int, int, str]]) -> Diagnostic:
    """One line for a counter the snapshot does not hold (Hopper's ECC and data Tx/Rx errors, Blackwell's packet
    and BER figures): how many links print it, and each link where it is not zero, so none is hidden."""
    nonzero = [f"GPU{g} link {k}: {v}" for g, k, v in seen if v.strip() not in ("0", "0.0", "N/A", "")]
    where = (
        "all 0"
        if not nonzero
        else "not 0 on " + ", ".join(nonzero[:_SHOWN]) + (", ..." if len(nonzero) > _SHOWN else "")
    )
    message = f"{label!r} counters of {len(seen)} link(s) are not held in the snapshot: {where}"
    gpus = {g for g, _, _ in seen}
    return Diagnostic(source=SOURCE, message=message, gpu=gpus.pop() if len(gpus) == 1 else None)


def _put(link: NvLink, field: str, value: str, *, line: int, gpu: int, diagnostics: list[Diagnostic]) -> None:
    reason = na_reason(value)
    if reason is not None:
        if getattr(link, field) is None:
            link.mark_missing(field, reason)
        return
    if not (value.isascii() and value.isdigit()):
        message = f"link {link.link} {field.replace('_', ' ')}: {value!r} is not a count (line {line})"
        diagnostics.append(Diagnostic(source=SOURCE, message=message, gpu=gpu))
        link.mark_missing(field, Missing.ERROR)
        return
    # Flit and data CRC counters printed apart add up to the one CRC figure.
    previous = getattr(link, field)
    setattr(link, field, int(value) + (previous or 0))
    link.missing.pop(field, None)


def _finish(gpu: Gpu, links: dict[int, NvLink]) -> Gpu:
    gpu.nvlinks = [links[n] for n in sorted(links)]
    for link in gpu.nvlinks:
        finish_missing(link)
    finish_missing(gpu)
    return gpu

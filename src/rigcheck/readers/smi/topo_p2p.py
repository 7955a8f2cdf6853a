"""Read ``nvidia-smi topo -p2p r|w|rw|n|a|p``: the P2P status of every GPU pair for one capability.

The output is a matrix like ``topo -m``'s, with status codes for cells and its own legend::

     \tGPU0\tGPU1\t
     GPU0\tX\tGNS\t
     GPU1\tGNS\tX\t

    Legend:

      X    = Self
      OK   = Status Ok
      CNS  = Chipset not supported
      GNS  = GPU not supported
      TNS  = Topology not supported
      NS   = Not supported
      DR   = Disabled by regkey      (newer drivers)
      U    = Unknown

Each code is one of NVML's nvmlGpuP2PStatus_t values (nvml.h), which nvidia-smi reads with
nvmlDeviceGetP2PStatus for the capability asked: ``r`` read, ``w`` write, ``n`` NVLink, ``a`` atomics, ``p``
PCIe (NVML_P2P_CAPS_INDEX_*); ``rw`` is taken as read and write together. The status goes to the pair's
``p2p_read`` / ``p2p_write`` / ``p2p_nvlink`` / ``p2p_atomics`` / ``p2p_pcie``; OK is the only status under
which the GPUs copy to each other directly.

nvidia-smi does not print which capability a matrix shows. It is taken, in this order, from the
``capability`` argument, from an ``nvidia-smi topo -p2p X`` command line kept in the text, from the file's
name (``topo-p2p-r.txt``, ``p2p-rw-...``), else it is read as ``r`` (the command rigcheck's advice names), and
a Diagnostic says so. A title line naming the capability ("P2P read", "(nvidia-smi topo -p2p w)") before a
matrix counts as its command line, so a file holding several matrices is read matrix by matrix.

The GPUs the matrix names are listed by index only (everything else NOT_IN_SOURCE). A pair whose two
directions differ gets the worse status and a Diagnostic; a code no legend explains becomes UNKNOWN with the
printed code kept in a Diagnostic.
"""

from __future__ import annotations

import re
from pathlib import PurePath
from typing import Literal

from rigcheck.errors import ParseError
from rigcheck.model.snapshot import Diagnostic, Gpu, GpuPair, Missing, P2PStatus, Snapshot, Source
from rigcheck.readers.smi.ansi import strip_ansi

__all__ = ["P2P_CODES", "Capability", "looks_like_topo_p2p", "parse_topo_p2p"]

SOURCE = "topo-p2p"
Capability = Literal["r", "w", "rw", "n", "a", "p"]

# The codes nvidia-smi prints (its legend), NVML's status for each, and what it means.
P2P_CODES: dict[str, tuple[P2PStatus, str]] = {
    "OK": (P2PStatus.OK, "Status Ok"),
    "CNS": (P2PStatus.CHIPSET_NOT_SUPPORTED, "Chipset not supported"),
    "GNS": (P2PStatus.GPU_NOT_SUPPORTED, "GPU not supported"),
    "TNS": (P2PStatus.IOH_TOPOLOGY_NOT_SUPPORTED, "Topology not supported"),
    "NS": (P2PStatus.NOT_SUPPORTED, "Not supported"),
    "DR": (P2PStatus.DISABLED_BY_REGKEY, "Disabled by regkey"),
    "U": (P2PStatus.UNKNOWN, "Unknown"),
}
# A legend line's meaning -> status, for a code this table does not name (another driver's spelling).
_MEANINGS = (
    (re.compile(r"\bok\b", re.I), P2PStatus.OK),
    (re.compile(r"chipset", re.I), P2PStatus.CHIPSET_NOT_SUPPORTED),
    (re.compile(r"\bgpu\b", re.I), P2PStatus.GPU_NOT_SUPPORTED),
    (re.compile(r"topology|\bioh\b", re.I), P2PStatus.IOH_TOPOLOGY_NOT_SUPPORTED),
    (re.compile(r"regkey|registry|disabled", re.I), P2PStatus.DISABLED_BY_REGKEY),
    (re.compile(r"not supported", re.I), P2PStatus.NOT_SUPPORTED),
)
# Worst first: the status a pair gets when its two directions differ.
_SEVERITY = [
    P2PStatus.DISABLED_BY_REGKEY,
    P2PStatus.GPU_NOT_SUPPORTED,
    P2PStatus.CHIPSET_NOT_SUPPORTED,
    P2PStatus.IOH_TOPOLOGY_NOT_SUPPORTED,
    P2PStatus.NOT_SUPPORTED,
    P2PStatus.UNKNOWN,
    P2PStatus.OK,
]
FIELDS: dict[Capability, tuple[str, ...]] = {
    "r": ("p2p_read",),
    "w": ("p2p_write",),
    "rw": ("p2p_read", "p2p_write"),
    "n": ("p2p_nvlink",),
    "a": ("p2p_atomics",),
    "p": ("p2p_pcie",),
}
_WORDS: dict[str, Capability] = {
    "read": "r",
    "write": "w",
    "readwrite": "rw",
    "wr": "rw",
    "nvlink": "n",
    "atomics": "a",
    "atomic": "a",
    "pcie": "p",
    "pci": "p",
    "prop": "p",
}

_NOT_PRINTED = ("link", "kind", "nvlinks", "p2p_read", "p2p_write", "p2p_nvlink", "p2p_atomics")
_GPU = re.compile(r"^GPU(\d+)$")
_LEGEND_LINE = re.compile(r"^\s*(?P<code>[A-Za-z]+)\s*=\s*(?P<meaning>\S.*?)\s*$")
_COMMAND = re.compile(r"\btopo\s+(?:-p2p|--p2pstatus)(?:\s*=\s*|\s+)(?P<cap>[A-Za-z]+)\b")
_TITLE = re.compile(r"\bP2P\s+(?P<cap>read|write|nvlink|atomics?|pcie)\b", re.I)
_NAME_CAP = re.compile(r"p2p[-_ ]?(?P<cap>rw|wr|r|w|n|a|p|read|write|nvlink|atomics?|pcie|prop)(?=[-_. ]|$)", re.I)
_P2P_LEGEND = re.compile(r"^\s*(?:CNS\s*=\s*Chipset not supported|GNS\s*=\s*GPU not supported)", re.I | re.M)
_BINARY = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def looks_like_topo_p2p(text: str) -> bool:
    """Whether ``text`` is `nvidia-smi topo -p2p` output: its legend, or a GPU matrix of P2P status codes."""
    clean = _lines(text)
    if _P2P_LEGEND.search("\n".join(clean)):
        return True
    try:
        _, rows, _ = _matrix(clean, 0, None)
    except ParseError:
        return False
    return any(code in P2P_CODES for codes in rows.values() for code in codes)


def parse_topo_p2p(text: str, *, path: str | None = None, capability: Capability | None = None) -> Snapshot:
    """The pairs' P2P status for the capability each matrix shows; ParseError when there is no such matrix.

    A text may hold several matrices (a script printing ``-p2p r`` then ``-p2p w``): each is read for the
    capability its own command line or title names."""
    if not text.strip():
        raise ParseError("empty file: expected the output of `nvidia-smi topo -p2p r`", path=path)
    lines = _lines(text)
    for number, line in enumerate(lines, start=1):
        if _BINARY.search(line):
            raise ParseError("binary data, not `nvidia-smi topo -p2p` output", path=path, line=number)
    snapshot = Snapshot(source=Source(kind="topo-p2p", path=path))
    pairs: dict[tuple[int, int], GpuPair] = {}
    gpus: set[int] = set()
    start, matrices = 0, 0
    while (found := _find_header(lines, start)) is not None:
        labels, rows, end = _matrix(lines, start, path)
        matrices += 1
        gpus.update(int(label[3:]) for label in labels)
        after = _find_header(lines, end)
        legend = _legend(lines[end : after if after is not None else len(lines)])
        only = after is None and matrices == 1  # the file's name (or the default) speaks for its only matrix
        cap, how = _capability(lines[start:found], path, only=only, given=capability)
        if cap is None:
            message = f"the matrix at line {found + 1} is one of several and names no capability: not read"
            snapshot.diagnostics.append(Diagnostic(source=SOURCE, message=message))
        else:
            if how:
                snapshot.diagnostics.append(Diagnostic(source=SOURCE, message=how))
            _read_pairs((labels, rows), legend, FIELDS[cap], pairs, snapshot)
        start = end
    if matrices == 0:
        raise ParseError("no header row naming GPU0, GPU1, ...: not `nvidia-smi topo -p2p` output", path=path)
    snapshot.pairs = [pairs[key] for key in sorted(pairs)]
    # The GPUs the matrix names, known by index only (as from `topo -m`), so that a check sees their pairs.
    for index in sorted(gpus):
        gpu = Gpu(index=index)
        gpu.mark_unset_missing(Missing.NOT_IN_SOURCE)
        snapshot.gpus.append(gpu)
    for pair in snapshot.pairs:  # what this matrix cannot say (the link, other capabilities) has its reason
        for field in _NOT_PRINTED:
            if getattr(pair, field) is None:
                pair.mark_missing(field, Missing.NOT_IN_SOURCE)
    return snapshot


def _read_pairs(
    matrix: tuple[list[str], dict[str, list[str]]],
    legend: dict[str, str],
    fields: tuple[str, ...],
    pairs: dict[tuple[int, int], GpuPair],
    snapshot: Snapshot,
) -> None:
    labels, rows = matrix
    indices = [int(m.group(1)) for label in labels if (m := _GPU.match(label))]
    for i, a in enumerate(indices):
        for j in range(i + 1, len(indices)):
            b = indices[j]
            there, back = rows[labels[i]][j], rows[labels[j]][i]
            status = _worse(_status(there, legend, a, b, snapshot), _status(back, legend, b, a, snapshot))
            if there != back:
                message = (
                    f"GPU{a} -> GPU{b} prints {there}, GPU{b} -> GPU{a} prints {back}: the pair gets {status.value}"
                )
                snapshot.diagnostics.append(Diagnostic(source=SOURCE, message=message))
            key = (min(a, b), max(a, b))
            pair = pairs.setdefault(key, GpuPair(a=key[0], b=key[1]))
            for field in fields:
                setattr(pair, field, status)


def _lines(text: str) -> list[str]:
    clean = strip_ansi(text).lstrip("\ufeff").replace("\xa0", " ")
    return clean.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def _matrix(lines: list[str], start: int, path: str | None) -> tuple[list[str], dict[str, list[str]], int]:
    """The first matrix from ``start``: GPU labels, each row's codes (in label order), the line after it."""
    header_at = _find_header(lines, start)
    if header_at is None:
        raise ParseError("no header row naming GPU0, GPU1, ...: not `nvidia-smi topo -p2p` output", path=path)
    words = lines[header_at].split()
    labels = words[words.index("GPU0") :]
    if len(set(labels)) != len(labels):
        raise ParseError("the header names a GPU twice", path=path, line=header_at + 1)
    rows: dict[str, list[str]] = {}
    end = len(lines)
    for i in range(header_at + 1, len(lines)):
        words = lines[i].split()
        if not words:
            if rows:
                end = i
                break
            continue
        if not _GPU.match(words[0]):
            end = i
            break
        label, codes = words[0], words[1:]
        if label not in labels:
            raise ParseError(f"row {label} is not a column of the header", path=path, line=i + 1)
        if label in rows:
            raise ParseError(f"row {label} appears twice", path=path, line=i + 1)
        if len(codes) != len(labels):
            raise ParseError(
                f"row {label} has {len(codes)} status codes, the header names {len(labels)} GPUs", path=path, line=i + 1
            )
        for column, code in zip(labels, codes, strict=True):
            if (column == label) != (code == "X"):
                where = "on the diagonal" if column == label else "off the diagonal"
                raise ParseError(f"row {label}, column {column}: {code!r} {where}", path=path, line=i + 1)
            if not re.fullmatch(r"[A-Za-z]+", code):
                raise ParseError(f"row {label}, column {column}: {code!r} is not a P2P status", path=path, line=i + 1)
        rows[label] = codes
    missing = [label for label in labels if label not in rows]
    if missing:
        raise ParseError(f"the header names {missing[0]} but there is no {missing[0]} row", path=path, line=end + 1)
    return labels, rows, end


def _find_header(lines: list[str], start: int) -> int | None:
    """The next header line (GPU0 GPU1 ..., perhaps after a prompt on the same line), from ``start``."""
    for i in range(start, len(lines)):
        words = lines[i].split()
        if "GPU0" in words and "X" not in words and all(_GPU.match(w) for w in words[words.index("GPU0") :]):
            return i
    return None


def _legend(lines: list[str]) -> dict[str, str]:
    """Code -> meaning, as the legend after the matrix prints them."""
    out: dict[str, str] = {}
    for line in lines:
        m = _LEGEND_LINE.match(line)
        if m is not None:
            out[m.group("code")] = m.group("meaning")
    return out


def _status(code: str, legend: dict[str, str], a: int, b: int, snapshot: Snapshot) -> P2PStatus:
    known = P2P_CODES.get(code)
    if known is not None:
        return known[0]
    meaning = legend.get(code)
    for pattern, status in _MEANINGS if meaning else ():
        if pattern.search(meaning or ""):
            return status
    why = f"the legend says {meaning!r}" if meaning else "no legend line explains it"
    message = f"GPU{a} -> GPU{b}: status {code!r} is not one rigcheck knows ({why}); read as unknown"
    snapshot.diagnostics.append(Diagnostic(source=SOURCE, message=message))
    return P2PStatus.UNKNOWN


def _worse(x: P2PStatus, y: P2PStatus) -> P2PStatus:
    return x if _SEVERITY.index(x) <= _SEVERITY.index(y) else y


def _capability(
    before: list[str], path: str | None, *, only: bool, given: Capability | None
) -> tuple[Capability | None, str]:
    """The capability a matrix shows, from the lines before it, else (for the only matrix of the input) from the
    file's name or the default, with a note when assumed; None for one of several that does not say."""
    if given is not None:
        return given, ""
    for line in reversed(before):
        for pattern in (_COMMAND, _TITLE):
            m = pattern.search(line)
            if m is not None and (cap := _as_capability(m.group("cap"))) is not None:
                return cap, ""
    if not only:
        return None, ""
    if path is not None and path != "-":
        m = _NAME_CAP.search(PurePath(path).name)
        if m is not None and (cap := _as_capability(m.group("cap"))) is not None:
            return cap, ""
    return "r", (
        "which capability this matrix shows is not in the input (nvidia-smi does not print it): read as "
        "`nvidia-smi topo -p2p r` (P2P read)"
    )


def _as_capability(word: str) -> Capability | None:
    lowered = word.lower()
    for cap in FIELDS:
        if lowered == cap:
            return cap
    return _WORDS.get(lowered)

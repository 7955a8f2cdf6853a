"""Read what NCCL says about itself in an ``NCCL_DEBUG=INFO`` log: transports, P2P on or off, version, ranks.

:func:`parse_nccl_log` returns the ``rigcheck.nccl-log/1`` document (:class:`rigcheck.model.nccl_log.NcclLogDocument`);
`rigcheck nccl-log` prints it and ``bench --compare-p2p`` labels its runs with it. Loaded only by those two.

The lines this module reads, as NCCL prints them (format strings from NVIDIA/nccl ``src/transport/p2p.cc``,
``shm.cc``, ``net.cc``, ``src/misc/param.cc``; examples from the logs under tests/fixtures):

    host:pid:tid [dev] NCCL INFO NCCL version 2.28.9+cuda13.0        (2.7+; older ones print it bare)
    NCCL version 2.10.3+cuda11.3                                      (rank 0 of NCCL <= 2.11, no prefix)
    host:pid:tid [dev] NCCL INFO Channel 00/0 : 0[1] -> 1[2] via P2P/CUMEM               (2.12+: channel/conn)
    host:pid:tid [dev] NCCL INFO Channel 00 : 0[1] -> 1[2] via SHM/direct/direct         (SHM, no conn index)
    host:pid:tid [dev] NCCL INFO Channel 01 : 7[cb000] -> 8[7000] [send] via NET/IB/3    (bus id as the peer)
    host:pid:tid [dev] NCCL INFO Channel 00/0 : 15[7] -> 6[6] [send] via NET/Socket/3
    host:pid:tid [dev] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via P2P/direct pointer/read (one process, many GPUs)
    host:pid:tid [dev] NCCL INFO Ring 00 : 26[2] -> 24[0] via P2P/IPC                    (NCCL 2.4 - 2.6)
    host:pid:tid [dev] NCCL INFO NCCL_P2P_DISABLE set by environment to 1[.]              (the period varies)
    host:pid:tid [dev] NCCL INFO comm 0x... rank 0 nRanks 2 nNodes 1 localRanks 2 localRank 0 MNNVL 0
    host:pid:tid [dev] NCCL INFO comm 0x... rank 28 nranks 32 cudaDev 4 busId 88000 - Init COMPLETE

Lines arrive prefixed (``[1,0]<stdout>:`` from ``mpirun --tag-output``, ``[155]`` from srun/torchrun, a
timestamp from a Python logger), interleaved with the program's own output, and sometimes glued together when
two processes write at once (``... send 0.000proxmox:1495820:1495820 [1] NCCL INFO ENV/Plugin ...``). Every
pattern is therefore searched for anywhere in a line, and every occurrence counts.

``Channel NN/MM : 0 1`` (no ``->``) lists a ring's order, and ``Ring 00 : 7 -> 0 -> 1`` (no ``[dev]``) a
ring's neighbours: neither is a connection and neither is counted.

p2p_disabled is True when the log shows P2P turned off (NCCL_P2P_DISABLE set to a non-zero value, or
NCCL_P2P_LEVEL set to LOC / 0, which NCCL documents as "never use P2P"), False when NCCL_P2P_DISABLE was set
to 0 or when a P2P transport was used, and None when the log cannot tell (no such line and no P2P channel: a
log of one rank, or SHM chosen because P2P is unavailable between the GPUs).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import BinaryIO

from rigcheck.errors import InputError, ParseError
from rigcheck.model.nccl_log import ChannelLine, Direction, NcclLogDocument

__all__ = [
    "P2P_LABEL",
    "SHM_LABEL",
    "SINGLE_RANK_LABEL",
    "ChannelLine",
    "NcclLogDocument",
    "describe_transport",
    "p2p_mismatch",
    "parse_nccl_log",
    "read_nccl_log",
    "transport_kind",
]

# --- patterns ------------------------------------------------------------------------------------------------

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-Z\\-_]")
# Control characters that no text log carries (tab, LF, VT, FF, CR and ESC are allowed).
_BAD_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1a\x1c-\x1f\x7f]")

# A peer as printed: the rank, then the device in brackets: a CUDA/NVML index ("1") or a PCI bus id ("cb000").
# NCCL 2.4's NET lines print the ranks alone ("Ring 00 : 3 -> 10 [send] via NET/IB/0/GDRDMA").
_PEER = r"(?P<{r}>\d+)(?:\[(?P<{d}>[0-9A-Fa-fx:.]+)\])?"
# The transport after "via", as printed: "P2P/IPC/read", "SHM/direct/direct", "NET/IB/0(8)/GDRDMA(PCI)/Shared",
# "P2P/direct pointer", "NET/AWS Libfabric/0/GDRDMA" (a plugin's name may hold a space), "COLLNET/SHARP/1/GDRDMA",
# and NCCL 2.4-2.7's shared memory, "direct shared memory". RCCL appends " comm 0x... nRanks N": not part of it.
_PART = r"[A-Za-z0-9_.()+-]+"
_MORE = r"(?: (?!comm\b|nRanks\b)[A-Za-z][A-Za-z0-9_.()+-]*)*"  # "direct pointer", "AWS Libfabric"
_TRANSPORT = rf"(?P<transport>direct shared memory|[A-Z][A-Za-z0-9]*(?:/{_PART}{_MORE})*)"
_CHANNEL = re.compile(
    r"\b(?P<keyword>Channel|Ring) (?P<channel>\d+)(?:/(?P<conn>\d+))? : "
    + _PEER.format(r="from_rank", d="from_device")
    + r" -> "
    + _PEER.format(r="to_rank", d="to_device")
    + r"(?: \[(?P<direction>send|receive)\])?"
    + r" +via "
    + _TRANSPORT
)
# A rank's connection to the in-network reduction: "CollNet 00/0 : 0 [receive] via COLLNET/SHARP/1/GDRDMA"
# (NCCL 2.12+), "CollNet 00 : 3 [send] via ..." and "Coll 00 : 3 [send] via ..." before (src/transport/coll_net.cc).
_COLLNET = re.compile(
    r"\b(?:CollNet|Coll) (?P<channel>\d+)(?:/(?P<conn>\d+))? : "
    + _PEER.format(r="from_rank", d="from_device")
    + r" \[(?P<direction>send|receive)\] +via "
    + _TRANSPORT
)
# NVLink SHARP set up for a communicator (NCCL 2.17+): it has no "via" line of its own (src/transport/nvls.cc,
# src/init.cc): "NVLS comm 0x... headRank 0 nHeads 8 ...", "Connected NVLS tree", "16 nvls channels".
_NVLS = re.compile(r"\bNVLS comm 0x[0-9a-fA-F]+ headRank\b|\bConnected NVLS\b|\b[1-9]\d* nvls channels\b")
# P2P unavailable between two GPUs (not turned off): "Could not enable P2P between dev 1(=3d000) and dev 0(=1a000)".
_P2P_UNAVAILABLE = re.compile(r"\bCould not enable P2P between dev (?P<a>\d+)\S* and dev (?P<b>\d+)")
_VERSION = re.compile(r"\bNCCL version (?P<version>\d+\.\d+\.\d+)(?:[-+](?P<suffix>[A-Za-z0-9_.+-]*))?")
_ENV = re.compile(r"\b(?P<name>NCCL_[A-Z0-9_]+) set by environment to (?P<value>[^\s]+?)\.?(?=\s|$)")
_NRANKS = re.compile(r"\bn[Rr]anks (?P<n>\d+)\b")
_NNODES = re.compile(r"\bnNodes (?P<n>\d+)\b")
_RANK_OF_COMM = re.compile(r"\bcomm 0x[0-9a-fA-F]+ rank (?P<rank>\d+) n[Rr]anks (?P<n>\d+)\b")
# "host:pid:tid [dev] NCCL INFO" - the host as printed (the corpus has "proxmox", "jean-zay-iam37", "<cluster_name>").
_PREFIX = re.compile(
    # The host starts where a host token starts (the lookbehind): without it a search restarts at every
    # character of a long run and is quadratic.
    r"(?<![^\s:\[\]])(?P<host>[^\s:\[\]]{1,255}):(?P<pid>\d+):(?P<tid>\d+) "
    r"\[(?P<dev>\d+)\] NCCL (?P<level>INFO|WARN|TRACE)\b"
)
_NCCL_MARK = re.compile(r"\bNCCL (?:INFO|WARN|TRACE)\b|\bNCCL version \d")
_WARN = re.compile(r"\bNCCL WARN\s*(?P<message>.*?)\s*$")
# Lines that say the run failed: NCCL aborting a communicator, PyTorch's NCCL watchdog, an NCCL error code.
_FAILURE = re.compile(
    r"Watchdog caught collective operation timeout|\bAbort COMPLETE\b|\bNCCL error\b|\bTest NCCL failure\b"
    r"|\bnccl(?:System|Internal|Remote|UnhandledCuda|InvalidUsage|InvalidArgument)Error\b"
    # an InfiniBand work completion in error (status 12: transport retry count exceeded): the link dropped
    r"|Got completion from peer .* with (?:error|status=[1-9]\d*)"
)
_FAILURE_HINT = ("Watchdog", "Abort", "NCCL error", "Error", "failure", "completion")  # cheap, before the regex
_KEPT = 20  # distinct warning and failure lines kept in the document
_P2P_DISABLED_TEXT = re.compile(r"\bP2P (?:is )?disabled\b", re.IGNORECASE)

# Transport families, by the first component after "via".
TRANSPORT_KINDS: dict[str, str] = {
    "P2P": "P2P",
    "SHM": "SHM",
    "NET": "NET",
    "COLLNET": "COLLNET",
    "NVLS": "NVLS",
}


def transport_kind(transport: str) -> str:
    """The family of a transport string: "P2P/IPC/read" -> "P2P", "NET/IB/1" -> "NET", "direct shared memory" ->
    "SHM" (NCCL 2.4-2.7's name for the shared-memory transport)."""
    if transport.startswith("direct shared memory"):
        return "SHM"
    head = transport.split("/", 1)[0]
    return TRANSPORT_KINDS.get(head.upper(), head.upper())


def _normalise(text: str) -> list[str]:
    clean = _ANSI.sub("", text).lstrip("\ufeff")
    return clean.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def _check_input(text: str, path: str | None) -> None:
    if not text.strip():
        raise ParseError("empty file: expected an NCCL_DEBUG=INFO log", path=path)
    if "\x00" in text:
        line = text.count("\n", 0, text.index("\x00")) + 1
        raise ParseError("binary data (NUL byte), not an NCCL log", path=path, line=line)
    bad = len(_BAD_CONTROL.findall(text))
    if bad > max(8, len(text) // 100):
        raise ParseError(f"binary data ({bad} control characters), not an NCCL log", path=path)


def _p2p_verdict(
    env_values: dict[str, list[str]], kinds: Iterable[str], disabled_text: int | None
) -> tuple[bool | None, str]:
    disable = env_values.get("NCCL_P2P_DISABLE", [])
    level = env_values.get("NCCL_P2P_LEVEL", [])
    on = [v for v in disable if v.strip() not in {"0", ""}]
    if on:
        return True, f"NCCL_P2P_DISABLE set by environment to {on[0]}"
    never = [v for v in level if v.upper() in {"LOC", "0"}]
    if never:
        return True, f"NCCL_P2P_LEVEL set by environment to {never[0]} (LOC: never use P2P)"
    if disabled_text is not None:
        return True, f"NCCL says P2P is disabled (line {disabled_text})"
    if disable:
        return False, "NCCL_P2P_DISABLE set by environment to 0"
    if "P2P" in kinds:
        return False, "P2P transports were used, so P2P was not disabled"
    return None, "no NCCL_P2P_DISABLE line and no P2P channel: the log cannot tell"


def _direction(text: str | None) -> Direction | None:
    if text == "send":
        return "send"
    if text == "receive":
        return "receive"
    return None


def _channel_lines(line: str, lineno: int) -> list[ChannelLine]:
    """Every connection a line prints, in order: "Channel/Ring ... -> ... via T" and "CollNet ... [send] via T"."""
    matches = sorted([*_CHANNEL.finditer(line), *_COLLNET.finditer(line)], key=lambda m: m.start())
    out: list[ChannelLine] = []
    for m in matches:
        groups = m.groupdict()
        conn, to_rank = groups["conn"], groups.get("to_rank")
        out.append(
            ChannelLine(
                channel=groups["channel"] + (f"/{conn}" if conn is not None else ""),
                channel_id=int(groups["channel"]),
                conn_index=int(conn) if conn is not None else None,
                from_rank=int(groups["from_rank"]),
                from_device=groups["from_device"],
                to_rank=int(to_rank) if to_rank is not None else None,
                to_device=groups.get("to_device"),
                transport=groups["transport"],
                kind=transport_kind(groups["transport"]),
                direction=_direction(groups["direction"]),
                line=lineno,
            )
        )
    return out


class _LogScan:
    """What the lines of a log say so far, fed one line at a time: the whole-text and the streamed reader share
    it, so both build the same document."""

    def __init__(self) -> None:
        self.versions: list[str] = []
        self.nranks: set[int] = set()
        self.nnodes: set[int] = set()
        self.ranks: set[int] = set()
        self.hosts: set[str] = set()
        self.channels: list[ChannelLine] = []
        self.env: dict[str, str] = {}
        self.env_values: dict[str, list[str]] = {}
        self.disabled_text_line: int | None = None
        self.nvls_line: int | None = None  # where NCCL set up NVLink SHARP
        self.unavailable: str | None = None  # where NCCL said P2P could not be enabled
        self.nccl_lines = 0
        self.warnings: list[str] = []
        self.warning_lines = 0
        self.failures: list[str] = []
        self.failure_lines = 0

    def feed(self, line: str, lineno: int) -> None:
        # Most lines of a long log are the program's own output: the two cheap searches decide, before any other.
        marked = _NCCL_MARK.search(line) is not None
        if any(hint in line for hint in _FAILURE_HINT) and _FAILURE.search(line) is not None:
            self.failure_lines += 1
            _keep(self.failures, line.strip())
            marked = True  # PyTorch's watchdog line is about NCCL too: a log of only those is still read
        found = _channel_lines(line, lineno) if ("via " in line) else []
        for channel in found:
            self.channels.append(channel)
            self.ranks.update(r for r in (channel.from_rank, channel.to_rank) if r is not None)
        if not (marked or found):
            return
        self.nccl_lines += 1
        # Only a line's first prefix names its host: a later one was glued on mid-word ("on dproxmox:...").
        pm = _PREFIX.search(line)
        if pm is not None:
            self.hosts.add(pm.group("host"))
        for vm in _VERSION.finditer(line):
            full = vm.group("version") + (f"+{vm.group('suffix')}" if vm.group("suffix") else "")
            if full not in self.versions:
                self.versions.append(full)
        for em in _ENV.finditer(line):
            name, value = em.group("name"), em.group("value")
            self.env.setdefault(name, value)
            if value not in self.env_values.setdefault(name, []):
                self.env_values[name].append(value)
        if (wm := _WARN.search(line)) is not None:
            self.warning_lines += 1
            _keep(self.warnings, wm.group("message"))
        for nm in _NRANKS.finditer(line):
            self.nranks.add(int(nm.group("n")))
        for nn in _NNODES.finditer(line):
            self.nnodes.add(int(nn.group("n")))
        for rm in _RANK_OF_COMM.finditer(line):
            self.ranks.add(int(rm.group("rank")))
        if self.disabled_text_line is None and _P2P_DISABLED_TEXT.search(line) and "set by environment" not in line:
            self.disabled_text_line = lineno
        if self.nvls_line is None and _NVLS.search(line):
            self.nvls_line = lineno
        if self.unavailable is None and (um := _P2P_UNAVAILABLE.search(line)) is not None:
            self.unavailable = (
                f"NCCL could not enable P2P between dev {um.group('a')} and dev {um.group('b')} (line {lineno})"
            )

    def document(self, path: str | None) -> NcclLogDocument:
        if self.nccl_lines == 0:
            raise ParseError("no NCCL line found: expected a log written with NCCL_DEBUG=INFO", path=path)
        channels, nranks, nnodes = self.channels, self.nranks, self.nnodes
        kinds = {c.kind for c in channels} | ({"NVLS"} if self.nvls_line is not None else set())
        p2p_disabled, evidence = _p2p_verdict(self.env_values, kinds, self.disabled_text_line)
        if p2p_disabled is None and self.unavailable is not None:
            evidence = f"{self.unavailable}: P2P is unavailable between those GPUs, not turned off"
        version: str | None = None
        cuda: str | None = None
        if self.versions:
            vm0 = _VERSION.search(f"NCCL version {self.versions[0]}")
            if vm0 is not None:
                version = vm0.group("version")
                suffix = vm0.group("suffix") or ""
                cuda_m = re.match(r"cuda(?P<cuda>[\d.]+)", suffix)
                cuda = cuda_m.group("cuda") if cuda_m else None
        transports = sorted({c.transport for c in channels})
        transport_kinds = sorted(kinds)
        top_nranks = max(nranks) if nranks else None
        top_nnodes = max(nnodes) if nnodes else None
        values: dict[str, object] = {
            "nccl_version": version,
            "cuda": cuda,
            "nranks": top_nranks,
            "nnodes": top_nnodes,
            "p2p_disabled": p2p_disabled,
        }
        connections = _channel_connections(channels)
        return NcclLogDocument(
            path=path,
            nccl_version=version,
            cuda=cuda,
            nccl_versions=self.versions,
            nranks=top_nranks,
            nranks_seen=sorted(nranks),
            nnodes=top_nnodes,
            hosts=sorted(self.hosts),
            ranks_seen=sorted(self.ranks),
            transports=transports,
            transport_kinds=transport_kinds,
            transport_channel_lines=_transport_channel_counts(channels),
            description=_describe(transport_kinds, top_nranks, transports),
            p2p_disabled=p2p_disabled,
            p2p_evidence=evidence,
            env=dict(sorted(self.env.items())),
            channel_line_count=len(channels),
            peer_connections=len(connections),
            channel_connections=connections,
            channels=channels,
            nccl_line_count=self.nccl_lines,
            warnings=self.warnings or None,
            warning_lines=self.warning_lines or None,
            failures=self.failures or None,
            failure_lines=self.failure_lines or None,
            missing=_null_reasons(values, evidence),
        )


def _keep(kept: list[str], text: str) -> None:
    """Add ``text`` to ``kept`` once, up to the first _KEPT distinct ones."""
    if text not in kept and len(kept) < _KEPT:
        kept.append(text)


def parse_nccl_log(text: str, path: str | None = None) -> NcclLogDocument:
    """Parse an NCCL_DEBUG=INFO log (any NCCL 2.4 - 2.28, any launcher's prefixes, other output mixed in).

    Raises ParseError for empty or binary input and for text without a single NCCL line.
    """
    _check_input(text, path)
    scan = _LogScan()
    for lineno, line in enumerate(_normalise(text), start=1):
        scan.feed(line, lineno)
    return scan.document(path)


def read_nccl_log(path: str) -> NcclLogDocument:
    """Read and parse the log at ``path`` ('-' for stdin) in one pass, a block of lines at a time: memory holds
    the document (every channel line is in it), never the file. InputError when unreadable, too long (a line
    over 1 MiB, more than 16 GiB in all: /dev/zero, an endless pipe) or not text; ParseError when no log."""
    from rigcheck.inputs import input_limits, open_input

    with open_input(path) as fh, input_limits(path):  # a 5,000-digit number: exit 2, not an internal error
        return _read_stream(fh, path)


_EXPECTED = "an NCCL_DEBUG=INFO log"


def _read_stream(fh: BinaryIO, path: str) -> NcclLogDocument:
    """The streamed twin of parse_nccl_log(read_input_text(path)): the same lines, numbers and document, and the same
    errors, except that a NUL byte or undecodable byte is reported where it is met (the whole-file read found
    every NUL before any decoding error) and that the limits are the streaming ones (rigcheck.inputs)."""
    from rigcheck.inputs import MAX_INPUT_BYTES, line_blocks, read_input_chunk

    chunk = read_input_chunk(fh, path)
    if chunk.startswith((b"\xff\xfe", b"\xfe\xff")):
        # PowerShell's UTF-16: rare and small (a redirect of one run); read whole under the one-record cap.
        raw = [chunk]
        size = len(chunk)
        while size <= MAX_INPUT_BYTES and (more := read_input_chunk(fh, path)):
            raw.append(more)
            size += len(more)
        if size > MAX_INPUT_BYTES:
            raise InputError(f"input is too large (over {MAX_INPUT_BYTES // 2**20} MiB)", path=path)
        try:
            return parse_nccl_log(b"".join(raw).decode("utf-16"), path)
        except UnicodeDecodeError:
            raise InputError("binary data, not text", path=path) from None
    # A lone UTF-8 BOM is not an empty file for the byte test (read_input_text's rule), only for the text one.
    any_bytes = chunk.startswith(b"\xef\xbb\xbf")
    chunk = chunk.removeprefix(b"\xef\xbb\xbf")
    scan = _LogScan()
    number = 0  # lines as the parser counts them (CR, LF and CRLF each end one)
    newlines = 0  # LF bytes so far: the line a decoding error names, as read_input_text counts it
    chars = bad = 0
    content = False
    first = True
    blocks = line_blocks(
        chunk,
        lambda: read_input_chunk(fh, path),
        path,
        line_of_rest=lambda data, cut: newlines + data.count(b"\n", 0, cut) + 1,
    )
    del chunk  # line_blocks has it: a second reference would keep the first 1 MiB alive to the end
    for block, last in blocks:
        any_bytes = any_bytes or bool(block.strip())
        try:
            text = block.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = newlines + block[: exc.start].count(b"\n") + 1
            raise InputError("binary data, not UTF-8 text", path=path, line=line) from None
        newlines += block.count(b"\n")
        content = content or not text.isspace()
        chars += len(text)
        bad += len(_BAD_CONTROL.findall(text))
        # _normalise, a block at a time: no escape sequence spans a line end, and the BOMs strip at the start.
        # (Each copy only when needed: a block is 1 MiB, and most logs have neither escapes nor CRs.)
        clean = _ANSI.sub("", text) if "\x1b" in text else text
        if first:
            clean = clean.lstrip("\ufeff")
            first = False
        if "\r" in clean:
            clean = clean.replace("\r\n", "\n").replace("\r", "\n")
        pieces = clean.split("\n")
        del text, clean, block  # the pieces are all that is needed of this block
        if not last:
            pieces.pop()  # the block ends with its line end: what follows it is the next block's
        for piece in pieces:
            number += 1
            scan.feed(piece, number)
    # The whole-file checks, in read_input_text's and _check_input's order, now that the counts are complete.
    if not any_bytes:
        raise InputError(f"empty file: expected {_EXPECTED}", path=path)
    if not content:
        raise ParseError(f"empty file: expected {_EXPECTED}", path=path)
    if bad > max(8, chars // 100):
        raise ParseError(f"binary data ({bad} control characters), not an NCCL log", path=path)
    return scan.document(path)


def _channel_connections(channels: Iterable[ChannelLine]) -> dict[str, dict[str, list[str]]]:
    """{"0[1] -> 1[2]": {"P2P/CUMEM": ["00/0", "01/0"]}, ...}: each connection, its transports and channels."""
    out: dict[str, dict[str, list[str]]] = {}
    for c in channels:
        chans = out.setdefault(c.peer_key, {}).setdefault(c.transport, [])
        if c.channel not in chans:
            chans.append(c.channel)
    return {k: {t: sorted(v) for t, v in sorted(m.items())} for k, m in sorted(out.items())}


def _transport_channel_counts(channels: Iterable[ChannelLine]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for c in channels:
        counts[c.transport] = counts.get(c.transport, 0) + 1
    return dict(sorted(counts.items()))


def _null_reasons(values: dict[str, object], p2p_evidence: str) -> dict[str, str]:
    """Why each null value of the document is null: field -> reason (rigcheck's rule: a null carries its reason)."""
    no_version = "no 'NCCL version' line in the log"
    reasons = {
        "nccl_version": no_version,
        "cuda": "the NCCL version line has no +cuda suffix" if values["nccl_version"] is not None else no_version,
        "nranks": "no nRanks line in the log",
        "nnodes": "no nNodes line in the log",
        "p2p_disabled": p2p_evidence or "the log cannot tell",
    }
    return {key: why for key, why in reasons.items() if values[key] is None}


# --- labels for the guide's table ------------------------------------------------------------------------------

P2P_LABEL = "P2P (NVLink or PCIe peer-to-peer)"
SHM_LABEL = "SHM (through host memory)"
SINGLE_RANK_LABEL = "none (single rank)"
OTHER_LABELS = {"COLLNET": "CollNet (in-network reduction)", "NVLS": "NVLS (NVLink SHARP)"}


def _net_labels(transports: Iterable[str]) -> list[str]:
    names: list[str] = []
    for t in transports:
        parts = t.split("/")
        if transport_kind(t) == "NET":
            label = f"NET/{parts[1]}" if len(parts) > 1 else "NET"
            if label not in names:
                names.append(label)
    return names


def _describe(transport_kinds: Iterable[str], nranks: int | None, transports: Iterable[str]) -> str:
    kinds = set(transport_kinds)
    if not kinds:
        if nranks is not None and nranks <= 1:
            return SINGLE_RANK_LABEL
        return "unknown (no channel lines in the log)"
    parts: list[str] = []
    if "P2P" in kinds:
        parts.append(P2P_LABEL)
    if "SHM" in kinds:
        parts.append(SHM_LABEL)
    if "NET" in kinds:
        parts.extend(_net_labels(transports))
    parts.extend(OTHER_LABELS.get(kind, kind) for kind in sorted(kinds - {"P2P", "SHM", "NET"}))
    return " + ".join(parts)


def describe_transport(log: NcclLogDocument) -> str:
    """One phrase naming what NCCL used, for a run's label in the guide's table."""
    return log.description


def p2p_mismatch(log: NcclLogDocument, expected_p2p: bool) -> str | None:
    """The warning for a run whose transports contradict its label; None when they agree or cannot be judged.

    ``expected_p2p`` False: the run was meant to run with NCCL_P2P_DISABLE=1, so no channel may use P2P.
    ``expected_p2p`` True: the run was meant to use P2P; a run whose channels all went through SHM (or NET
    between GPUs of one node) fell back, and its timing is not the "with P2P" figure.
    """
    counts = log.transport_channel_lines
    kinds = set(log.transport_kinds)
    if not expected_p2p:
        if "P2P" in kinds:
            used = ", ".join(f"{t} ({n} channel lines)" for t, n in counts.items() if transport_kind(t) == "P2P")
            return (
                f"the run meant to be without P2P still used P2P: {used}; "
                "NCCL_P2P_DISABLE=1 did not reach NCCL in every rank"
            )
        return None
    if not kinds:
        return None
    if "P2P" not in kinds:
        used = ", ".join(f"{t} ({n} channel lines)" for t, n in counts.items())
        why = f" ({log.p2p_evidence})" if log.p2p_disabled else ""
        return (
            f"the P2P run did not use P2P: NCCL chose {used}{why}; P2P is unavailable between these GPUs "
            "(no peer access: PCIe ACS or the IOMMU, a virtual machine, or NCCL_P2P_DISABLE / NCCL_P2P_LEVEL set)"
        )
    return None

"""``rigcheck.nccl-log/1``: what an NCCL_DEBUG=INFO log says (``rigcheck nccl-log FILE --json``).

Built by :func:`rigcheck.readers.nccl_log.parse_nccl_log`, drawn by :mod:`rigcheck.report.nccl_log`. Values the log does
not show are null (or empty), each null with its reason in ``missing``.
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field

from rigcheck.model.absent import absent_unless_set
from rigcheck.model.document import Document, Plain, ReasonedRecord

Direction = Literal["send", "receive"]
Reason = Annotated[str, Field(min_length=1)]


class ChannelLine(Plain):
    """One connection NCCL set up: a "Channel NN/M : a[b] -> c[d] via T" line (NCCL 2.4-2.6: "Ring NN : ..."),
    or a rank's connection to the in-network reduction, "CollNet NN/M : a [send] via COLLNET/..."."""

    channel: str = Field(description='as printed: "00/0", "01"')
    channel_id: int = Field(ge=0)
    conn_index: int | None = Field(description='the "/0" after the channel (NCCL 2.12+); null where not printed')
    from_rank: int = Field(ge=0)
    from_device: str | None = Field(
        description='as printed inside the brackets: a device index ("1") or a PCI bus id; null where NCCL prints '
        'none (NCCL 2.4 NET lines "3 -> 10 [send]", CollNet lines)'
    )
    to_rank: int | None = Field(ge=0, description="null for a CollNet line: its far end is the network")
    to_device: str | None
    transport: str = Field(
        description='as printed after "via": "P2P/IPC/read", "SHM/direct/direct", "direct shared memory", '
        '"NET/IB/1", "COLLNET/SHARP/1/GDRDMA" ...'
    )
    kind: str = Field(description='the transport\'s family: "P2P", "SHM", "NET", "COLLNET" ...')
    direction: Direction | None = Field(
        description="NET and CollNet connections print [send] / [receive]; P2P, SHM neither"
    )
    line: int = Field(ge=0, description="1-based line of the log it was read from")

    @property
    def peer_key(self) -> str:
        """The connection as printed, e.g. "0[7000] -> 16[7000] [receive]"; "0 -> CollNet [receive]"."""

        def peer(rank: int | None, device: str | None) -> str:
            if rank is None:
                return "CollNet"
            return f"{rank}[{device}]" if device is not None else str(rank)

        key = f"{peer(self.from_rank, self.from_device)} -> {peer(self.to_rank, self.to_device)}"
        return f"{key} [{self.direction}]" if self.direction else key


class NcclLogDocument(Document, ReasonedRecord):
    """What one NCCL_DEBUG=INFO log says (docs/commands.md). Values the log does not show are null (or empty);
    a null value has its reason in `missing`."""

    NOT_A_READING: ClassVar[frozenset[str]] = frozenset({"path"})

    schema_: Literal["rigcheck.nccl-log/1"] = Field("rigcheck.nccl-log/1", alias="schema")
    path: str | None = Field(description="the file read; null for text handed over directly")
    nccl_version: str | None = Field(description='"2.28.9" (the first one printed); null when the log does not')
    cuda: str | None = Field(description='"13.0", from "+cuda13.0"')
    nccl_versions: list[str] = Field(description='every distinct version string as printed, "2.28.9+cuda13.0"')
    nranks: int | None = Field(description="the largest communicator's size; null when the log does not print it")
    nranks_seen: list[int] = Field(description="every distinct communicator size printed")
    nnodes: int | None
    hosts: list[str] = Field(description='host names from the "host:pid:tid [dev] NCCL INFO" prefixes')
    ranks_seen: list[int] = Field(description="ranks that printed an init line or own a channel line")
    transports: list[str] = Field(
        description='the distinct strings after "via": "P2P/IPC", "SHM/direct/direct", "NET/IB/1", ...'
    )
    transport_kinds: list[str] = Field(
        description='the families used: "P2P", "SHM", "NET", "COLLNET", and "NVLS" when NCCL set up NVLink SHARP '
        '(an "NVLS comm ... headRank" or "Connected NVLS" line; NVLS has no "via" line)'
    )
    transport_channel_lines: dict[str, Annotated[int, Field(ge=0)]] = Field(
        description="transport -> how many channel lines used it"
    )
    description: str = Field(description="one phrase naming what NCCL used")
    p2p_disabled: bool | None = Field(description="null when the log cannot tell")
    p2p_evidence: str = Field(description="why p2p_disabled is what it is, one sentence")
    env: dict[str, str] = Field(description='NCCL_* variables NCCL reported "set by environment"')
    channel_line_count: int = Field(ge=0)
    peer_connections: int = Field(
        ge=0, description="distinct connections (from -> to, with direction where printed), over all channels"
    )
    channel_connections: dict[str, dict[str, list[str]]] = Field(
        description='{"0[1] -> 1[2]": {"P2P/CUMEM": ["00/0", "01/0"]}, ...}: each connection, its transports '
        "and channels"
    )
    channels: list[ChannelLine]
    nccl_line_count: int = Field(ge=0)
    warnings: list[str] | None = absent_unless_set(
        'the distinct "NCCL WARN" messages, as printed (the first 20); absent when the log has none'
    )
    warning_lines: int | None = absent_unless_set("how many NCCL WARN lines the log holds")
    failures: list[str] | None = absent_unless_set(
        "the distinct lines saying the run failed, as printed (the first 20): a communicator abort, PyTorch's NCCL "
        "watchdog timeout, an NCCL error code; absent when none"
    )
    failure_lines: int | None = absent_unless_set("how many such lines the log holds")
    missing: dict[str, Reason] = Field(
        description='field -> why it is null ("no nRanks line in the log", ...); p2p_disabled\'s reason is its '
        "p2p_evidence"
    )

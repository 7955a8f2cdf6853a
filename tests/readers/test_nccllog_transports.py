"""Every way NCCL (2.4 to today) and RCCL print the transport of a connection, each on a real line.

Each line below is copied from a public NCCL_DEBUG=INFO log (the source beside it); the parser must name the
transport as printed, its family, and the two ends.
"""

from __future__ import annotations

import pytest

from rigcheck.readers.nccl_log import SHM_LABEL, p2p_mismatch, parse_nccl_log, transport_kind

# (real line, transport as printed, family, connection as printed)
REAL_LINES: list[tuple[str, str, str, str]] = [
    # NCCL 2.4-2.6 "Ring" lines: NVIDIA/nccl issue #147
    (
        "learnfair062:40509:40629 [3] NCCL INFO Ring 04 : 3[3] -> 2[2] via P2P/IPC",
        "P2P/IPC",
        "P2P",
        "3[3] -> 2[2]",
    ),
    # NCCL 2.4's NET line prints the ranks without devices (a NCCL 2.4.8 log quoted in a GitHub-hosted note)
    ("NCCL INFO Ring 00 : 3 -> 10 [send] via NET/IB/0/GDRDMA", "NET/IB/0/GDRDMA", "NET", "3 -> 10 [send]"),
    # NCCL 2.7: shared memory is "direct shared memory" (a NCCL 2.7.8 log)
    (
        "4e9a7654171e:8641:8784 [2] NCCL INFO Channel 00 : 2[89000] -> 3[b2000] via direct shared memory",
        "direct shared memory",
        "SHM",
        "2[89000] -> 3[b2000]",
    ),
    # the same, without the host prefix (NVIDIA/nccl issue #1190, 2x RTX 2080 Ti)
    (
        "NCCL INFO Channel 00 : 1[89000] -> 0[3d000] via direct shared memory",
        "direct shared memory",
        "SHM",
        "1[89000] -> 0[3d000]",
    ),
    # NCCL 2.8+: SHM/direct/direct (NVIDIA/nccl-tests issue #166)
    (
        "ubuntu:39964:40050 [6] NCCL INFO Channel 09 : 6[6] -> 7[7] via SHM/direct/direct",
        "SHM/direct/direct",
        "SHM",
        "6[6] -> 7[7]",
    ),
    # P2P/direct pointer: one process driving several GPUs (NVIDIA/nccl issue #629)
    (
        "A03-R28-I49-3-9000018:193027:193118 [6] NCCL INFO Channel 06 : 14[e1000] -> 13[a7000] via "
        "P2P/direct pointer/read",
        "P2P/direct pointer/read",
        "P2P",
        "14[e1000] -> 13[a7000]",
    ),
    # NET/IB without GDR, [send] (NVIDIA/nccl issue #629)
    (
        "A03-R28-I49-2-6000166:58077:58136 [1] NCCL INFO Channel 05 : 1[2b000] -> 8[25000] [send] via NET/IB/1",
        "NET/IB/1",
        "NET",
        "1[2b000] -> 8[25000] [send]",
    ),
    # NCCL 2.12+: channel/connection index, NET/IB with GPUDirect RDMA (a GitHub-hosted log)
    (
        "tpgds-aihub0008:207007:207007 [0] NCCL INFO Channel 07/0 : 8[0] -> 7[7] [send] via NET/IB/0/GDRDMA",
        "NET/IB/0/GDRDMA",
        "NET",
        "8[0] -> 7[7] [send]",
    ),
    # NET/Socket (NVIDIA/nccl-tests issue #166)
    (
        "ubuntu:9621:9692 [7] NCCL INFO Channel 14/0 : 15[7] -> 0[0] [send] via NET/Socket/0",
        "NET/Socket/0",
        "NET",
        "15[7] -> 0[0] [send]",
    ),
    # A network plugin whose name holds a space, behind mpirun --tag-output (aws-ofi-nccl on EFA; a GitHub-hosted
    # guide)
    (
        "[1,1]<stdout>:test-nccl-efa-worker-1:21:26 [0] NCCL INFO Channel 00/0 : 0[35000] -> 1[f5000] [receive] via "
        "NET/AWS Libfabric/0",
        "NET/AWS Libfabric/0",
        "NET",
        "0[35000] -> 1[f5000] [receive]",
    ),
    # RCCL appends the communicator (Frontier, quoted in a parser's comment)
    (
        "frontier00061:695135:695311 [0] NCCL INFO Channel 03/0 : 0[d6000] -> 2[de000] via P2P/IPC comm 0x9bbf3b0 "
        "nRanks 4096",
        "P2P/IPC",
        "P2P",
        "0[d6000] -> 2[de000]",
    ),
    # CollNet (SHARP): one rank and the network, NCCL 2.23.4
    (
        "gpu34:23654:23684 [0] NCCL INFO CollNet 00/0 : 0 [receive] via COLLNET/SHARP/1/GDRDMA",
        "COLLNET/SHARP/1/GDRDMA",
        "COLLNET",
        "0 -> CollNet [receive]",
    ),
]


@pytest.mark.parametrize(("line", "transport", "kind", "peers"), REAL_LINES, ids=[r[1] for r in REAL_LINES])
def test_real_line(line: str, transport: str, kind: str, peers: str) -> None:
    log = parse_nccl_log(line + "\n")
    assert [(c.transport, c.kind, c.peer_key) for c in log.channels] == [(transport, kind, peers)]
    assert log.transports == [transport]
    assert log.transport_kinds == [kind]
    assert transport_kind(transport) == kind


def test_ring_orders_are_not_connections() -> None:
    """NCCL 2.4's ring order "Ring 00 : 7 -> 0 -> 1" and 2.7's "Channel 00/02 :    0   1" list ranks, no link."""
    text = "NCCL INFO Ring 00 : 7 -> 0 -> 1\n4e9a7654171e:8639:8745 [0] NCCL INFO Channel 00/02 :    0   1   2   3\n"
    assert parse_nccl_log(text).channels == []


def test_direct_shared_memory_is_not_reported_as_p2p() -> None:
    """A 2.7 log whose GPUs talk through host memory says SHM, and a "P2P" run over it is flagged."""
    log = parse_nccl_log(
        "4e9a7654171e:8640:8763 [1] NCCL INFO Could not enable P2P between dev 1(=3d000) and dev 0(=1a000)\n"
        "4e9a7654171e:8639:8745 [0] NCCL INFO Channel 00 : 0[1a000] -> 1[3d000] via direct shared memory\n"
    )
    assert log.description == SHM_LABEL
    assert log.p2p_disabled is None  # unavailable, not turned off
    assert "could not enable P2P between dev 1 and dev 0 (line 1)" in log.p2p_evidence
    warning = p2p_mismatch(log, expected_p2p=True)
    assert warning is not None
    assert "direct shared memory (1 channel lines)" in warning


def test_nvls_is_a_transport_without_via_lines() -> None:
    """NVLink SHARP shows as "NVLS comm ... headRank" and "Connected NVLS tree" (an 8-GPU NVSwitch node's log)."""
    log = parse_nccl_log(
        "nf5688m7-1:422771:422789 [3] NCCL INFO NVLS comm 0x5598478b07c0 headRank 1 nHeads 8 buffSize 4194304 "
        "memSize 2097152 nvlsPerRankSize 201326592 nvlsTotalSize 1610612736\n"
        "nf5688m7-1:422771:422793 [7] NCCL INFO Channel 04/0 : 7[7] -> 4[4] via P2P/direct pointer\n"
        "nf5688m7-1:422771:422792 [6] NCCL INFO Connected NVLS tree\n"
        "nf5688m7-1:422771:422792 [6] NCCL INFO 16 coll channels, 16 nvls channels, 16 p2p channels, "
        "16 p2p channels per peer\n"
    )
    assert log.transport_kinds == ["NVLS", "P2P"]
    assert log.transports == ["P2P/direct pointer"]
    assert "NVLS (NVLink SHARP)" in log.description


def test_nvls_available_but_unused_is_not_nvls() -> None:
    log = parse_nccl_log(
        "algo-1:18062:18131 [5] NCCL INFO NVLS multicast support is not available on dev 5\n"
        "h:1:1 [0] NCCL INFO 24 coll channels, 0 nvls channels, 32 p2p channels, 32 p2p channels per peer\n"
    )
    assert "NVLS" not in log.transport_kinds


def test_two_connections_glued_on_one_line_are_both_read() -> None:
    line = (
        "h:1:2 [0] NCCL INFO Channel 00 : 0[0] -> 1[1] via direct shared memoryh:1:3 [1] NCCL INFO "
        "Channel 00 : 1[1] -> 0[0] via direct shared memory"
    )
    log = parse_nccl_log(line + "\n")
    assert [c.peer_key for c in log.channels] == ["0[0] -> 1[1]", "1[1] -> 0[0]"]

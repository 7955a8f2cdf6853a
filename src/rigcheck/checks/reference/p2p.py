"""What a p2p matrix says beside each pair's band: P2P enabled slower than staged copies. Pure.

p2pBandwidthLatencyTest measures each pair twice: P2P=Disabled (the driver stages the copy through host memory)
and P2P=Enabled (a direct PCIe or NVLink write). A direct copy should never be slower than one that crosses host
memory twice; when it is, the peer writes are being sent the long way, most often because PCIe Access Control
Services (ACS) on a switch or root port, or the IOMMU, redirect peer traffic up to the root complex, or the
driver's P2P on that platform is broken. NVIDIA recommends ACS off for GPU P2P; NCCL's troubleshooting guide
names the symptom (P2P slower or hanging) and the fix.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from rigcheck.checks.verify.figures import margin_pct
from rigcheck.model.bench import P2PRow
from rigcheck.model.bench_judgement import FigureJudgement

CHECK: Final = "p2p_vs_staged"
# A direct copy more than this much under the staged one is flagged: the two are measured one after the other
# with the same buffer, so run-to-run noise is a few percent (healthy pairs without P2P: 20.91 vs 21.73 GB/s,
# tests/fixtures/p2p-bands/2x4090-p2p-disabled-by-driver.txt).
SLOWER: Final = 0.10
SOURCE: Final = (
    "NCCL troubleshooting, PCI Access Control Services (ACS), "
    "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html#pci-access-control-services-acs; "
    "P2P enabled 9.6-10.5 vs staged 20.1-22.4 GB/s, https://github.com/NVIDIA/nccl/issues/814"
)
WHY: Final = (
    "peer writes take a longer path than a copy through host memory: PCIe ACS or the IOMMU redirecting P2P "
    "through the root complex (disable ACS on the PCIe switches and root ports, or IOMMU passthrough), or the "
    "driver's P2P on this platform is broken; until fixed, NCCL_P2P_DISABLE=1 is faster"
)


def slower_than_staged(rows: Sequence[P2PRow]) -> list[FigureJudgement]:
    """A fail for each ordered pair whose P2P-enabled one-direction copy is more than SLOWER under its staged
    copy (the same tool, the same testcase name); pairs that cannot use peer access copy staged both times."""
    staged = {(r.src, r.dst, r.name): r.unidirectional_gbps for r in rows if r.mode == "staged" and r.src != r.dst}
    found: list[FigureJudgement] = []
    for row in rows:
        if row.mode != "peer" or row.src == row.dst or row.peer_access is False:
            continue
        host = staged.get((row.src, row.dst, row.name))
        if host is None or host <= 0 or row.unidirectional_gbps >= host * (1 - SLOWER):
            continue
        slower = 1 - row.unidirectional_gbps / host
        found.append(
            FigureJudgement(
                check=CHECK,
                subject=f"GPU{row.src}->GPU{row.dst}",
                value=row.unidirectional_gbps,
                floor=host,
                verdict="fail",
                reason=f"P2P enabled {row.unidirectional_gbps:g} GB/s is {slower:.0%} slower than the staged copy "
                f"through host memory ({host:g} GB/s): {WHY}",
                source=SOURCE,
                margin_pct=margin_pct(row.unidirectional_gbps, host),
            )
        )
    return found

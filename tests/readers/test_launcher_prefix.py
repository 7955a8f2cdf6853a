"""One rule for what a launcher or log collector puts before each line (readers/launcher_prefix.py): every reader
of a reference tool's text reads a real output the same under each prefix, alone or stacked."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rigcheck.readers.launcher_prefix import strip_launcher_prefix
from rigcheck.readers.reference.nccl_tests import looks_like_nccl_tests, parse_nccl_tests
from rigcheck.readers.reference.nvbandwidth import parse_nvbandwidth
from rigcheck.readers.reference.p2p_latency_test import parse_p2p_latency_test
from rigcheck.readers.reference.reference_import import detect_tool

FIXTURES = Path(__file__).parent.parent / "fixtures"

# Each as the tool's line is shown after it: the collector's timestamp, a quote, the rank tags of Open MPI,
# MPICH / Intel MPI and Slurm (srun pads the label when there are ten tasks or more), and two stacked.
PREFIXES = {
    "kubectl": "2026-11-26T08:00:00.123456789Z ",
    "markdown": "> ",
    "openmpi": "[1,0]<stdout>:",
    "mpich": "[0] ",
    "srun": " 0: ",
    "kubectl+srun": "2026-11-26T08:00:00+00:00 12: ",
    "markdown+openmpi": "> [1,3]<stderr>: ",
}

Reader = Callable[[str], Any]
READERS: dict[str, tuple[Path, Reader]] = {
    "nccl-tests": (FIXTURES / "corpus/nccl-tests/001-2x2080ti-allreduce-pcie-no-p2p.txt", parse_nccl_tests),
    "nvbandwidth": (FIXTURES / "reference-tools/nvbandwidth-1xh100-vm-v0.8.txt", parse_nvbandwidth),
    "p2pBandwidthLatencyTest": (FIXTURES / "corpus/p2p/001-2x2080ti-cannot-access-peer.txt", parse_p2p_latency_test),
}


@pytest.mark.parametrize("prefix", list(PREFIXES.values()), ids=list(PREFIXES))
@pytest.mark.parametrize("reader", list(READERS), ids=list(READERS))
def test_every_reader_reads_a_prefixed_output_as_the_plain_one(reader: str, prefix: str) -> None:
    path, parse = READERS[reader]
    plain_text = path.read_text(encoding="utf-8")
    prefixed = "\n".join(prefix + line for line in plain_text.splitlines())
    plain = parse(plain_text)
    assert parse(prefixed) == plain
    # and `bench … --from` knows the tool under the prefix, as it does without
    if reader == "nccl-tests":
        assert looks_like_nccl_tests(prefixed)
    else:
        assert detect_tool(prefixed) == reader


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("[1,0]<stdout>:#  Rank  0 Group  0 Pid 1 on host device  0", "#  Rank  0 Group  0 Pid 1 on host device  0"),
        ("12: Device: 0, NVIDIA H100", "Device: 0, NVIDIA H100"),
        (
            "[3] memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)",
            "memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)",
        ),
        # the tools' own lines are left alone: a matrix row, a size column, a bracketed bus id later on the line
        ("       0    1234.56", "       0    1234.56"),
        (
            "           8             2     float     sum      -1",
            "           8             2     float     sum      -1",
        ),
        (
            "#  Rank  1 Group  0 Pid 2 on host device  1 [0x1b] NVIDIA",
            "#  Rank  1 Group  0 Pid 2 on host device  1 [0x1b] NVIDIA",
        ),
    ],
)
def test_a_prefix_goes_and_the_tools_text_stays(line: str, expected: str) -> None:
    assert strip_launcher_prefix(line) == expected

"""What a launcher or a log collector writes before each line of a tool's output, removed before the tool's own
text is read. One rule for every reader of a reference tool's text (nccl-tests, nvbandwidth,
p2pBandwidthLatencyTest), so that an output pasted from any of these places reads the same in all of them.

Each prefix is removed at most once, in the order a capture stacks them: the collector's timestamp outermost,
then a Markdown quote (an issue or a chat), then the MPI or Slurm rank tag.
"""

from __future__ import annotations

import re

_PREFIXES = (
    re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:[\d.]+(?:Z|[+-]\d\d:?\d\d)?\s"),  # kubectl logs --timestamps
    re.compile(r"^\s*>\s?"),  # a Markdown quote
    re.compile(r"^\s*\[\d+,\d+\]<std(?:out|err)>:\s?"),  # Open MPI's mpirun --tag-output: [job,rank]<stdout>:
    re.compile(r"^\s*\[\d+\]\s"),  # MPICH / Intel MPI mpiexec -prepend-rank (-l): [rank]
    re.compile(r"^\s*\d+:\s"),  # Slurm srun --label (-l): rank:
)


def strip_launcher_prefix(line: str) -> str:
    """``line`` without the launcher and collector prefixes it starts with (the rest unchanged)."""
    for prefix in _PREFIXES:
        line = prefix.sub("", line, count=1)
    return line

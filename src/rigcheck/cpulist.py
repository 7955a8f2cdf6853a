"""Linux CPU lists ("0-23,48-71"): the form sysfs, `nvidia-smi topo -m` and taskset use."""

from __future__ import annotations

from collections.abc import Iterable


def parse_cpulist(text: str) -> set[int]:
    """A kernel CPU list ("0-23,48-71", "3", "") to the set of CPUs; ValueError on anything else."""
    cpus: set[int] = set()
    for raw in text.strip().split(","):
        part = raw.strip()
        if not part:
            continue
        lo, sep, hi = part.partition("-")
        if sep:
            first, last = int(lo), int(hi)
            if last < first:
                raise ValueError(f"bad CPU range {part!r}")
            cpus.update(range(first, last + 1))
        else:
            cpus.add(int(lo))
    return cpus


def format_cpulist(cpus: Iterable[int]) -> str:
    """The inverse of :func:`parse_cpulist`: {0, 1, 2, 3, 8} -> "0-3,8"."""
    out: list[str] = []
    ordered = sorted(set(cpus))
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        out.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(out)

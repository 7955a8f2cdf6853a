"""One rule for every command that reads this machine live and finds no usable NVIDIA GPU (none on the PCI bus,
or a driver that does not work): one line on stderr saying so and what the command still does, and exit 1.

doctor, power, thermal and snapshot still print what they could read (their findings carry the reason, so
their own exit code is 1 too), and verify its document (verdict fail, the reason in its drain reason: `--json`
always prints one, `--slurm` always a line); topo, monitor, burn, the GPU benchmarks and fleet have nothing to
show.
``--from`` files, ``bench ... --cpu``, ``verify --cpu``, ``fleet --cpu`` and ``burn --analyze`` do not read the live
GPUs and are not affected.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NoReturn

import typer

from rigcheck.cli.exits import EXIT_PROBLEMS
from rigcheck.cli.streams import note

if TYPE_CHECKING:
    from rigcheck.errors import ProbeError
    from rigcheck.model import Snapshot

# What each command still does without a GPU: the end of its one line.
SHOWING = "showing what can be checked without one (exit 1)"
NO_TOPOLOGY = "no topology to show (read a saved one with --from FILE)"
NO_GPU_BENCH = "nothing to measure (add --cpu to measure CPU processes with gloo)"
VERDICT_WITHOUT_GPU = "nothing to measure: the verdict is fail (exit 1; --cpu measures CPU processes with gloo)"
NOTHING_TO_WATCH = "nothing to watch (`rigcheck burn --analyze FILE` reads a recorded trace)"


def absence(snapshot: Snapshot) -> str | None:
    """Why this snapshot has no GPU to work on, in one line; None when it has GPUs."""
    from rigcheck.checks.doctor.driver import absence_line

    return absence_line(snapshot)


def announce(snapshot: Snapshot, then: str) -> bool:
    """Say on stderr that there is no usable GPU here, and what the command does instead; whether it did."""
    line = absence(snapshot)
    if line is not None:
        note(f"{line}; {then}")
    return line is not None


def stop(snapshot: Snapshot, then: str) -> NoReturn:
    """The rule's line on stderr, then exit 1: for a command with nothing to do without a GPU."""
    note(f"{absence(snapshot) or 'no NVIDIA GPU visible'}; {then}")
    raise typer.Exit(EXIT_PROBLEMS)


def refuse(snapshot: Snapshot, then: str) -> None:
    """:func:`stop` when the live snapshot has no GPU to work on."""
    if absence(snapshot) is not None:
        stop(snapshot, then)


def refuse_unopened(exc: ProbeError, then: str) -> NoReturn:
    """NVML's poller did not open (monitor, burn): say why in the rule's words, the driver's state read from
    sysfs as a snapshot would read it, and exit 1."""
    from rigcheck.probe.live import absent_snapshot
    from rigcheck.probe.nvml.calls import NoGpuError

    if isinstance(exc, NoGpuError):
        line = absence(absent_snapshot(exc)) or f"no NVIDIA GPU visible: {exc}"
    else:  # NVML runs and lists GPUs, but not the ones asked for
        line = f"no NVIDIA GPU visible: {exc}"
    note(f"{line}; {then}")
    raise typer.Exit(EXIT_PROBLEMS)

"""rigcheck's exception tree. Each error says what *kind* of failure it is; cli/exits.py alone turns a kind into an
exit code (the library never decides one).

    RigcheckError            anything rigcheck reports to a user as a one-line error
    ├── UsageError           "usage": bad arguments
    ├── InputError           "input": a file that cannot be read or understood
    │   ├── ParseError       text that is not the output it claims to be; carries file and line
    │   └── SnapshotError    snapshot JSON that is malformed or of another schema version
    ├── OutputError          "output": an output (a report file, stdout) that cannot be written
    ├── ProbeError           "probe": the hardware could not be read at all (no driver, no library)
    └── BenchError           "bench": a measurement could not run

The CLI catches RigcheckError and exits with the code of its kind; anything else is a bug (exit 3).

Apart from the tree: Interrupted (a KeyboardInterrupt), SIGINT or SIGTERM as the CLI raises it. The CLI turns
both signals into it (cli/common.py ``interruptible``), so every ``except KeyboardInterrupt`` that keeps what
was measured (the launcher, burn, monitor) handles SIGTERM like Ctrl-C and can say which signal it was. The
library never installs a signal handler.
"""

from __future__ import annotations

import signal
from typing import Literal

ErrorKind = Literal["usage", "input", "output", "probe", "bench"]


class RigcheckError(Exception):
    """Base of every error rigcheck raises on purpose; ``kind`` says which (a subclass sets its own)."""

    kind: ErrorKind = "usage"


class UsageError(RigcheckError):
    """The command line asks for something impossible."""

    kind: ErrorKind = "usage"


class InputError(RigcheckError):
    """An input file cannot be used. ``path`` and ``line`` locate the problem when known."""

    kind: ErrorKind = "input"

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None) -> None:
        self.path = path
        self.line = line
        self.detail = message
        where = ""
        if path is not None:
            where = f"{path}:{line}: " if line is not None else f"{path}: "
        super().__init__(f"{where}{message}")


class ParseError(InputError):
    """Text that does not parse as the output of the tool it is supposed to come from."""


class SnapshotError(InputError):
    """A snapshot JSON document that is malformed or of an unsupported schema."""


class OutputError(RigcheckError):
    """An output cannot be written: a full or read-only disk, a closed or full stdout, a target that is not a
    regular file (model/files_out.py). An old file it was to replace is left as it was."""

    kind: ErrorKind = "output"


class ProbeError(RigcheckError):
    """The machine could not be probed at all (no NVIDIA driver, no NVML library)."""

    kind: ErrorKind = "probe"


class NotAnswering(ProbeError):
    """A call into the driver (NVML) that did not return within its deadline (rigcheck.probe.deadline)."""


class BenchError(RigcheckError):
    """A measurement could not be carried out."""

    kind: ErrorKind = "bench"


# --- interruptions (SIGINT, SIGTERM) -----------------------------------------------------------------

INTERRUPTED_PREFIX = "interrupted ("


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM arrived; ``signum`` says which."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal_name(signum))
        self.signum = signum


def signal_name(signum: int) -> str:
    """2 -> "SIGINT"; a number Python does not name -> "signal 99"."""
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def signal_of(exc: KeyboardInterrupt) -> int:
    """The signal behind ``exc``: a bare KeyboardInterrupt is Python's own SIGINT handler."""
    return exc.signum if isinstance(exc, Interrupted) else int(signal.SIGINT)


def interrupt_behind(exc: BaseException) -> KeyboardInterrupt | None:
    """The KeyboardInterrupt an exception stands for, if any: Python 3.11 wraps one raised inside a class's
    ``__set_name__`` (Ctrl-C landing while torch is being imported) in a RuntimeError, cause set."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, KeyboardInterrupt):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def interrupted_text(signum: int) -> str:
    """The one-line reason a run kept partial results for: "interrupted (SIGTERM)"."""
    return f"{INTERRUPTED_PREFIX}{signal_name(signum)})"


def was_interrupted(error: str | None) -> bool:
    """Whether a document's ``error`` is :func:`interrupted_text` (an interrupted run, not a failed one)."""
    return error is not None and error.startswith(INTERRUPTED_PREFIX)

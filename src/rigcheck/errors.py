"""rigcheck's exception tree.

    RigcheckError            anything rigcheck reports to a user as a one-line error
    ├── UsageError           bad arguments (exit 2)
    ├── InputError           a file that cannot be read or understood (exit 2)
    │   ├── ParseError       text that is not the output it claims to be; carries file and line
    │   └── SnapshotError    snapshot JSON that is malformed or of another schema version
    ├── ProbeError           the hardware could not be read at all (no driver, no library)
    └── BenchError           a measurement could not run

The CLI catches RigcheckError and maps it to an exit code; anything else is a bug (exit 3).
"""

from __future__ import annotations


class RigcheckError(Exception):
    """Base of every error rigcheck raises on purpose."""

    exit_code = 2


class UsageError(RigcheckError):
    """The command line asks for something impossible."""


class InputError(RigcheckError):
    """An input file cannot be used. ``path`` and ``line`` locate the problem when known."""

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


class ProbeError(RigcheckError):
    """The machine could not be probed at all (no NVIDIA driver, no NVML library)."""

    exit_code = 1


class BenchError(RigcheckError):
    """A measurement could not be carried out."""

    exit_code = 1

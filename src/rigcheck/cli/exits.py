"""Exit codes (docs/design.md "Contracts", docs/commands.md "Exit codes"), decided here in cli/ and nowhere below
it. The library says what kind of outcome a run had and what kind of error stopped it: an error's ``kind``
(rigcheck.errors), doctor's and verify's outcome from the one verdict contract (rigcheck.checks.verdicts,
docs/verdicts.md), a burn's outcome (rigcheck.bench.burn.burn_outcome); this module maps each kind to its code.
A document that prints an ``exit_code`` gets it from here, filled by the command that builds it.

Nothing at module level imports beyond rigcheck.errors: main() reaches this module on every error path."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from rigcheck.bench.burn import BurnOutcome
    from rigcheck.checks.verdicts import Outcome
    from rigcheck.errors import ErrorKind, RigcheckError
    from rigcheck.model.finding import Finding

EXIT_OK: Final = 0
EXIT_PROBLEMS: Final = 1  # a finding fails (or warns, under --strict); a measurement failed
EXIT_BAD_INPUT: Final = 2
EXIT_INTERNAL: Final = 3
EXIT_INTERRUPTED: Final = 130  # the shell's convention for SIGINT: 128 + 2
EXIT_TERMINATED: Final = 143  # SIGTERM (Slurm, Kubernetes, `kill`): 128 + 15

# An error of each kind: bad arguments and unusable inputs or outputs are the caller's to fix (2); a machine that
# cannot be read or a measurement that cannot run is a problem found on the node (1).
ERROR_EXITS: Final[Mapping[ErrorKind, int]] = {
    "usage": EXIT_BAD_INPUT,
    "input": EXIT_BAD_INPUT,
    "output": EXIT_BAD_INPUT,
    "probe": EXIT_PROBLEMS,
    "bench": EXIT_PROBLEMS,
}

# doctor's, power's, thermal's, verify's and fleet's outcome (checks/verdicts.Outcome).
OUTCOME_EXITS: Final[Mapping[Outcome, int]] = {"ok": EXIT_OK, "problems": EXIT_PROBLEMS}

# A burn's outcome; an interrupted one is SIGINT's code unless the signal is known (exit_code_for_burn).
BURN_EXITS: Final[Mapping[BurnOutcome, int]] = {
    "ok": EXIT_OK,
    "problems": EXIT_PROBLEMS,
    "interrupted": EXIT_INTERRUPTED,
}


def exit_code_for_signal(signum: int) -> int:
    """The shell's convention, 128 + the signal: 130 for SIGINT, 143 for SIGTERM."""
    return 128 + signum


def exit_code_for_error(exc: RigcheckError) -> int:
    """The exit code of an error rigcheck raised on purpose, from its kind."""
    return ERROR_EXITS[exc.kind]


def exit_code_for(findings: Iterable[Finding], *, strict: bool = False) -> int:
    """0 when healthy; 1 when any finding fails, or warns under ``strict``. ``unknown`` never changes it."""
    from rigcheck.checks.verdicts import doctor_outcome

    return OUTCOME_EXITS[doctor_outcome(findings, strict=strict)]


def exit_code_for_verdict(verdict: str) -> int:
    """`rigcheck verify` (and fleet): 0 on pass and unjudged; 1 on fail and on incomplete (a node that could not be
    verified is not passed), and on a verdict the contract does not know."""
    from rigcheck.checks.verdicts import NODE_RULES

    rule = next((r for v, r in NODE_RULES.items() if v == verdict), None)
    return OUTCOME_EXITS[rule.outcome] if rule is not None else EXIT_PROBLEMS


def exit_code_for_burn(outcome: BurnOutcome, signum: int | None = None) -> int:
    """A burn's exit code (the document's ``exit_code``): an interrupted one is 128 + ``signum`` when the signal
    is known (143 for SIGTERM), else 130."""
    if outcome == "interrupted" and signum is not None:
        return exit_code_for_signal(signum)
    return BURN_EXITS[outcome]

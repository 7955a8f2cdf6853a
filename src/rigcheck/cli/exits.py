"""Exit codes (DESIGN.md "Contracts"), decided here in cli/ and nowhere below it: doctor's and verify's from the
one verdict contract (rigcheck.checks.verdicts, docs/verdicts.md)."""

from __future__ import annotations

from collections.abc import Iterable

from rigcheck.model.finding import Finding

EXIT_OK = 0
EXIT_PROBLEMS = 1  # a finding fails (or warns, under --strict); a measurement failed
EXIT_BAD_INPUT = 2
EXIT_INTERNAL = 3
EXIT_INTERRUPTED = 130  # the shell's convention for SIGINT: 128 + 2
EXIT_TERMINATED = 143  # SIGTERM (Slurm, Kubernetes, `kill`): 128 + 15


def exit_code_for_signal(signum: int) -> int:
    """The shell's convention, 128 + the signal: 130 for SIGINT, 143 for SIGTERM."""
    return 128 + signum


def exit_code_for(findings: Iterable[Finding], *, strict: bool = False) -> int:
    """0 when healthy; 1 when any finding fails, or warns under ``strict``. ``unknown`` never changes it."""
    from rigcheck.checks.verdicts import doctor_exit_code

    return doctor_exit_code(findings, strict=strict)


def exit_code_for_verdict(verdict: str) -> int:
    """`rigcheck verify` (and fleet): 0 on pass and unjudged; 1 on fail and on incomplete (a node that could not be
    verified is not passed)."""
    from rigcheck.checks.verdicts import NODE_RULES

    rule = next((r for v, r in NODE_RULES.items() if v == verdict), None)
    return rule.exit_code if rule is not None else EXIT_PROBLEMS

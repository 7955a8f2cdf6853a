"""The verdict words of verify and fleet and their order, apart from the verify document's pydantic models: the
verdict contract (checks/verdicts.py) needs only these, and `doctor` asks it for its exit code, so it loads no
bench, burn or verify model for them."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final, Literal

# unjudged: measured, nothing failed, but no band (nor peer, nor baseline) held the figure: a CPU run, a GPU
# rigcheck has no band for (docs/verdicts.md).
Verdict = Literal["pass", "fail", "incomplete", "unjudged"]
# not_applicable: the step does not apply (p2p on one GPU, the burn on a CPU run); left_out: `--only` left it out;
# skipped: it applies and did not run (no document of it in `--from DIR`): the node is incomplete.
StepStatus = Literal["done", "cut_short", "failed", "skipped", "not_applicable", "left_out"]

VERDICT_ORDER: Final[tuple[Verdict, ...]] = ("pass", "unjudged", "incomplete", "fail")
_ORDER: Final[dict[str, int]] = {v: i for i, v in enumerate(VERDICT_ORDER)}


def worst(verdicts: Iterable[Verdict]) -> Verdict:
    """fail > incomplete > unjudged > pass; ``pass`` for nothing at all."""
    found: Verdict = "pass"
    for v in verdicts:
        if _ORDER[v] > _ORDER[found]:
            found = v
    return found

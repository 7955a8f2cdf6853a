"""gpu-burn's progress-line pattern stays linear: a fuzzed input (its lines joined into one, a run of digits, a
progress head without its fields) once held `burn --analyze` past the fuzz test's 20 s limit."""

from __future__ import annotations

import pytest

from rigcheck.readers.reference.gpu_burn import looks_like_gpu_burn
from tests.support.fuzzing import time_limit

HEAD = "12.5%  proc'd: 10 (7124 Gflop/s) - 9 (6963 Gflop/s)   "


@pytest.mark.parametrize(
    "text",
    [
        HEAD * 4000,  # progress heads, no 'errors:' or 'temps:' after any of them
        (HEAD + "errors: 0 - 0   ") * 4000,  # fields cut before 'temps:'
        "7" * 200_000 + "% proc'd:",  # one long number before a percent sign
    ],
    ids=["heads-only", "no-temps", "digit-run"],
)
def test_detection_is_linear_on_hostile_input(text: str) -> None:
    # Quadratic backtracking took tens of seconds on these; linear takes milliseconds (the limit raises Hang).
    with time_limit(5.0):
        assert looks_like_gpu_burn(text) in (True, False)


def test_a_real_progress_line_is_still_recognised() -> None:
    assert looks_like_gpu_burn(HEAD + "errors: 0 - 0   temps: 56 C - 73 C \n")
    assert not looks_like_gpu_burn("12.5% done, nothing else\n")

"""A figure of an imported measurement (`rigcheck bench p2p | membw | hostlink | matmul --from FILE`) judged
against the band `rigcheck verify` holds that check to (rigcheck.facts.bands): one entry of a bench document's
``judgement`` list. Kept apart from model/bench.py, which holds every benchmark's rows."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, WithJsonSchema

from rigcheck.model.absent import absent_unless_set
from rigcheck.model.document import Plain

Verdict = Literal["pass", "fail", "unjudged"]
# A number as the code produced it: a catalogue figure may be an int and stays one in the JSON.
_Number = Annotated[int | float, WithJsonSchema({"type": "number"})]


class FigureJudgement(Plain):
    """One figure against the floor of its check's band; ``unjudged`` (floor and source null) when no band
    applies, with ``reason`` saying what would give one."""

    check: str = Field(description="the band's check: p2p, membw, hostlink_h2d, hostlink_d2h, matmul_bf16...")
    subject: str = Field(description='what was measured: "GPU0", "GPU0->GPU1"')
    value: _Number = Field(description="the figure the band is about: GB/s (membw: read + write), matmul: TFLOPS")
    floor: _Number | None = Field(description="the band's expected_min; null when unjudged")
    verdict: Verdict
    reason: str
    source: str | None = Field(description="the band's source; null when unjudged")
    margin_pct: float | None = absent_unless_set(
        "how far the figure is from the floor, in percent of it: +21.2 above, -19.8 below; absent when unjudged"
    )

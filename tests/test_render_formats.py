"""Every document × every format: each report module draws its document in all four formats, from a real input.

Each typed document registers a sample here (a document built as its command builds it, from a fixture); the
test fails when a document has a schema but no renderers, or renderers but no sample, so no format is forgotten.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable

import pytest
from rich.console import Console

from rigcheck.model.document import Document
from rigcheck.model.schema import GENERATED
from rigcheck.report.render import REPORT_MODULES, Format, render, renderers_for
from tests.test_schemas import assert_valid

# schema id -> a function that builds a real document of that kind.
SAMPLES: dict[str, Callable[[], Document]] = {}


def test_every_typed_document_has_renderers_and_a_sample() -> None:
    assert set(REPORT_MODULES) == set(GENERATED) == set(SAMPLES)


@pytest.mark.parametrize("fmt", list(Format), ids=lambda f: f.value)
@pytest.mark.parametrize("schema_id", sorted(SAMPLES))
def test_document_renders_in_format(schema_id: str, fmt: Format) -> None:
    doc = SAMPLES[schema_id]()
    assert renderers_for(schema_id).get(fmt) is not None
    out = render(doc, fmt)
    if fmt is Format.TERMINAL:
        console = Console(file=io.StringIO(), width=120, color_system=None)
        console.print(out)
        text = console.file.getvalue()  # type: ignore[attr-defined]
        assert text.strip()
        return
    assert isinstance(out, str)
    assert out.strip()
    if fmt is Format.JSON:
        data = json.loads(out)
        assert data["schema"] == schema_id
        assert_valid(data)
    elif fmt is Format.HTML:
        assert out.startswith("<!DOCTYPE html>")
        assert "Content-Security-Policy" in out
    elif fmt is Format.MARKDOWN:
        assert out.lstrip().startswith("#")

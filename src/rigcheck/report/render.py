"""One home per rendering: which module draws which document, in which format.

Each ``report/<document>.py`` defines ``RENDERERS = Renderers(terminal=…, json=…, markdown=…, html=…)``: all
four are required arguments, so a document cannot forget a format, and :meth:`Renderers.get` maps every
:class:`Format` member (tests/report/test_render_formats.py walks every document × every format). Renderers return
text or a rich renderable and never print; the CLI prints and sets the exit code.

:data:`REPORT_MODULES` maps each document's schema id to its report module, imported only when a document of
that kind is drawn (start-up loads no renderer it does not use).
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    from rich.console import RenderableType

    from rigcheck.model.document import Document


class Format(str, Enum):
    """Output formats; every member has a renderer for every document (tests walk them all)."""

    TERMINAL = "terminal"
    JSON = "json"
    MARKDOWN = "markdown"
    HTML = "html"


D = TypeVar("D", bound="Document")


@dataclass(frozen=True)
class Renderers(Generic[D]):
    """The four renderings of one document type."""

    terminal: Callable[[D], RenderableType]
    json: Callable[[D], str]
    markdown: Callable[[D], str]
    html: Callable[[D], str]

    def get(self, fmt: Format) -> Callable[[D], RenderableType | str]:
        by_format: dict[Format, Callable[[D], RenderableType | str]] = {
            Format.TERMINAL: self.terminal,
            Format.JSON: self.json,
            Format.MARKDOWN: self.markdown,
            Format.HTML: self.html,
        }
        return by_format[fmt]


# Document schema id -> the report module that draws it (each defines RENDERERS).
REPORT_MODULES: dict[str, str] = {
    "rigcheck.bench/1": "rigcheck.report.bench.render",
    "rigcheck.plan/1": "rigcheck.report.plan",
    "rigcheck.doctor/1": "rigcheck.report.doctor",
    "rigcheck.topo/1": "rigcheck.report.topo",
    "rigcheck.power/1": "rigcheck.report.power_thermal",
    "rigcheck.thermal/1": "rigcheck.report.power_thermal",
    "rigcheck.power-plan/1": "rigcheck.report.power_plan",
    "rigcheck.nccl-log/1": "rigcheck.report.nccl_log",
    "rigcheck.burn/2": "rigcheck.report.burn.render",
    "rigcheck.monitor/2": "rigcheck.report.monitor",
    "rigcheck.verify/1": "rigcheck.report.verify.render",
    "rigcheck.verify-bands/1": "rigcheck.report.verify.bands",
    "rigcheck.fleet/1": "rigcheck.report.fleet",
}


def renderers_for(schema_id: str) -> Renderers[Any]:
    """The renderers of a document kind, importing its report module now."""
    module = importlib.import_module(REPORT_MODULES[schema_id])
    renderers: Renderers[Any] = module.RENDERERS
    return renderers


def render(doc: Document, fmt: Format) -> RenderableType | str:
    """``doc`` drawn in ``fmt``: a rich renderable for the terminal, text for the others."""
    return renderers_for(doc.schema_).get(fmt)(doc)


def dumps(data: object) -> str:
    """JSON as rigcheck prints it: indented, UTF-8 kept readable, a final newline."""
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def json_text(doc: Document) -> str:
    """The JSON rendering every document shares: its JSON dict, as rigcheck prints JSON."""
    return dumps(doc.to_json_dict())

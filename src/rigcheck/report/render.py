"""One home per rendering: which module draws which document, in which format.

Each ``report/<document>.py`` defines ``RENDERERS = Renderers(terminal=…, json=…, markdown=…, html=…)``: all
four are required arguments, so a document cannot forget a format, and :meth:`Renderers.get` maps every
:class:`Format` member (tests/report/test_render_formats.py walks every document × every format). Renderers return
text or a rich renderable and never print; the CLI prints and sets the exit code.

What a command asks of a rendering beyond the format (doctor's --show-unknown, --matrix, the JSON indentation) is a
:class:`RenderOptions` the CLI builds from its flags and hands to :func:`render`; a rendering that reads it is
wrapped in :class:`WithOptions`, and gets it as an argument, never from state around the call.

:data:`REPORT_MODULES` maps each document's schema id to its report module, imported only when a document of
that kind is drawn (start-up loads no renderer it does not use).
"""

from __future__ import annotations

import functools
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
T = TypeVar("T")  # what a rendering draws: a document, or a part of one (the doctor report's topology)
R = TypeVar("R")

PRETTY_INDENT = 2  # JSON for a person (a terminal, or --indent 2); None: compact, for a pipe or a file


@dataclass(frozen=True)
class RenderOptions:
    """What the command line asks of a rendering beyond its format, passed down explicitly."""

    show_unknown: bool = False  # doctor --show-unknown: list every unknown finding, none folded
    full_matrix: bool = False  # --matrix: the full GPU matrix at any size, not the summary above 16 GPUs
    indent: int | None = PRETTY_INDENT  # JSON's indentation; None: compact (one line, the C encoder)


DEFAULT_OPTIONS = RenderOptions()


@dataclass(frozen=True)
class WithOptions(Generic[T, R]):
    """A rendering that reads :class:`RenderOptions`; called with the document alone it draws with the defaults."""

    draw: Callable[[T, RenderOptions], R]

    def __call__(self, doc: T, options: RenderOptions = DEFAULT_OPTIONS) -> R:
        return self.draw(doc, options)


@dataclass(frozen=True)
class Renderers(Generic[D]):
    """The four renderings of one document type."""

    terminal: Callable[[D], RenderableType]
    json: Callable[[D], str]
    markdown: Callable[[D], str]
    html: Callable[[D], str]

    def get(self, fmt: Format, options: RenderOptions = DEFAULT_OPTIONS) -> Callable[[D], RenderableType | str]:
        """The rendering of ``fmt``, with ``options`` bound where it reads them."""
        by_format: dict[Format, Callable[[D], RenderableType | str]] = {
            Format.TERMINAL: self.terminal,
            Format.JSON: self.json,
            Format.MARKDOWN: self.markdown,
            Format.HTML: self.html,
        }
        chosen = by_format[fmt]
        if isinstance(chosen, WithOptions):
            return functools.partial(chosen, options=options)
        return chosen


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
    "rigcheck.history/1": "rigcheck.report.history",
}


def renderers_for(schema_id: str) -> Renderers[Any]:
    """The renderers of a document kind, importing its report module now."""
    module = importlib.import_module(REPORT_MODULES[schema_id])
    renderers: Renderers[Any] = module.RENDERERS
    return renderers


def render(doc: Document, fmt: Format, options: RenderOptions = DEFAULT_OPTIONS) -> RenderableType | str:
    """``doc`` drawn in ``fmt``: a rich renderable for the terminal, text for the others."""
    return renderers_for(doc.schema_).get(fmt, options)(doc)


def dumps(data: object, indent: int | None = PRETTY_INDENT) -> str:
    """JSON as rigcheck prints it: UTF-8 kept readable, a final newline; indented by ``indent``, or compact (None:
    no spaces, and json's C encoder: any indentation forces the pure-Python one)."""
    if indent is None:
        return json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n"
    return json.dumps(data, indent=indent, ensure_ascii=False) + "\n"


def _json_text(doc: Document, options: RenderOptions) -> str:
    return dumps(doc.to_json_dict(), options.indent)


# The JSON rendering every document shares: its JSON dict, indented as the options say.
json_text: WithOptions[Document, str] = WithOptions(_json_text)

"""A command group's --help (`rigcheck --help`) drawn as typer draws it, without importing typer.rich_utils.

typer draws every help screen through typer.rich_utils, which imports rich.markdown (markdown-it, pygments)
and rich.traceback at module level: ~55 ms, more than the rest of `rigcheck --help`, for Markdown help and
pretty tracebacks that rigcheck uses neither of. A group's screen whose options are all plain flags is drawn
here instead, with the rich objects, styles and environment switches typer's ``rich_format_help`` uses;
tests/contracts/test_cli_lazy.py holds the two renderings equal (in colour and not, at several widths). Any other
screen — a value option, an argument, help panels, Markdown mode — is left to typer (:func:`can_draw`).
"""

from __future__ import annotations

import inspect
import os
from typing import Any, ClassVar

from rich.align import Align
from rich.columns import Columns
from rich.console import Console, Group, RenderableType
from rich.highlighter import RegexHighlighter
from rich.padding import Padding
from rich.panel import Panel
from rich.table import Table
from rich.text import Text
from rich.theme import Theme
from typer.core import TyperGroup, TyperOption

# typer.rich_utils's styles, for the parts drawn here.
_THEME = {
    "option": "bold cyan",
    "switch": "bold green",
    "negative_option": "bold magenta",
    "negative_switch": "bold red",
    "types": "bold yellow",
    "types_sep": "dim",
    "usage": "yellow",
}
_STYLE_USAGE_COMMAND = "bold"
_STYLE_HELPTEXT = "dim"
_STYLE_TYPES = "bold yellow"
_STYLE_PANEL_BORDER = "dim"
_STYLE_COMMAND_NAME = "bold cyan"


class _OptionHighlighter(RegexHighlighter):
    highlights: ClassVar[list[str]] = [
        r"(^|\W)(?P<switch>\-\w+)(?![a-zA-Z0-9])",
        r"(^|\W)(?P<option>\-\-[\w\-]+)(?![a-zA-Z0-9])",
        r"(?P<types>\<[^\>]+\>)",
        r"(?P<usage>Usage: )",
    ]


class _NegativeOptionHighlighter(RegexHighlighter):
    highlights: ClassVar[list[str]] = [
        r"(^|\W)(?P<negative_switch>\-\w+)(?![a-zA-Z0-9])",
        r"(^|\W)(?P<negative_option>\-\-[\w\-]+)(?![a-zA-Z0-9])",
    ]


class _TypesHighlighter(RegexHighlighter):
    highlights: ClassVar[list[str]] = [
        r"^(?P<types_sep>(\[|<))",
        r"(?P<types_sep>\|)",
        r"(?P<types_sep>(\]|>))(\.\.\.)?$",
    ]


_highlighter = _OptionHighlighter()


def can_draw(group: TyperGroup, ctx: Any) -> bool:
    """Whether this screen is one drawn here: rich markup, no epilog, options that are plain flags, commands
    without panels or deprecation. (Anything else is typer's to draw.)"""
    if group.rich_markup_mode != "rich" or group.epilog or group.deprecated:
        return False
    for param in group.get_params(ctx):
        if getattr(param, "hidden", False):
            continue
        plain_flag = (
            isinstance(param, TyperOption)
            and param.is_flag
            and not param.default
            and not param.required
            and param.envvar is None
            and param.rich_help_panel is None
            and _no_type_label(param, ctx)
        )
        if not plain_flag:
            return False
    commands = [group.get_command(ctx, name) for name in group.list_commands(ctx)]
    return all(c is not None and not c.deprecated and getattr(c, "rich_help_panel", None) is None for c in commands)


def _no_type_label(option: TyperOption, ctx: Any) -> bool:
    """Whether typer shows no type after the flag. typer 0.29 labels through ``display_type_rich`` (app.py
    blanks it for flags); typer 0.20-0.28 have no such method and show none for a flag."""
    labelled = getattr(option, "display_type_rich", None)
    return labelled is None or labelled(ctx=ctx) is None


def draw(group: TyperGroup, ctx: Any) -> None:
    """Print the group's help on stdout, as typer.rich_utils.rich_format_help would."""
    console = _console()
    console.print(Padding(_highlighter(group.get_usage(ctx)), 1), style=_STYLE_USAGE_COMMAND)
    if group.help:
        console.print(Padding(Align(_help_text(group.help), pad=False), (0, 1, 1, 1)))
    options = [p for p in group.get_params(ctx) if isinstance(p, TyperOption) and not p.hidden]
    if options:
        console.print(_panel("Options", _options_table(options)))
    commands = [group.get_command(ctx, name) for name in group.list_commands(ctx)]
    shown = [c for c in commands if c is not None and not c.hidden]
    if shown:
        console.print(_panel("Commands", _commands_table(shown)))


def _console() -> Console:
    """typer's help console, with its environment switches (read when drawing, as typer reads them at import)."""
    force_terminal = True if os.getenv("GITHUB_ACTIONS") or os.getenv("FORCE_COLOR") or os.getenv("PY_COLORS") else None
    if os.getenv("_TYPER_FORCE_DISABLE_TERMINAL"):
        force_terminal = False
    width = os.getenv("TERMINAL_WIDTH")
    return Console(
        theme=Theme(_THEME),
        highlighter=_highlighter,
        color_system="auto",
        force_terminal=force_terminal,
        width=int(width) if width else None,
    )


def _markup(text: str, style: str = "") -> Text:
    """typer's ``_make_rich_text`` in rich markup mode."""
    text = inspect.cleandoc(text)
    if "\033[" in text:
        return _highlighter(Text.from_ansi(text, style=style))
    return _highlighter(Text.from_markup(text, style=style))


def _help_text(help_text: str) -> Group:
    first, *rest = inspect.cleandoc(help_text).partition("\f")[0].split("\n\n")
    if not first.startswith("\b"):
        first = first.replace("\n", " ")
    parts: list[RenderableType] = [_markup(first.strip())]
    if rest:
        parts += [Text(""), _markup("\n\n".join(rest), _STYLE_HELPTEXT)]
    return Group(*parts)


def _table(**columns: Any) -> Table:
    return Table(
        show_header=False,
        expand=True,
        box=None,
        show_lines=False,
        leading=0,
        border_style=None,
        row_styles=None,
        pad_edge=False,
        padding=(0, 1),
        **columns,
    )


def _panel(title: str, table: Table) -> Panel:
    return Panel(table, border_style=_STYLE_PANEL_BORDER, title=title, title_align="left")


def _options_table(options: list[TyperOption]) -> Table:
    negative = _NegativeOptionHighlighter()
    table = _table(highlight=True)
    for option in options:
        paragraphs = [
            p.replace("\n", " ").strip() if not p.startswith("\b") else "{}\n".format(p.strip("\b\n"))
            for p in (option.help or "").split("\n\n")
        ]
        help_text = "\n".join(paragraphs).strip() if option.help else ""
        table.add_row(
            _highlighter(",".join(o for o in option.opts if "--" in o)),
            _highlighter(",".join(o for o in option.opts if "--" not in o)),
            negative(",".join(o for o in option.secondary_opts if "--" in o)),
            negative(",".join(o for o in option.secondary_opts if "--" not in o)),
            _TypesHighlighter()(Text(style=_STYLE_TYPES, overflow="fold")),
            Columns([_markup(help_text)] if option.help else []),
        )
    return table


def _commands_table(commands: list[Any]) -> Table:
    table = _table(highlight=False)
    table.add_column(style=_STYLE_COMMAND_NAME, no_wrap=True, width=max(len(c.name or "") for c in commands))
    table.add_column("Description", justify="left", no_wrap=False, ratio=10)
    for command in commands:
        first = inspect.cleandoc(command.short_help or command.help or "").split("\n\n")[0]
        if first.startswith("\b"):
            first = first.replace("\b\n", "")
        table.add_row(Text(command.name or ""), _markup(first.strip()))
    return table

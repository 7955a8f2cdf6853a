"""A command group that imports a command's module only when that command runs.

Each command is named in a table (:class:`LazyCommand`: name, the one-line help the listing shows, and the
module attribute that defines it). ``--help`` lists the table through light stand-in commands; resolving a
name for a run (``rigcheck doctor ...``, ``rigcheck doctor --help``) imports that one module and swaps the
stand-in for the real command. ``rigcheck --help`` therefore imports no command module, and a command
imports only its own.

typer reads every help text as rich markup, so a site-file table name such as ``[bands]`` would be taken for a
style tag and dropped; each command's help is escaped here, once, as the group builds or loads it
(:func:`escape_help`), so that help prints as written.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import typer
import typer.main
from typer.core import TyperCommand, TyperGroup

from rigcheck.cli.common import interruptible

# What the module attribute is: a command function; ``register(app)`` adding the command to a typer app;
# or a typer app (a group with its own subcommands).
Kind = Literal["function", "register", "typer"]


@dataclass(frozen=True)
class LazyCommand:
    name: str
    help: str  # the listing's line: the first paragraph of the real command's help (a test keeps them equal)
    module: str
    attribute: str
    kind: Kind = "function"

    def load(self) -> Any:
        """The real click command (imports its module)."""
        target = getattr(importlib.import_module(self.module), self.attribute)
        if self.kind == "typer":
            group = typer.main.get_group(target)
            group.name = self.name
            return group
        holder = typer.Typer()
        if self.kind == "register":
            target(holder)
        else:
            holder.command(self.name)(interruptible(target))
        return typer.main.get_group(holder).commands[self.name]


# rich.markup.escape's rule, kept here so that a command which prints no help does not import rich: a "[" that
# rich would read as opening a tag (a lower-case letter, #, / or @ after it) gets a backslash, and each backslash
# already before it is doubled. (rich also doubles a lone trailing backslash, for text pasted before more markup;
# a help text is rendered on its own, where that would print two.) tests/cli/test_help_text.py compares the two.
_TAG = re.compile(r"(\\*)(\[[a-z#/@][^[]*?])")


def escape_markup(text: str) -> str:
    """``text`` as rich markup that prints ``text`` itself."""
    return _TAG.sub(lambda m: f"{m[1]}{m[1]}\\{m[2]}", text)


def escape_help(command: Any) -> Any:
    """Escape the help of ``command``, of its parameters and of its subcommands, in place, where typer reads it as
    rich markup (its help screens and its shell completions both do). A lazy group escapes its own (in
    ``__init__`` and ``load``), so it is left alone here: escaping twice would print the backslashes."""
    if isinstance(command, LazyGroup) or getattr(command, "rich_markup_mode", None) != "rich":
        return command
    _escape_own(command)
    for sub in (getattr(command, "commands", None) or {}).values():
        escape_help(sub)
    return command


def _escape_own(command: Any) -> None:
    for owner in (command, *command.params):
        for field in ("help", "short_help", "epilog"):
            text = getattr(owner, field, None)
            if isinstance(text, str):
                setattr(owner, field, escape_markup(text))


class _Listed(TyperCommand):
    """Stands in for a command in the help listing: its name and one line, nothing imported."""


class LazyGroup(TyperGroup):
    """A typer group whose commands come from ``table``; subclass it and set the table.

    ``commands`` holds a stand-in per command until the command is resolved for a run; listing (help,
    "did you mean") reads the stand-ins, so it imports nothing. The group's own --help is drawn by
    cli/group_help.py where it can be (typer's drawing loads ~55 ms of rich that this screen does not use).
    """

    table: ClassVar[tuple[LazyCommand, ...]] = ()

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        self._lazy = {entry.name: entry for entry in self.table}
        if self.rich_markup_mode == "rich":
            _escape_own(self)
        for entry in self.table:
            self.commands.setdefault(entry.name, escape_help(_Listed(entry.name, help=entry.help)))

    def resolve_command(self, ctx: Any, args: list[str]) -> tuple[str | None, Any, list[str]]:
        if args:
            self.load(args[0])
        return super().resolve_command(ctx, args)

    def format_help(self, ctx: Any, formatter: Any) -> None:
        from rigcheck.cli import group_help  # rich's console and tables: only when help is asked for

        if group_help.can_draw(self, ctx):
            group_help.draw(self, ctx)
        else:
            super().format_help(ctx, formatter)

    def load(self, name: str) -> Any:
        """The real command ``name`` (its module imported now), or None when the table has no such name."""
        command = self.commands.get(name)
        if isinstance(command, _Listed):
            command = escape_help(self._lazy[name].load())
            self.commands[name] = command
        return command

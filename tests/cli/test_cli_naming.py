"""The naming rule of cli/ (its package docstring, src/rigcheck/cli/__init__.py) holds for every module there:
each command is loaded from ``cli/<command>.py``, every other module is a part of a command (``<command>_<part>``)
or plumbing, and the docstring names each of the others and no module that is not there."""

from __future__ import annotations

import re
from pathlib import Path

import rigcheck.cli
from rigcheck.cli.app import RigcheckGroup

CLI = Path(rigcheck.cli.__file__).parent
RULE = rigcheck.cli.__doc__ or ""
COMMANDS = {entry.name.replace("-", "_") for entry in RigcheckGroup.table}


def modules() -> set[str]:
    return {p.stem for p in CLI.glob("*.py") if p.stem != "__init__"}


def plumbing() -> set[str]:
    """The modules the rule's last item names as plumbing."""
    listed = RULE.split("- the rest is plumbing", 1)[1]
    return set(re.findall(r"``(\w+)\.py``", listed))


def test_each_command_is_loaded_from_its_own_module() -> None:
    for entry in RigcheckGroup.table:
        assert entry.module == f"rigcheck.cli.{entry.name.replace('-', '_')}", entry.name
    assert modules() >= COMMANDS


def test_every_module_is_a_command_a_part_of_one_or_plumbing() -> None:
    for name in sorted(modules() - COMMANDS - plumbing()):
        command, _, part = name.partition("_")
        assert command in COMMANDS, f"cli/{name}.py is neither a command, a part of one nor plumbing"
        assert part, name
    assert not plumbing() & COMMANDS


def test_the_rule_names_every_module_but_the_commands_and_no_other() -> None:
    """A command's module is named by the table; each part and each plumbing module by the rule itself."""
    named = set(re.findall(r"``(\w+)\.py``", RULE))
    assert named <= modules()
    assert modules() - COMMANDS <= named
    assert "Not yet so" not in RULE

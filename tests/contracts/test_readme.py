"""Every command line the README shows, and every option docs/commands.md names in its headings, is one the
CLI takes: each is run with --help appended (in-process), and each option it uses must be in that command's
--help. The README lines that need no GPU run for real, on fixtures where they read a file."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import typer.main

from rigcheck.cli.app import RigcheckGroup, app
from rigcheck.cli.lazy import LazyGroup
from tests.support.cli import Rigcheck

ROOT = Path(__file__).resolve().parent.parent.parent
README = ROOT / "README.md"
COMMANDS_MD = ROOT / "docs" / "commands.md"
CORPUS = ROOT / "tests" / "fixtures" / "corpus"

# Wide, so that rich never folds an option name in --help.
WIDE = {"COLUMNS": "400", "NO_COLOR": "1"}


@dataclass
class Line:
    """A documented command line: its words after `rigcheck`, and each option with the command it belongs to."""

    text: str
    args: list[str]
    path: list[str] = field(default_factory=list)
    options: list[tuple[tuple[str, ...], str]] = field(default_factory=list)


def bash_lines(markdown: str) -> list[str]:
    lines: list[str] = []
    inside = False
    for line in markdown.splitlines():
        if line.startswith("```"):
            inside = line.strip() == "```bash"
            continue
        if inside and line.strip():
            lines.append(line.strip())
    return lines


def rigcheck_part(line: str) -> str | None:
    """The rigcheck command of a shell line: after the last `|` or `&&`, `-m rigcheck` read as `rigcheck`, the
    comment, redirections and the brackets around optional parts taken away; None when it runs no rigcheck."""
    line = re.sub(r"\s+#.*$", "", line)
    last = re.split(r"&&|\|", line)[-1].strip()
    module = re.search(r"(?:^|\s)-m rigcheck(\s.*)?$", last)
    if module:
        last = "rigcheck" + (module.group(1) or "")
    if not last.startswith("rigcheck ") and last != "rigcheck":
        return None
    last = re.sub(r"\s[12]?>\s*\S+", "", last)
    return re.sub(r"\[(-[^\[\]]*)\]", r"\1", last)


def option_names(words: list[str]) -> list[str]:
    return [w.split("=", 1)[0] for w in words if re.fullmatch(r"--?[A-Za-z][\w-]*(=.*)?", w)]


def commands_of(command: Any) -> dict[str, Any]:
    found = getattr(command, "commands", None)
    return found if isinstance(found, dict) else {}


def subcommand(command: Any, name: str) -> Any:
    return command.load(name) if isinstance(command, LazyGroup) else commands_of(command)[name]


def parse(text: str) -> Line:
    """Walk the words down the command tree: a word naming a subcommand descends; an option belongs to the
    command it follows (`rigcheck --ascii doctor --json`: --ascii the root's, --json doctor's)."""
    args = shlex.split(text)[1:]
    line = Line(text, args)
    command: Any = typer.main.get_command(app)
    descending = True
    for word in args:
        if word.startswith("-") and word != "-":
            line.options += [(tuple(line.path), name) for name in option_names([word])]
        elif descending and word in commands_of(command):
            command = subcommand(command, word)
            line.path.append(word)
        else:
            descending = False  # an argument or an option's value: no subcommand after it
    return line


def comment_options(line: str) -> list[str]:
    """The long options a line's comment names for its command (`# everything; --json, --strict`); the part
    from `nvidia-smi` on is about nvidia-smi's options."""
    comment = re.search(r"\s#\s(.*)$", line)
    text = comment.group(1).split("nvidia-smi")[0] if comment else ""
    return re.findall(r"(?<![\w-])(--[a-z][\w-]*)", text)


def readme_lines() -> list[Line]:
    lines: dict[str, Line] = {}
    for shell_line in bash_lines(README.read_text(encoding="utf-8")):
        text = rigcheck_part(shell_line)
        if text is None:
            continue
        line = lines.setdefault(text, parse(text))
        line.options += [(tuple(line.path), option) for option in comment_options(shell_line)]
    return list(lines.values())


def help_text(rigcheck: Rigcheck, path: tuple[str, ...] | list[str]) -> str:
    result = rigcheck(*path, "--help", env=WIDE)
    assert result.code == 0, (path, result.stderr)
    return result.stdout


def in_help(option: str, text: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", text) is not None


README_LINES = readme_lines()


def test_the_readme_shows_the_commands_this_test_relies_on() -> None:
    """The extraction found the README's lines (an empty list would pass every test below)."""
    texts = {line.text for line in README_LINES}
    assert "rigcheck doctor" in texts  # the install line's `... && rigcheck doctor`
    assert "rigcheck fleet --cpu" in texts  # the torchrun line
    assert "rigcheck topo --from -" in texts  # the ssh ... | line
    assert "rigcheck doctor --from box.xml --from topo.txt" in texts
    assert 'rigcheck power plan --model "TITAN RTX" --count 2 --psu-watts 1000' in texts  # brackets dropped
    assert len(README_LINES) >= 20


@pytest.mark.parametrize("line", README_LINES, ids=[line.text for line in README_LINES])
def test_readme_line_is_accepted_and_its_options_exist(line: Line, rigcheck: Rigcheck) -> None:
    """The line itself, with --help appended, parses (an option that does not exist would be exit 2), and every
    option it or its comment names is listed in its command's --help."""
    result = rigcheck(*line.args, "--help", env=WIDE)
    assert result.code == 0, result.stderr
    assert line.path, "the line names no command"
    for path, option in line.options:
        assert in_help(option, help_text(rigcheck, path)), f"{option} is not in `rigcheck {' '.join(path)} --help`"


def heading_commands() -> list[str]:
    """docs/commands.md's `## \\`rigcheck ...\\`` headings, and the first cell of each `bench` table row."""
    found: list[str] = []
    for line in COMMANDS_MD.read_text(encoding="utf-8").splitlines():
        heading = re.match(r"## `(rigcheck [^`]+)`", line)
        if heading:
            found.append(heading.group(1))
        cell = re.match(r"\| (`bench .*?) (?<!\\)\|", line)
        if cell:
            found.append("rigcheck " + " ".join(re.findall(r"`([^`]+)`", cell.group(1))))
    return found


HEADINGS = heading_commands()


def test_commands_md_headings_were_found() -> None:
    assert any(h.startswith("rigcheck doctor ") for h in HEADINGS)
    assert any(h.startswith("rigcheck bench hostlink ") for h in HEADINGS)
    assert len(HEADINGS) >= 15


@pytest.mark.parametrize("heading", HEADINGS)
def test_commands_md_heading_options_exist(heading: str, rigcheck: Rigcheck) -> None:
    """A heading is a synopsis (`[--json | --format terminal|json|markdown]`), not a command line: its command
    is the leading words, and each option it names must be in that command's --help."""
    words = heading.replace("…", " ").split()[1:]
    command: Any = typer.main.get_command(app)
    path: list[str] = []
    for word in words:
        if word not in commands_of(command):
            break
        command = subcommand(command, word)
        path.append(word)
    assert path, heading
    text = help_text(rigcheck, path)
    options = re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", heading)
    missing = [o for o in options if not in_help(o, text)]
    assert not missing, f"rigcheck {' '.join(path)} --help lacks {missing}"


def cpu_paragraph() -> tuple[set[str], set[str]]:
    """The README's **On CPU** paragraph: the commands it says take --cpu, and those it says need GPUs."""
    text = README.read_text(encoding="utf-8")
    paragraph = text.split("**On CPU**", 1)[1].split("\n\n", 1)[0]
    takes, _, rest = paragraph.partition("take `--cpu`")
    needs = rest.split("need NVIDIA GPUs", 1)[0]
    return set(re.findall(r"`([a-z][\w ]*)`", takes)), set(re.findall(r"`([a-z][\w ]*)`", needs))


def every_command() -> dict[str, Any]:
    root: Any = typer.main.get_command(app)
    found: dict[str, Any] = {}
    for entry in RigcheckGroup.table:
        command = root.load(entry.name)
        found[entry.name] = command
        for name in commands_of(command):
            found[f"{entry.name} {name}"] = subcommand(command, name)
    return found


def test_readme_names_exactly_the_commands_that_take_cpu() -> None:
    takes, needs_gpus = cpu_paragraph()
    commands = every_command()
    with_cpu = {name for name, cmd in commands.items() if any("--cpu" in p.opts for p in cmd.params)}
    assert takes == with_cpu
    assert needs_gpus == {"bench hostlink", "bench p2p", "burn"}
    assert not needs_gpus & with_cpu


# README lines that run for real here, the files they name replaced by fixtures, with their documented codes.
REAL_RUNS: dict[str, tuple[dict[str, Path], set[int]]] = {
    'rigcheck power plan --model "TITAN RTX" --count 2': ({}, {0}),
    'rigcheck plan --params 124M --gpus 2 --strategy zero3 --link NV2 --model "TITAN RTX"': ({}, {0}),
    "rigcheck plan --params 7B --gpus 8 --strategy zero3 --offload cpu --ram 512": ({}, {0}),
    'rigcheck verify --explain --model "H100 SXM5"': ({}, {0}),
    "rigcheck nccl-log run.log": (
        {"run.log": CORPUS / "nccl-log" / "001-2x5060ti-vllm-tp2-p2p-cumem-2.28.9.txt"},
        {0, 1},
    ),
    "rigcheck doctor --from box.xml": ({"box.xml": CORPUS / "h100-vm" / "q.xml"}, {0, 1}),
    "rigcheck doctor --from box.xml --from topo.txt": (
        {"box.xml": CORPUS / "h100-vm" / "q.xml", "topo.txt": CORPUS / "h100-vm" / "topo-m.txt"},
        {0, 1},
    ),
}


@pytest.mark.parametrize("text", sorted(REAL_RUNS))
def test_readme_line_runs_for_real(text: str, rigcheck: Rigcheck) -> None:
    readme = {line.text.replace(" --psu-watts 1000", "") for line in README_LINES}
    assert text in readme, "the README no longer shows this line"
    files, codes = REAL_RUNS[text]
    args = [str(files.get(word, word)) for word in shlex.split(text)[1:]]
    result = rigcheck(*args)
    out, err = result.stdout, result.stderr
    assert result.code in codes, err
    assert out.strip(), "printed no report"
    assert "error" not in err

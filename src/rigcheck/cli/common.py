"""What every command shares: consoles, the snapshot source (live or --from), JSON output."""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ParamSpec, TypeVar

import typer

from rigcheck.cli.streams import is_utf, note

# Only what every command needs is imported here: each command module is loaded on its own (cli/lazy.py), so
# a module-level import in this file is paid by `rigcheck --help` and every command alike.
if TYPE_CHECKING:
    from rich.console import Console

    from rigcheck.model import Snapshot
    from rigcheck.model.document import Document
    from rigcheck.model.site_config import SiteConfig
    from rigcheck.report.render import Format, RenderOptions

FromOption = Annotated[
    list[Path] | None,
    typer.Option(
        "--from",
        help="Read a saved output instead of this machine: nvidia-smi -q / -q -x / table / topo -m / topo -p2p / "
        "nvlink -s, or a rigcheck snapshot JSON ('-' for stdin); or a directory of them (every file in it that is "
        "one; the others are named). Repeat it to combine several outputs of one machine into one snapshot.",
        metavar="FILE|DIR",
        show_default=False,
        dir_okay=True,
        exists=False,
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON on stdout instead of the report.")]
StrictOption = Annotated[bool, typer.Option("--strict", help="Warnings count as problems (exit 1).")]
IndentOption = Annotated[
    int | None,
    typer.Option(
        "--indent",
        min=0,
        metavar="N",
        help="Indent the JSON by N spaces. Default: 2 on a terminal; compact (one line) in a pipe or a file.",
        show_default=False,
    ),
]
GpusOption = Annotated[
    str | None,
    typer.Option(
        "--gpus",
        help="Only these GPUs, e.g. 0,1, or all (live or --from): pairs and topology among them only; host findings "
        "stay.",
        show_default=False,
    ),
]
IdOption = Annotated[
    str | None,
    typer.Option(
        "-i",
        "--id",
        help="Only these GPUs, named as nvidia-smi -i names them: an index, a UUID (GPU-..., or a unique start of "
        "one) or a PCI bus id (00000000:3B:00.0, 0000:3b:00.0, 3b:00.0); a comma list of these. Not with --gpus.",
        metavar="ID[,ID...]",
        show_default=False,
    ),
]
LEDGER_ENV = "RIGCHECK_LEDGER"
RecordOption = Annotated[
    Path | None,
    typer.Option(
        "--ledger",
        envvar=LEDGER_ENV,
        show_envvar=True,
        help="Also record this run's document in this ledger (SQLite; read it with `rigcheck history show`).",
        dir_okay=False,
    ),
]
# `--gpu NAME` was the GPU model's option where `--gpus` chose GPUs: the model is `--model` now, and `--gpu` keeps
# working as a hidden option of its own (typer gives one parameter one visible set of names), merged by model_named.
ModelAliasOption = Annotated[str | None, typer.Option("--gpu", hidden=True, help="The former name of --model.")]
ModelsAliasOption = Annotated[list[str] | None, typer.Option("--gpu", hidden=True, help="The former name of --model.")]
HtmlFileOption = Annotated[
    Path | None,
    typer.Option(
        "--html", help="Also write a self-contained HTML report (opens offline) to this file.", dir_okay=False
    ),
]
MarkdownFileOption = Annotated[
    Path | None,
    typer.Option("--markdown", help="Also write the report as Markdown (for an issue) to this file.", dir_okay=False),
]


# Width for reports written to a pipe or a file: rich's default of 80 would fold an 8-GPU matrix.
PIPE_WIDTH = 160


def out_console() -> Console:
    """Data and reports go to stdout; rich handles NO_COLOR, FORCE_COLOR and pipes."""
    from rich.console import Console

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            # rich's own answer is a silent exit 1; a closed stdout is an output error (stdout_errors: exit 2).
            self.quiet = True
            raise BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE))

    # markup=False: a string of the data is text, never rich markup ("[/]" in a GPU name was a MarkupError, exit 3;
    # "[link=...]" would have made a hyperlink). The reports style with Text and style=, not markup.
    console = _Console(highlight=False, soft_wrap=False, markup=False)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console = _Console(highlight=False, soft_wrap=False, markup=False, width=PIPE_WIDTH)
    return console


def parse_gpus(text: str | None) -> list[int] | None:
    """ "0,2" -> [0, 2]; None, "" or "all" (docker's word) -> None (every GPU): --gpus of every command."""
    if not text or text.strip().lower() == "all":
        return None
    from rigcheck.errors import UsageError

    try:
        out = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise UsageError(f"--gpus takes GPU indices separated by commas (e.g. 0,1) or all, not {text!r}") from None
    if any(i < 0 for i in out) or len(set(out)) != len(out):
        raise UsageError(f"--gpus: indices must be distinct and not negative: {text!r}")
    return out


ModelT = TypeVar("ModelT")


def model_named(model: ModelT | None, former: ModelT | None) -> ModelT | None:
    """The GPU model given as --model or as --gpu, its former name (hidden, still read); both is a usage error."""
    if model is not None and former is not None:
        from rigcheck.errors import UsageError

        raise UsageError("--gpu is the former name of --model: give --model only")
    return model if model is not None else former


def one_selection(gpus: str | None, ids: str | None) -> None:
    """-i/--id and --gpus both given: a UsageError before anything is read (one of them would be ignored)."""
    if gpus is not None and ids is not None:
        from rigcheck.errors import UsageError

        raise UsageError("-i/--id and --gpus both choose GPUs: give one of them")


def load_snapshot(
    source: list[Path] | None, *, announce_absent: bool = True, gpus: str | None = None, ids: str | None = None
) -> Snapshot:
    """The snapshot to work on: the files given with --from (several are combined), else this machine probed live;
    with ``gpus`` (--gpus "0,2") or ``ids`` (-i, nvidia-smi's forms), narrowed to those GPUs (model/selection.py;
    one absent: UsageError).

    Live, with no GPU visible, one line on stderr says so (unless the caller says it itself). Combining files,
    each thing the merge noticed (a conflict, an empty file, one that adds nothing) is one line on stderr too.
    """
    one_selection(gpus, ids)
    chosen = parse_gpus(gpus)  # a malformed --gpus is exit 2 before anything is read
    snap = _load_snapshot(source, announce_absent=announce_absent)
    if chosen is None and ids is None:
        return snap
    from rigcheck.model.selection import gpu_indices, resolve_ids, select_gpus

    if not gpu_indices(snap):  # no GPU at all: the no-GPU rule (cli/nogpu.py) or the command's own error decides
        return snap
    return select_gpus(snap, resolve_ids(snap, ids) if ids is not None else chosen or [])


def _load_snapshot(source: list[Path] | None, *, announce_absent: bool) -> Snapshot:
    if source and any(_is_dir(p) for p in source):
        return _load_with_directories(source)
    if source:
        from rigcheck.readers.from_file import load_files

        snap = load_files([str(p) for p in source])
        if len(source) > 1:
            from rigcheck.readers.merge_fields import MERGE_SOURCE

            for diagnostic in snap.diagnostics:
                if diagnostic.source == MERGE_SOURCE:
                    note(diagnostic.message)
        return snap
    from rigcheck.probe.live import probe_machine

    snap = probe_machine()
    if announce_absent:
        from rigcheck.cli.nogpu import SHOWING, announce  # the no-GPU rule (cli/nogpu.py)

        announce(snap, SHOWING)
    return snap


def _is_dir(path: Path) -> bool:
    return str(path) != "-" and path.is_dir()


def _load_with_directories(source: list[Path]) -> Snapshot:
    """--from with a directory: every file in it that reads as a machine description (nvidia-smi output, a kernel
    log, a snapshot...), combined with the other --from files as repeated --from would; the files in it that are
    none of these (a bench document, a report, a binary file) are named in one line on stderr."""
    from rigcheck.errors import InputError
    from rigcheck.inputs import read_input_text
    from rigcheck.readers.from_file import SNAPSHOT_INPUTS, load_text
    from rigcheck.readers.merge import Part, merge_snapshots
    from rigcheck.readers.merge_fields import MERGE_SOURCE

    parts: list[Part] = []
    for path in source:
        if not _is_dir(path):
            text = read_input_text(str(path), SNAPSHOT_INPUTS, allow_empty=True)
            parts.append(Part(str(path), load_text(text, str(path)) if text else None))
            continue
        files = sorted(f for f in path.iterdir() if f.is_file() and not f.name.startswith("."))
        left_out: list[str] = []
        read: list[Part] = []
        for file in files:
            try:
                text = read_input_text(str(file), SNAPSHOT_INPUTS, allow_empty=True)
                read.append(Part(str(file), load_text(text, str(file)) if text else None))
            except InputError as exc:
                # "not a recognised input", "not a machine description but a bench document", "binary data": not
                # for this command. A machine description that is cut or corrupt is still its one-line error.
                if not exc.detail.startswith(("not a ", "binary data")):
                    raise
                left_out.append(file.name)
        named = ", ".join(left_out)
        if not any(part.snapshot is not None for part in read):
            raise InputError(
                f"no file in this directory is {SNAPSHOT_INPUTS} ({named or 'it is empty'})", path=str(path)
            )
        if left_out:
            count = f"{len(left_out)} file" + ("s" if len(left_out) > 1 else "")
            note(f"--from {path}: left out {count} this command does not read: {named}")
        parts.extend(read)
    if len(parts) == 1 and parts[0].snapshot is not None:
        return parts[0].snapshot
    snap = merge_snapshots(parts)
    for diagnostic in snap.diagnostics:
        if diagnostic.source == MERGE_SOURCE:
            note(diagnostic.message)
    return snap


def read_site_config(path: Path) -> SiteConfig:
    """The --config site file read and parsed; one that cannot be read or understood is one InputError line."""
    from rigcheck.errors import InputError
    from rigcheck.model.site_config import parse_site_config

    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read the site file: {exc.strerror or exc}", path=str(path)) from None
    return parse_site_config(data, str(path))


def json_for_stdout(text: str) -> str:
    """JSON text as stdout can take it: on a stdout that is not UTF (latin-1, --ascii) the characters it lacks
    become JSON escapes (cli/ascii_out.py), so the document stays exact and valid. DEL and the C1
    controls, which a terminal may act on, are escaped too (cli/terminal_safe.py)."""
    from rigcheck.cli.terminal_safe import json_escapes

    text = json_escapes(text)
    if is_utf(sys.stdout.encoding):
        return text
    from rigcheck.cli.ascii_out import json_for

    return json_for(text, sys.stdout.encoding)


@contextlib.contextmanager
def stdout_errors() -> Iterator[None]:
    """Turn a failed write to stdout (a full disk behind `> file`, /dev/full, a closed pipe) into an OutputError:
    one line and exit 2, never a bug's exit 3. stdout is then pointed at /dev/null, so that Python's own flush at
    exit does not fail a second time with a traceback."""
    try:
        yield
    except OSError as exc:
        with contextlib.suppress(OSError, ValueError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            os.close(devnull)
        from rigcheck.errors import OutputError

        raise OutputError(f"cannot write to stdout: {exc.strerror or exc}") from None


def write_stdout(text: str) -> None:
    """``text`` on stdout, flushed; a failed write is an OutputError (:func:`stdout_errors`)."""
    with stdout_errors():
        sys.stdout.write(text)
        sys.stdout.flush()


P = ParamSpec("P")
R = TypeVar("R")

# The signals received while the current command runs, first first (reset when a command starts).
_received: list[int] = []


def interrupted_by() -> int | None:
    """The first SIGINT/SIGTERM the running command received, or None: a command that kept its results
    through an interruption prints them, then exits with this signal's code (cli/exits.py)."""
    return _received[0] if _received else None


def _on_signal(signum: int, _frame: object) -> None:
    # Only the first signal interrupts: a second Ctrl-C (or Slurm's repeated SIGTERM) while the command stops
    # its workers and prints what it kept would cut that short and leave processes behind.
    from rigcheck.errors import Interrupted

    _received.append(signum)
    if len(_received) == 1:
        raise Interrupted(signum)


def interruptible(command: Callable[P, R]) -> Callable[P, R]:
    """SIGINT (Ctrl-C) and SIGTERM end a command with one line and exit 130 or 143 (typer alone would say
    "Aborted!" and exit 1, and SIGTERM would kill it on the spot). Both raise ``errors.Interrupted`` in the
    command, where a run that keeps what it measured catches it and prints its results first."""

    @functools.wraps(command)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        from rigcheck.errors import signal_name, signal_of

        _received.clear()
        previous: dict[int, Any] = {}
        if threading.current_thread() is threading.main_thread():  # signal.signal works there only
            for handled in (int(signal.SIGINT), int(signal.SIGTERM)):
                previous[handled] = signal.signal(handled, _on_signal)
        try:
            return command(*args, **kwargs)
        except KeyboardInterrupt as exc:
            from rigcheck.cli.exits import exit_code_for_signal  # here: exits.py loads the findings model

            signum = signal_of(exc)
            note("interrupted" + ("" if signum == signal.SIGINT else f" ({signal_name(signum)})"))
            raise typer.Exit(exit_code_for_signal(signum)) from None
        finally:
            for restored, handler in previous.items():
                signal.signal(restored, handler)

    return run


def json_indent(indent: int | None = None) -> int | None:
    """The JSON indentation for stdout: ``--indent N`` where given; else 2 on a terminal (a person reads it) and
    compact in a pipe or a file (a program reads it, and compact JSON is printed by json's C encoder)."""
    if indent is not None:
        return indent
    from rigcheck.report.render import PRETTY_INDENT

    return PRETTY_INDENT if sys.stdout.isatty() else None


def emit(doc: Document, fmt: Format | None = None, options: RenderOptions | None = None) -> None:
    """Print ``doc`` in ``fmt`` (default: the terminal report) on stdout: the one place a command's document
    becomes output. ``options``: what the command line asks of the rendering (default: nothing, the JSON indented
    as :func:`json_indent` says). Every rendering but JSON goes through cli/terminal_safe.py, so no string of an
    input reaches the terminal with its control characters; JSON escapes them. A failed write is exit 2
    (:func:`stdout_errors`)."""
    from rigcheck.cli.terminal_safe import TerminalSafe, terminal_text
    from rigcheck.report.render import Format, RenderOptions, render

    rendered = render(doc, fmt or Format.TERMINAL, options or RenderOptions(indent=json_indent()))
    if isinstance(rendered, str):
        write_stdout(json_for_stdout(rendered) if fmt is Format.JSON else terminal_text(rendered))
    else:
        with stdout_errors():
            # crop=False: a line a report keeps whole (prose in a pipe, report/common.Hanging) is printed whole,
            # not cut at the width; every other line is drawn within the width already.
            out_console().print(TerminalSafe(rendered), crop=False)


def write_rendering(path: Path, doc: Document, fmt: Format, options: RenderOptions | None = None) -> None:
    """Write ``doc`` rendered as text (HTML, Markdown, JSON) to ``path``, whole or not at all. HTML and Markdown
    are read with `cat` and `less` too: they lose the control characters an input held, as the terminal report
    does (neither has a use for them); JSON keeps them, escaped."""
    from rigcheck.cli.terminal_safe import json_escapes, terminal_text
    from rigcheck.report.render import DEFAULT_OPTIONS, Format, render

    rendered = render(doc, fmt, options or DEFAULT_OPTIONS)
    if not isinstance(rendered, str):
        raise TypeError(f"the {fmt.value} rendering is not text")
    write_report_file(path, json_escapes(rendered) if fmt is Format.JSON else terminal_text(rendered))


def write_pages(
    doc: Document, html_file: Path | None, markdown_file: Path | None = None, options: RenderOptions | None = None
) -> None:
    """The --html and --markdown files a command was asked for, each ``doc`` rendered whole (with ``options``)."""
    from rigcheck.report.render import Format

    if html_file is not None:
        write_rendering(html_file, doc, Format.HTML, options)
    if markdown_file is not None:
        write_rendering(markdown_file, doc, Format.MARKDOWN, options)


def write_report_file(path: Path, text: str) -> None:
    """Write a report file whole or not at all by the one safe writer (model/files_out.py); a target that is not
    a regular file, or a disk that is full or read-only, is one OutputError line (exit 2), the old file kept."""
    from rigcheck.model.files_out import write_whole

    write_whole(path, text)
    note(f"wrote {path}")

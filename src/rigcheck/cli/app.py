"""The `rigcheck` command: the table of commands (each module imported only when its command runs), and the
one place errors become exit codes."""

from __future__ import annotations

import contextlib
import gc
import os
import sys
from collections.abc import Iterator
from typing import Annotated, Any, cast

GC_YOUNG_THRESHOLD = 70_000  # CPython's default is 700 allocations between young-generation collections
# Set before typer, rich and pydantic load, and the command's modules and models after them: what a start creates
# (modules, classes, schemas) lives to the end, and the default thresholds walk it again and again (7 M
# instructions of `doctor --from`'s start, callgrind). main() sets it again for a caller that changed it since.
gc.set_threshold(GC_YOUNG_THRESHOLD, 20, 20)

import typer  # noqa: E402
import typer.core  # noqa: E402
import typer.main  # noqa: E402

from rigcheck import __version__  # noqa: E402
from rigcheck.cli.lazy import LazyCommand, LazyGroup  # noqa: E402
from rigcheck.cli.streams import is_utf, note  # noqa: E402
from rigcheck.errors import RigcheckError  # noqa: E402

PYDANTIC_PLUGINS = "PYDANTIC_DISABLE_PLUGINS"


def _flags_without_type_labels() -> None:
    """typer (0.2x) labels every on/off flag ``<bool>`` in --help, which reads as if ``--json`` took a
    value; show flags bare, as click does. Only the label changes, and only where typer has the hook."""
    option_cls: Any = getattr(typer.core, "TyperOption", None)
    labelled: Any = getattr(option_cls, "display_type_rich", None)
    if labelled is None or getattr(labelled, "_rigcheck_bare_flags", False):
        return

    def display_type_rich(self: Any, ctx: Any) -> str | None:
        return None if getattr(self, "is_flag", False) else cast("str | None", labelled(self, ctx))

    display_type_rich._rigcheck_bare_flags = True  # type: ignore[attr-defined]
    option_cls.display_type_rich = display_type_rich


_flags_without_type_labels()

# click's base of usage and parameter errors: typer 0.2x vendors click (typer._click), earlier typer uses click
# itself; either way it is a base class of typer.BadParameter.
_ClickException: type[Exception] = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")


class RigcheckGroup(LazyGroup):
    """The commands, in the order --help lists them; each module is imported only when its command runs."""

    table = (
        LazyCommand(
            "doctor",
            "Inspect the rig — power, cooling, topology, PCIe, P2P, health, software — and say what is wrong.",
            "rigcheck.cli.doctor",
            "doctor",
        ),
        LazyCommand(
            "verify",
            "Judge every GPU and the node — pass, fail or incomplete — against what each GPU should reach.",
            "rigcheck.cli.verify",
            "verify",
        ),
        LazyCommand(
            "fleet",
            "Compare many nodes — consistency, outliers, inter-node bandwidth, the slow node — under torchrun or srun; "
            "`--from DIR` compares saved per-node documents.",
            "rigcheck.cli.fleet",
            "fleet",
        ),
        LazyCommand(
            "history",
            "Remember past runs in a ledger: `add` documents, `show` the offending nodes, GPU timelines and alerts.",
            "rigcheck.cli.history",
            "history_app",
            "typer",
        ),
        LazyCommand(
            "topo",
            "Show how the GPUs are connected (NVLink, PCIe switch, host bridge, NUMA) and what it means.",
            "rigcheck.cli.topo",
            "topo",
        ),
        LazyCommand(
            "snapshot",
            "Print the snapshot JSON (schema rigcheck.snapshot/1); replay it anywhere with --from.",
            "rigcheck.cli.snapshot",
            "snapshot",
        ),
        LazyCommand(
            "plan",
            "Predict bytes and time on the wire per GPU per step, beside compute, and say which strategy suits.",
            "rigcheck.cli.plan",
            "register",
            "register",
        ),
        LazyCommand(
            "nccl-log",
            "Read an NCCL_DEBUG=INFO log: transports per channel, P2P disabled or not, NCCL version, ranks.",
            "rigcheck.cli.nccl_log",
            "register",
            "register",
        ),
        LazyCommand(
            "monitor",
            "Live telemetry per GPU: power vs limit, temperature vs slowdown, clocks, throttle reasons.",
            "rigcheck.cli.monitor",
            "register",
            "register",
        ),
        LazyCommand(
            "burn",
            "Load the GPUs with sustained matmuls while recording power, temperature, clocks and throttle reasons.",
            "rigcheck.cli.burn",
            "register",
            "register",
        ),
        LazyCommand(
            "thermal",
            "Temperatures against the card's own slowdown/shutdown thresholds and the guide's bands.",
            "rigcheck.cli.thermal",
            "thermal",
        ),
        LazyCommand(
            "power",
            "Power: draw and limits per GPU, power-cap and power-brake events; `plan` sizes a PSU and its cables.",
            "rigcheck.cli.power",
            "power_app",
            "typer",
        ),
        LazyCommand(
            "bench",
            "Measure: collectives, matmul, memory and host-link bandwidth, P2P, NVMe, and the guide's gpt2 training "
            "run.",
            "rigcheck.cli.bench",
            "bench_app",
            "typer",
        ),
    )


app = typer.Typer(
    name="rigcheck",
    cls=RigcheckGroup,
    help="Is this GPU machine set up right for training? Inspect it, and prove it by measuring.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=True,  # --install-completion / --show-completion (typer detects the shell)
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"rigcheck {__version__}")
        raise typer.Exit()


def _ascii(value: bool) -> None:
    if value:
        from rigcheck.cli import ascii_out

        ascii_out.install(force=True)


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")
    ] = False,
    ascii_only: Annotated[
        bool,
        typer.Option(
            "--ascii",
            callback=_ascii,
            is_eager=True,
            help="Print ASCII only (- for —, x for ×, +-| boxes; JSON escaped), as RIGCHECK_ASCII=1 does.",
        ),
    ] = False,
) -> None:
    """Is this GPU machine set up right for training? Inspect it, and prove it by measuring."""


def main(argv: list[str] | None = None) -> None:
    """Entry point: run a command; map rigcheck's errors to one line and an exit code, bugs to exit 3.

    typer runs outside its standalone mode so that a usage error is rigcheck's one line, not typer's boxed
    panel; typer.Exit comes back as its code; what else escapes is one of rigcheck's own errors or a bug.
    """
    # A snapshot of a large machine is a million small objects that live to the end of the command; with the
    # default thresholds the cyclic collector walks them again and again (a third of `doctor --from` a 512-GPU
    # snapshot). Collect the young generation 100x less often, as mypy's build does for the same reason.
    gc.set_threshold(GC_YOUNG_THRESHOLD, 20, 20)
    forced = os.environ.get("RIGCHECK_ASCII", "") not in ("", "0")
    if forced or not (is_utf(sys.stdout.encoding) and is_utf(sys.stderr.encoding)):
        from rigcheck.cli import ascii_out  # a stream that cannot hold a report: ASCII stand-ins

        ascii_out.install(force=forced)
    try:
        with _pydantic_plugins_off():
            result = app(args=argv, prog_name="rigcheck", standalone_mode=False)
    except _ClickException as exc:
        sys.exit(_usage_error(exc, sys.argv[1:] if argv is None else argv))
    except typer.Abort as exc:  # typer's wrapping of a KeyboardInterrupt that no command kept
        _exit_if_interrupted(exc)
        note("aborted")
        sys.exit(1)
    except RigcheckError as exc:
        from rigcheck.cli.exits import exit_code_for_error  # the code of the error's kind

        note(f"error: {exc}")
        sys.exit(exit_code_for_error(exc))
    except BrokenPipeError:
        # The reader went away (`rigcheck doctor | head`) during a write not made through cli/common.write_stdout
        # (which says it as an OutputError): an output error as any other, exit 2; stdout to /dev/null so that
        # Python's flush at exit does not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        note("error: cannot write the output: Broken pipe (its reader closed it)")
        sys.exit(2)
    except Exception as exc:  # the CLI boundary: a bug gets exit 3 with its type and a hint, never hidden
        _exit_if_interrupted(exc)
        if os.environ.get("RIGCHECK_DEBUG"):
            raise
        from rigcheck.cli.exits import EXIT_INTERNAL  # here: exits.py loads the findings model

        note(
            f"internal error: {type(exc).__name__}: {exc} (rerun with RIGCHECK_DEBUG=1 for a traceback, and report it)"
        )
        sys.exit(EXIT_INTERNAL)
    # Outside standalone mode typer returns typer.Exit's code, or a finished command's value (None: exit 0).
    sys.exit(result if isinstance(result, int) and not isinstance(result, bool) else 0)


@contextlib.contextmanager
def _pydantic_plugins_off() -> Iterator[None]:
    """pydantic looks for plugins (an entry-point scan of every installed package, which grows with the environment)
    when it builds the first model; rigcheck's models are its own and no plugin has a use for them. Off while a
    command runs (pydantic reads PYDANTIC_DISABLE_PLUGINS at each model it builds, pydantic/plugin/_loader.py);
    a value the user set is kept, and the variable is restored after."""
    if PYDANTIC_PLUGINS in os.environ:
        yield
        return
    os.environ[PYDANTIC_PLUGINS] = "__all__"
    try:
        yield
    finally:
        os.environ.pop(PYDANTIC_PLUGINS, None)


def _exit_if_interrupted(exc: BaseException) -> None:
    """Ctrl-C or SIGTERM behind ``exc`` (wrapped by typer, or by an import it landed in): exit 130 or 143."""
    from rigcheck.errors import interrupt_behind, signal_of

    interrupt = interrupt_behind(exc)
    if interrupt is None:
        return
    from rigcheck.cli.exits import exit_code_for_signal  # here: exits.py loads the findings model

    note("interrupted")
    sys.exit(exit_code_for_signal(signal_of(interrupt)))


def _usage_error(exc: Any, argv: list[str]) -> int:
    """Say what was wrong with the command line in one line on stderr (on a terminal, after the usage line)
    and return its exit code (2 for usage errors)."""
    code = int(exc.exit_code)
    if type(exc).__name__ == "NoArgsIsHelpError":  # `rigcheck` alone: the help is already printed
        return code
    ctx = getattr(exc, "ctx", None)
    if type(exc).__name__ == "NoSuchOption":
        message = _no_such_option(exc, ctx)
    else:
        message = " ".join(str(exc.format_message()).split()).removesuffix(".")
    if ctx is not None and sys.stderr.isatty():
        sys.stderr.write(f"{ctx.get_usage()}\n")
    # The parser raises "requires an argument" without a context: the command is then read from the words.
    path = ctx.command_path if ctx is not None else _command_path(argv)
    note(f"error: {message} (see {path} --help)")
    return code


# How alike a mistyped option and a real one must be to be suggested: difflib's ratio of the two names without
# their dashes. click's 0.6 on the dashed names let `--bogus` suggest `--gpus` (0.77 dashed, 0.67 bare); 0.75 bare
# keeps `--gpu` -> `--gpus` and `--jsn` -> `--json` (0.86), `--form` -> `--from` (0.75), `--strcit` -> `--strict`.
SUGGEST_RATIO = 0.75


def _no_such_option(exc: Any, ctx: Any) -> str:
    """click's "No such option" with only the options that are really close (SUGGEST_RATIO), hidden ones never."""
    import difflib

    typed = str(exc.option_name)
    names = {
        name
        for param in getattr(getattr(ctx, "command", None), "params", ())
        if not getattr(param, "hidden", False)
        for name in (*getattr(param, "opts", ()), *getattr(param, "secondary_opts", ()))
        if name.startswith("--")
    } or set(exc.possibilities or ())

    def likeness(name: str) -> float:
        return difflib.SequenceMatcher(None, typed.lstrip("-"), name.lstrip("-")).ratio()

    close = sorted((n for n in names if likeness(n) >= SUGGEST_RATIO), key=lambda n: (-likeness(n), n))[:3]
    message = " ".join(str(exc.message).split()).removesuffix(".")
    return f"{message} (did you mean {' or '.join(close)}?)" if close else message


def _command_path(argv: list[str]) -> str:
    """'rigcheck bench allreduce' for ``bench allreduce -n``: the leading words that name commands (options
    before them skipped), for the hint of an error that carries no context."""
    command: Any = typer.main.get_command(app)
    words = ["rigcheck"]
    for word in argv:
        if word.startswith("-"):
            continue
        commands = getattr(command, "commands", None)
        if not isinstance(commands, dict) or word not in commands:
            break
        command = command.load(word) if isinstance(command, LazyGroup) else commands[word]
        words.append(word)
    return " ".join(words)

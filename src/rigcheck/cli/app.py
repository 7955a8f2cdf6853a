"""The `rigcheck` command: typer commands, and the one place errors become exit codes."""

from __future__ import annotations

import os
import sys
from typing import Annotated, Any, cast

import typer
import typer.core

from rigcheck import __version__
from rigcheck.cli import (
    bench_collectives,
    bench_device,
    bench_train,
    burn_cmd,
    monitor_cmd,
    nccl_log,
    plan_cmd,
)
from rigcheck.cli.common import FromOption, JsonOption, interruptible, note
from rigcheck.cli.doctor import doctor
from rigcheck.cli.power_plan import power_plan
from rigcheck.cli.snapshot_cmd import snapshot
from rigcheck.cli.state import power_state, thermal_state
from rigcheck.cli.topo import topo
from rigcheck.errors import RigcheckError
from rigcheck.report.base import EXIT_INTERNAL


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

app = typer.Typer(
    name="rigcheck",
    help="Is this GPU machine set up right for training? Inspect it, and prove it by measuring.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

StrictOption = Annotated[bool, typer.Option("--strict", help="Warnings count as problems (exit 1).")]


def _version(value: bool) -> None:
    if value:
        typer.echo(f"rigcheck {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")
    ] = False,
) -> None:
    """Is this GPU machine set up right for training? Inspect it, and prove it by measuring."""


app.command()(interruptible(doctor))
app.command()(interruptible(topo))
app.command()(interruptible(snapshot))

power_app = typer.Typer(
    help="Power: draw and limits per GPU, power-cap and power-brake events; `plan` sizes a PSU and its cables.",
    invoke_without_command=True,
    no_args_is_help=False,
)


@power_app.callback(invoke_without_command=True)
def power(
    ctx: typer.Context, source: FromOption = None, as_json: JsonOption = False, strict: StrictOption = False
) -> None:
    """Power draw and limits (default, enforced, min, max) per GPU, and power-related findings."""
    if ctx.invoked_subcommand is None:
        power_state(source, as_json, strict)


power_app.command("plan")(interruptible(power_plan))
app.add_typer(power_app, name="power")


bench_app = typer.Typer(
    help="Measure: collectives, matmul, memory and host-link bandwidth, P2P, and the guide's gpt2 training run.",
    no_args_is_help=True,
)
bench_collectives.register(bench_app)
bench_device.register(bench_app)
bench_train.register(bench_app)
app.add_typer(bench_app, name="bench")
plan_cmd.register(app)
nccl_log.register(app)
monitor_cmd.register(app)
burn_cmd.register(app)


@app.command()
def thermal(source: FromOption = None, as_json: JsonOption = False, strict: StrictOption = False) -> None:
    """Temperatures against the card's own slowdown/shutdown thresholds and the guide's bands."""
    thermal_state(source, as_json, strict)


def main(argv: list[str] | None = None) -> None:
    """Entry point: run a command; map rigcheck's errors to one line and an exit code, bugs to exit 3.

    typer (in standalone mode) turns usage errors into exit 2 and typer.Exit into its code; what
    escapes it is either one of rigcheck's own errors or a bug.
    """
    try:
        app(args=argv, prog_name="rigcheck")
    except RigcheckError as exc:
        note(f"error: {exc}")
        sys.exit(exc.exit_code)
    except BrokenPipeError:
        # The reader went away (`rigcheck doctor | head`): not an error worth a message.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(0)
    except Exception as exc:  # the CLI boundary: a bug gets exit 3 with its type and a hint, never hidden
        if os.environ.get("RIGCHECK_DEBUG"):
            raise
        note(
            f"internal error: {type(exc).__name__}: {exc} (rerun with RIGCHECK_DEBUG=1 for a traceback, and report it)"
        )
        sys.exit(EXIT_INTERNAL)

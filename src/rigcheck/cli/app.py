"""The `rigcheck` command: typer commands, and the one place errors become exit codes."""

from __future__ import annotations

import os
import sys
from typing import Annotated

import click
import typer

from rigcheck import __version__
from rigcheck.cli.common import FromOption, JsonOption, note
from rigcheck.cli.doctor import doctor
from rigcheck.cli.power_plan import power_plan
from rigcheck.cli.snapshot_cmd import snapshot
from rigcheck.cli.state import power_state, thermal_state
from rigcheck.cli.topo import topo
from rigcheck.errors import RigcheckError
from rigcheck.report.base import EXIT_BAD_INPUT, EXIT_INTERNAL

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


app.command()(doctor)
app.command()(topo)
app.command()(snapshot)

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


power_app.command("plan")(power_plan)
app.add_typer(power_app, name="power")


@app.command()
def thermal(source: FromOption = None, as_json: JsonOption = False, strict: StrictOption = False) -> None:
    """Temperatures against the card's own slowdown/shutdown thresholds and the guide's bands."""
    thermal_state(source, as_json, strict)


def main(argv: list[str] | None = None) -> None:
    """Entry point: run a command; map rigcheck's errors to one line and an exit code, bugs to exit 3."""
    try:
        code = app(args=argv, prog_name="rigcheck", standalone_mode=False)
    except click.exceptions.UsageError as exc:
        exc.show()
        code = EXIT_BAD_INPUT
    except click.exceptions.Abort:
        note("interrupted")
        code = 130
    except KeyboardInterrupt:
        note("interrupted")
        code = 130
    except RigcheckError as exc:
        note(f"error: {exc}")
        code = exc.exit_code
    except BrokenPipeError:
        # The reader went away (`rigcheck doctor | head`): not an error worth a message.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 0
    except Exception as exc:
        if os.environ.get("RIGCHECK_DEBUG"):
            raise
        note(
            f"internal error: {type(exc).__name__}: {exc} (rerun with RIGCHECK_DEBUG=1 for a traceback, and report it)"
        )
        code = EXIT_INTERNAL
    sys.exit(code if isinstance(code, int) else 0)

"""The `rigcheck` command: the table of commands (each module imported only when its command runs), and the
one place errors become exit codes."""

from __future__ import annotations

import os
import sys
from typing import Annotated, Any, cast

import typer
import typer.core

from rigcheck import __version__
from rigcheck.cli.common import note
from rigcheck.cli.lazy import LazyCommand, LazyGroup
from rigcheck.errors import RigcheckError


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
            "topo",
            "Show how the GPUs are connected (NVLink, PCIe switch, host bridge, NUMA) and what it means.",
            "rigcheck.cli.topo",
            "topo",
        ),
        LazyCommand(
            "snapshot",
            "Print the snapshot JSON (schema rigcheck.snapshot/1); replay it anywhere with --from.",
            "rigcheck.cli.snapshot_cmd",
            "snapshot",
        ),
        LazyCommand(
            "plan",
            "Predict bytes and time on the wire per GPU per step, beside compute, and say which strategy suits.",
            "rigcheck.cli.plan_cmd",
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
            "rigcheck.cli.monitor_cmd",
            "register",
            "register",
        ),
        LazyCommand(
            "burn",
            "Load the GPUs with sustained matmuls while recording power, temperature, clocks and throttle reasons.",
            "rigcheck.cli.burn_cmd",
            "register",
            "register",
        ),
        LazyCommand(
            "thermal",
            "Temperatures against the card's own slowdown/shutdown thresholds and the guide's bands.",
            "rigcheck.cli.power_cmd",
            "thermal",
        ),
        LazyCommand(
            "power",
            "Power: draw and limits per GPU, power-cap and power-brake events; `plan` sizes a PSU and its cables.",
            "rigcheck.cli.power_cmd",
            "power_app",
            "typer",
        ),
        LazyCommand(
            "bench",
            "Measure: collectives, matmul, memory and host-link bandwidth, P2P, NVMe, and the guide's gpt2 training "
            "run.",
            "rigcheck.cli.bench_cmd",
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
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


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
        from rigcheck.cli.exits import EXIT_INTERNAL  # here: exits.py loads the findings model

        note(
            f"internal error: {type(exc).__name__}: {exc} (rerun with RIGCHECK_DEBUG=1 for a traceback, and report it)"
        )
        sys.exit(EXIT_INTERNAL)

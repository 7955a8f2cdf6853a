"""`--json` is compact for a program (a pipe, a file) and indented for a person (a terminal, or `--indent N`): the
same document either way, for every command that prints JSON; and pydantic's plugin scan is off only while a
command runs."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rigcheck.cli.app import RigcheckGroup
from rigcheck.cli.common import json_indent
from rigcheck.cli.lazy import LazyGroup
from rigcheck.report.render import PRETTY_INDENT, dumps
from tests.support.cli import Rigcheck

ROOT = Path(__file__).resolve().parent.parent.parent
FIX = ROOT / "tests" / "fixtures"
SNAPSHOT = FIX / "snapshots" / "healthy-8x-h100.json"

# One command line per command family, each read from saved inputs (the fixture captures stdout as a pipe does).
FAMILIES: dict[str, tuple[Any, ...]] = {
    "doctor": ("doctor", "--from", SNAPSHOT, "--json"),
    "topo": ("topo", "--from", SNAPSHOT, "--json"),
    "power": ("power", "--from", SNAPSHOT, "--json"),
    "thermal": ("thermal", "--from", SNAPSHOT, "--json"),
    "power plan": ("power", "plan", "--gpu", "TITAN RTX", "--count", "2", "--json"),
    "plan": ("plan", "--params", "gpt2", "--gpus", "2", "--json"),
    "nccl-log": ("nccl-log", FIX / "corpus" / "nccl-log" / "001-2x5060ti-vllm-tp2-p2p-cumem-2.28.9.txt", "--json"),
    "burn --analyze": ("burn", "--analyze", FIX / "corpus" / "telemetry" / "smi-lms-light-load.csv", "--json"),
    "verify --from": (
        "verify",
        "--from",
        ROOT / "tests" / "calibration" / "cases" / "dcgmi-4xa10g-r3-all-pass",
        "--json",
    ),
    "verify --explain": ("verify", "--explain", "--gpu", "H100 SXM5", "--json"),
    "fleet --from": ("fleet", "--from", FIX / "fleet" / "4-nodes", "--json"),
    "bench collectives --from": (
        "bench",
        "allreduce",
        "--from",
        FIX / "corpus" / "nccl-tests" / "001-2x2080ti-allreduce-pcie-no-p2p.txt",
        "--json",
    ),
    "bench p2p --from": (
        "bench",
        "p2p",
        "--from",
        FIX / "reference-tools" / "nvbandwidth-2gpu-json-synthetic.json",
        "--json",
    ),
    "bench matmul --from": ("bench", "matmul", "--from", FIX / "mamf" / "mamf-1xh100-sxm5-bf16-v2.txt", "--json"),
    "snapshot": ("snapshot", "--from", SNAPSHOT),
}


def steady(doc: Any) -> Any:
    """``doc`` without its wall time (``elapsed_s``), the one figure that differs between two runs."""
    if isinstance(doc, dict):
        return {key: steady(value) for key, value in doc.items() if key != "elapsed_s"}
    if isinstance(doc, list):
        return [steady(value) for value in doc]
    return doc


def compact_forms(doc: object) -> set[str]:
    """The compact JSON of ``doc``: as every document prints it (UTF-8 kept) or as a snapshot does (escaped)."""
    return {dumps(doc, None), json.dumps(doc, separators=(",", ":")) + "\n"}


@pytest.mark.parametrize("argv", FAMILIES.values(), ids=list(FAMILIES))
def test_json_is_compact_in_a_pipe_and_indented_with_indent(rigcheck: Rigcheck, argv: tuple[Any, ...]) -> None:
    compact = rigcheck(*argv)
    pretty = rigcheck(*argv, "--indent", "2")
    assert compact.stdout.count("\n") == 1, compact.stderr[-2000:]  # one line and its newline
    assert compact.stdout in compact_forms(compact.json)  # no space after a separator
    assert pretty.stdout.startswith('{\n  "'), pretty.stderr[-2000:]
    assert steady(compact.json) == steady(pretty.json)
    assert compact.code == pretty.code


def test_monitor_json_is_compact_in_a_pipe_and_indented_with_indent(
    rigcheck: Rigcheck, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rigcheck.cli import monitor as monitor_cmd
    from rigcheck.probe.nvml import NvmlPoller
    from tests.support.fakenvml import burn_power_capped_h100

    monkeypatch.setattr(monitor_cmd, "make_poller", lambda gpus=None: NvmlPoller(burn_power_capped_h100(), gpus=gpus))
    argv = ("monitor", "--interval", "0.02", "--duration", "0.1", "--json")
    compact, pretty = rigcheck(*argv), rigcheck(*argv, "--indent", "2")
    assert compact.stdout in compact_forms(compact.json)
    assert pretty.stdout.startswith('{\n  "')
    # Two runs sample at different times: the same document, not the same figures.
    assert compact.json["schema"] == pretty.json["schema"] == "rigcheck.monitor/2"
    assert compact.json.keys() == pretty.json.keys()


def test_snapshot_file_is_compact_unless_indent_is_given(rigcheck: Rigcheck, tmp_path: Path) -> None:
    compact, pretty = tmp_path / "compact.json", tmp_path / "pretty.json"
    assert rigcheck("snapshot", "--from", SNAPSHOT, "-o", compact).code == 0
    assert rigcheck("snapshot", "--from", SNAPSHOT, "-o", pretty, "--indent", "2").code == 0
    text = compact.read_text(encoding="utf-8")
    assert text.count("\n") == 1
    assert pretty.read_text(encoding="utf-8").startswith('{\n  "')
    assert json.loads(text) == json.loads(pretty.read_text(encoding="utf-8"))


def commands() -> Iterator[tuple[str, Any]]:
    """Every command and subcommand (typer's click commands), by its command line; each module imported."""
    group = RigcheckGroup(name="rigcheck")
    for entry in RigcheckGroup.table:
        command = group.load(entry.name)
        yield entry.name, command
        subs = getattr(command, "commands", None)
        for name in sorted(subs or {}):
            yield f"{entry.name} {name}", command.load(name) if isinstance(command, LazyGroup) else subs[name]


def test_every_command_with_json_takes_the_same_indent_option() -> None:
    options = {path: {opt: param for param in command.params for opt in param.opts} for path, command in commands()}
    with_json = sorted(path for path, opts in options.items() if "--json" in opts)
    assert len(with_json) >= 20  # the probe works: doctor, topo, power, ... and each bench command
    helps = {options[path]["--indent"].help for path in [*with_json, "snapshot"] if "--indent" in options[path]}
    missing = [path for path in [*with_json, "snapshot"] if "--indent" not in options[path]]
    assert missing == []
    assert len(helps) == 1


def test_indent_takes_no_negative_number(rigcheck: Rigcheck) -> None:
    assert "--indent" in rigcheck("doctor", "--from", SNAPSHOT, "--json", "--indent", "-1").error()


def test_a_terminal_gets_indented_json(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    assert json_indent() == PRETTY_INDENT
    assert json_indent(4) == 4
    monkeypatch.setattr(sys.stdout, "isatty", lambda: False)
    assert json_indent() is None
    assert json_indent(0) == 0


def test_dumps_compact_and_indented_hold_the_same_data() -> None:
    data = {"gpu": "H100 — SXM", "pairs": [[0, 1], [0, 2]]}
    assert dumps(data, None) == '{"gpu":"H100 — SXM","pairs":[[0,1],[0,2]]}\n'
    assert dumps(data).startswith('{\n  "gpu": "H100 — SXM"')


def test_pydantic_plugins_are_off_only_while_a_command_runs(
    rigcheck: Rigcheck, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PYDANTIC_DISABLE_PLUGINS", raising=False)
    seen: list[str | None] = []
    import rigcheck.cli.doctor as doctor_cli

    real = doctor_cli.run_checks

    def spy(*args: object, **kwargs: object) -> object:
        seen.append(os.environ.get("PYDANTIC_DISABLE_PLUGINS"))
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(doctor_cli, "run_checks", spy)
    rigcheck("doctor", "--from", SNAPSHOT, "--json")
    assert seen == ["__all__"]
    assert "PYDANTIC_DISABLE_PLUGINS" not in os.environ
    monkeypatch.setenv("PYDANTIC_DISABLE_PLUGINS", "some-plugin")  # the user's own setting is kept
    rigcheck("doctor", "--from", SNAPSHOT, "--json")
    assert seen[-1] == "some-plugin"
    assert os.environ["PYDANTIC_DISABLE_PLUGINS"] == "some-plugin"

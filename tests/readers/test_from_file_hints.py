"""`doctor --from` a file another command reads names that command instead of "not a recognised input": an NCCL log
(nccl-log), a telemetry trace or gpu-burn's output (burn --analyze), a DCGM diagnostic (verify --from DIR)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rigcheck.errors import ParseError
from rigcheck.readers.from_file import load_text

FIX = Path(__file__).parent.parent / "fixtures"


@pytest.mark.parametrize(
    ("name", "command"),
    [
        ("corpus/h100-vm/nccl-info-1rank-gpt2-ddp.txt", "rigcheck nccl-log FILE"),
        ("corpus/h100-vm/dmon.txt", "rigcheck burn --analyze FILE"),
        ("corpus/telemetry/smi-lms-light-load.csv", "rigcheck burn --analyze FILE"),
        ("gpu-burn/k80-azure-10s-issue8.txt", "rigcheck burn --analyze FILE"),
    ],
)
def test_another_commands_input_names_that_command(name: str, command: str) -> None:
    with pytest.raises(ParseError) as caught:
        load_text((FIX / name).read_text(encoding="utf-8"), name)
    assert "not a machine description but" in str(caught.value)
    assert command in str(caught.value)


def test_a_dcgm_table_points_to_verify_only_dcgm() -> None:
    table = next((FIX / "dcgm-text").glob("*.txt"))
    with pytest.raises(ParseError) as caught:
        load_text(table.read_text(encoding="utf-8"), table.name)
    assert "verify --from DIR --only dcgm" in str(caught.value)

"""Fuzzing every reader with mutations of the real corpus (issue #12 item 5).

The property: a clean read, or rigcheck's own error (RigcheckError -> exit 2); never another exception,
never a hang. CI runs a fixed-seed sample (derandomized hypothesis, ~2,000 inputs in-process plus a smaller
sample through the CLI entry point); `python benchmarks/fuzz.py --n 20000` runs the long one.
"""

from __future__ import annotations

import random
import signal
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from rigcheck.errors import InputError
from rigcheck.inputs import input_limits, line_blocks, read_capped
from tests.support.cli import Rigcheck
from tests.support.fuzzing import CLI_SNAPSHOT_COMMANDS, CORPUS, HANG, MUTATIONS, READERS, Hang, Reader, mutate, outcome
from tests.support.fuzzing import time_limit as fuzz_time_limit

# Gaps in other engineers' readers, in flight as this was written (issue #12): left out of the sample until
# fixed; each is named in the report to the lead. Remove an entry once its reader is fixed.
KNOWN_GAPS: dict[str, set[str]] = {}
PER_READER = 420  # x 5 readers = 2,100 inputs in-process
STEP = st.tuples(st.sampled_from(sorted(MUTATIONS)), st.integers(0, 2**31 - 1))


def _steps(reader: Reader) -> st.SearchStrategy[list[tuple[str, int]]]:
    allowed = sorted(set(MUTATIONS) - KNOWN_GAPS.get(reader.name, set()))
    return st.lists(st.tuples(st.sampled_from(allowed), st.integers(0, 2**31 - 1)), min_size=1, max_size=3)


@pytest.mark.parametrize("reader", READERS, ids=lambda r: r.name)
def test_reader_reads_or_says_why(reader: Reader, tmp_path: Path) -> None:
    @settings(
        max_examples=PER_READER,
        derandomize=True,
        deadline=None,
        database=None,
        phases=[Phase.explicit, Phase.generate],  # shrinking a hang costs minutes; the steps name the input
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
    )
    @given(seed=st.sampled_from(list(reader.seeds)), steps=_steps(reader))
    def check(seed: Path, steps: list[tuple[str, int]]) -> None:
        data = mutate(seed.read_bytes(), steps)
        # Any exception but RigcheckError escapes outcome() and fails the test with the input that caused it.
        # A hang is forever, so the limit only has to be well above the slowest honest read: 10 s leaves room for
        # coverage's tracing (2-2.5x slower) on two busy workers, where an honest snapshot read once passed 3 s.
        assert outcome(reader, data, tmp_path, limit_s=10.0) != HANG, f"{reader.name} hung on {seed.name} {steps}"

    check()


def test_the_sample_covers_every_mutation_and_reader() -> None:
    assert {r.name for r in READERS} == {"snapshot", "merge", "trace", "nccl-log", "plan"}
    assert all(r.seeds for r in READERS)
    assert len(READERS) * PER_READER >= 2000


@pytest.mark.parametrize("command", [*CLI_SNAPSHOT_COMMANDS, "nccl-log", "burn-analyze", "plan"])
def test_cli_exits_0_1_or_2(command: str, tmp_path: Path, rigcheck: Rigcheck) -> None:
    """A smaller sample through rigcheck.cli.app.main: only exit codes 0, 1, 2, and never a traceback."""
    by_name = {r.name: r for r in READERS}
    reader = by_name[{"nccl-log": "nccl-log", "burn-analyze": "trace", "plan": "plan"}.get(command, "snapshot")]
    allowed = sorted(set(MUTATIONS) - KNOWN_GAPS.get(reader.name, set()))
    rng = random.Random(f"cli-{command}")
    path = tmp_path / "input"
    for _ in range(24):
        seed = rng.choice(list(reader.seeds))
        steps = [(rng.choice(allowed), rng.randrange(2**31)) for _ in range(rng.randint(1, 3))]
        path.write_bytes(mutate(seed.read_bytes(), steps))
        argv = (
            reader.argv(str(path))
            if command in {"nccl-log", "burn-analyze", "plan"}
            else [command, "--from", str(path)]
        )
        with fuzz_time_limit(20.0):
            code, _, err = rigcheck(*argv)
        assert code in {0, 1, 2}, f"{argv[0]} on {seed.name} {steps}: exit {code}: {err[-400:]}"
        assert "Traceback" not in err
        assert "internal error" not in err


# --- the inputs of the issue, each a one-line exit 2 --------------------------------------------------------


def _run(rigcheck: Rigcheck, *argv: str) -> tuple[int, str]:
    """The exit code and stderr of ``rigcheck ARGV``, which has 30 s to end."""
    with fuzz_time_limit(30.0):
        code, _, err = rigcheck(*argv)
    return code, err


@pytest.mark.parametrize(
    "argv",
    [["doctor", "--from", "/dev/zero"], ["nccl-log", "/dev/zero"], ["burn", "--analyze", "/dev/zero"]],
    ids=["doctor", "nccl-log", "burn-analyze"],
)
def test_dev_zero_is_too_large_not_memory_error(argv: list[str], rigcheck: Rigcheck) -> None:
    code, err = _run(rigcheck, *argv)
    assert code == 2
    assert len(err.strip().splitlines()) == 1
    assert "internal error" not in err


def test_read_capped_counts_bytes_read_not_the_size(tmp_path: Path) -> None:
    assert len(read_capped("/dev/zero", 1000)) == 1001  # st_size is 0: only the bytes read can tell
    small = tmp_path / "small"
    small.write_bytes(b"abc")
    assert read_capped(str(small), 1000) == b"abc"


def test_line_blocks_end_an_endless_stream() -> None:
    """The splitter both streaming readers use: an endless line, an endless run of short lines and an endless
    run of NUL bytes each end in one InputError."""

    def endless(piece: bytes) -> list[tuple[bytes, bool]]:
        return list(line_blocks(piece, lambda: piece, "-", line_of_rest=lambda _d, _c: 1, max_line=4096))

    with pytest.raises(InputError, match="longer than"):
        endless(b"x" * 1024)  # a binary file without newlines
    with pytest.raises(InputError, match="NUL"):
        endless(b"\x00" * 1024)  # /dev/zero
    newlines = b"\n" * 1000  # stands in for `yes ''`: short lines, no end
    with pytest.raises(InputError, match="too large"):
        list(line_blocks(newlines, lambda: newlines, "-", line_of_rest=lambda _d, _c: 1, max_total=10_000))


def _with_number(rel: str, old: str, new: str, tmp_path: Path) -> Path:
    text = (CORPUS / rel).read_text()
    assert old in text, f"{rel} no longer holds {old!r}"
    out = tmp_path / Path(rel).name
    out.write_text(text.replace(old, new, 1))
    return out


@pytest.mark.parametrize(
    ("rel", "old"),
    [
        ("h100-vm/q.txt", "700.00 W"),
        ("h100-vm/q.xml", "700.00 W"),
        ("smi/003-1xh100-545.txt", "700W"),
        ("nvlink/001-8xv100-6links-25.781.txt", "25.781"),
        ("topo-p2p/001-8xa100-p2p-read-nv12.txt" if (CORPUS / "topo-p2p/001-8xa100-p2p-read-nv12.txt").exists()
         else "h100-vm/topo-m.txt", "0"),
    ],
)  # fmt: skip
def test_five_thousand_digit_numbers_are_exit_2_or_read(rel: str, old: str, tmp_path: Path, rigcheck: Rigcheck) -> None:
    path = _with_number(rel, old, "9" * 5000, tmp_path)
    code, err = _run(rigcheck, "doctor", "--from", str(path))
    assert code in {0, 1, 2}
    assert "internal error" not in err


def test_deep_snapshot_json_is_exit_2(tmp_path: Path, rigcheck: Rigcheck) -> None:
    path = tmp_path / "deep.json"
    path.write_text('{"schema": ' + "[" * 100_000 + "]" * 100_000 + "}")
    code, err = _run(rigcheck, "snapshot", "--from", str(path))
    assert code == 2
    assert "nested too deeply" in err


def test_unicode_digit_numa_cell_is_not_a_crash(tmp_path: Path, rigcheck: Rigcheck) -> None:
    text = (CORPUS / "h100-vm/topo-m.txt").read_text()
    assert "0-15\t0\t" in text
    path = tmp_path / "topo.txt"
    path.write_text(text.replace("0-15\t0\t", "0-15\t\u00b9\t", 1))
    code, err = _run(rigcheck, "topo", "--from", str(path), "--json")
    assert code in {0, 1, 2}
    assert "internal error" not in err


def test_input_limits_maps_only_hostile_input() -> None:
    with pytest.raises(InputError, match="thousands of digits"), input_limits("f"):
        int("9" * 5000)
    with pytest.raises(ValueError, match="invalid literal"), input_limits("f"):
        int("x")  # an ordinary ValueError is a bug in the reader and must not be hidden


def test_alarm_is_restored() -> None:
    with pytest.raises(Hang), fuzz_time_limit(0.05):
        signal.pause()
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)

"""Progress of long commands: time-based lines from the workers (bench/progress.py), throttled and drawn by the
CLI (cli/progress.py) as one line rewritten in place on a terminal and as plain lines in a pipe."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from rigcheck.bench.progress import StepTicker, eta_text
from rigcheck.cli import streams
from rigcheck.cli.progress import MIN_GAP_S, PREFIX, ProgressLine, progress_line

CLEAR = "\r\x1b[K"


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class TtyStream(io.StringIO):
    def isatty(self) -> bool:
        return True


def _feed(line: ProgressLine, clock: FakeClock, timed: list[tuple[float, str]]) -> None:
    for at, message in timed:
        clock.now = at
        line(message)


def test_a_pipe_gets_plain_lines_at_most_one_per_gap_and_the_last_at_close() -> None:
    clock, out = FakeClock(), io.StringIO()
    line = ProgressLine(out, clock=clock)
    assert line.tty is False
    steps = [(0.0, "step 1"), (0.5, "step 2"), (1.0, "step 3"), (1.6, "step 4"), (1.7, "step 5"), (3.2, "step 6")]
    _feed(line, clock, [*steps, (3.3, "step 7")])
    assert out.getvalue() == f"{PREFIX}step 1\n{PREFIX}step 4\n{PREFIX}step 6\n"
    line.close()
    assert out.getvalue().endswith(f"{PREFIX}step 7\n")  # the newest line not shown yet is not lost
    assert "\r" not in out.getvalue()


def test_a_terminal_gets_one_line_rewritten_in_place() -> None:
    clock, out = FakeClock(), TtyStream()
    line = ProgressLine(out, clock=clock)
    assert line.tty is True
    _feed(line, clock, [(0.0, "step 1/3"), (0.1, "step 2/3"), (2.0, "step 3/3")])
    assert out.getvalue() == f"{CLEAR}{PREFIX}step 1/3{CLEAR}{PREFIX}step 3/3"
    assert "\n" not in out.getvalue()
    line.close()
    assert out.getvalue().endswith(CLEAR)  # erased: the report that follows starts on a clean line


def test_a_line_that_says_something_new_is_not_held_back() -> None:
    clock, out = FakeClock(), io.StringIO()
    line = ProgressLine(out, clock=clock)
    _feed(line, clock, [(0.0, "verify: --cpu, budget 180 s"), (0.1, "verify: matmul started, up to 30 s")])
    _feed(line, clock, [(0.2, "rank 0: bf16 256x256x256: 1.0 TFLOPS"), (0.3, "rank 0: bf16 512x512x512: 2.0 TFLOPS")])
    assert out.getvalue().splitlines() == [
        f"{PREFIX}verify: --cpu, budget 180 s",
        f"{PREFIX}verify: matmul started, up to 30 s",
        f"{PREFIX}rank 0: bf16 256x256x256: 1.0 TFLOPS",
    ]


def test_a_fault_is_never_dropped_nor_overwritten() -> None:
    clock, out = FakeClock(), TtyStream()
    line = ProgressLine(out, clock=clock)
    _feed(line, clock, [(0.0, "GPU0 300 W"), (0.2, "GPU 1: WRONG RESULT at 3.0 s")])
    assert out.getvalue().endswith(f"{CLEAR}{PREFIX}GPU 1: WRONG RESULT at 3.0 s\n{PREFIX}GPU0 300 W")
    pipe = io.StringIO()
    plain = ProgressLine(pipe, clock=clock)
    _feed(plain, clock, [(5.0, "x"), (5.1, "verify: burn skipped: no GPU")])
    assert pipe.getvalue() == f"{PREFIX}x\n{PREFIX}verify: burn skipped: no GPU\n"


def test_a_long_line_is_cut_to_the_terminal_so_it_can_be_rewritten(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "40")
    out = TtyStream()
    ProgressLine(out, clock=FakeClock())("x" * 100)
    drawn = out.getvalue().removeprefix(CLEAR)
    assert len(drawn) == 39
    assert drawn.endswith("…")


def test_a_note_during_a_run_erases_the_line_first(capsys: pytest.CaptureFixture[str]) -> None:
    out = TtyStream()
    with progress_line(out) as line:
        line("step 1/9")
        streams.note("something to say")
        assert out.getvalue().endswith(CLEAR)
    assert streams.before_note == []
    assert "something to say" in capsys.readouterr().err


def test_the_ticker_reports_by_time_with_rate_and_eta() -> None:
    clock = FakeClock()
    ticker = StepTicker("train", 100, tick_s=0.5, clock=clock)
    lines = []
    for step in range(1, 101):
        clock.now = step * 0.1
        if (text := ticker.step(step)) is not None:
            lines.append(text)
    assert len(lines) == 19  # steps 5, 10, ..., 95: one per 0.5 s, none after the last step
    assert lines[0] == "train: step 5/100, 0.5 s, 10 steps/s, ETA 10 s"
    assert lines[-1].startswith("train: step 95/100, 9.5 s")
    assert eta_text(125) == "2 min 5 s"
    assert eta_text(3725) == "1 h 2 min"


def test_worker_ticks_through_the_cli_throttle_give_a_line_at_least_every_2_s() -> None:
    clock = FakeClock()
    ticker = StepTicker("train", 400, clock=clock)
    out = io.StringIO()
    line = ProgressLine(out, clock=clock)
    shown_at: list[float] = []
    for step in range(1, 401):
        clock.now = step * 0.07  # a step every 70 ms: 28 s of work
        if (text := ticker.step(step)) is not None:
            before = out.getvalue().count("\n")
            line(text)
            if out.getvalue().count("\n") > before:
                shown_at.append(clock.now)
    gaps = [b - a for a, b in zip([0.0, *shown_at], shown_at, strict=False)]
    assert len(shown_at) > 10
    assert max(gaps) <= 2.0
    assert min(gaps[1:]) >= MIN_GAP_S


def test_bench_train_reports_step_rate_and_eta(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    import torch.distributed as dist

    from rigcheck.bench.launcher import WorkerContext
    from rigcheck.bench.train import TrainOptions, train_shape, train_worker

    dist.init_process_group("gloo", store=dist.FileStore(str(tmp_path / "store"), 1), rank=0, world_size=1)
    messages: list[str] = []
    try:
        ctx = WorkerContext(
            rank=0,
            world_size=1,
            local_rank=0,
            backend="gloo",
            device=torch.device("cpu"),
            on_row=lambda _row: None,
            on_progress=messages.append,
        )
        opts = TrainOptions(shape=train_shape(tiny=True, steps=4), bf16=False, tiny=True, text=None, progress_tick_s=0)
        train_worker(ctx, opts)
    finally:
        dist.destroy_process_group()
    steps = [m for m in messages if m.startswith("train: step")]
    assert [m.split(",")[0] for m in steps] == ["train: step 1/4", "train: step 2/4", "train: step 3/4"]
    assert all("steps/s" in m and "ETA" in m for m in steps)

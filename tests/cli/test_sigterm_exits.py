"""SIGTERM (Slurm, Kubernetes, `kill`) ends monitor like Ctrl-C, summary printed, exit 143; burn's exit code
follows the signal that cut it short (issue #12). Real signals, sent to this process through the CLI's
handlers."""

from __future__ import annotations

import json
import os
import signal
import time

import pytest

from rigcheck.cli import burn as burn_cmd
from rigcheck.cli import monitor as monitor_cmd
from rigcheck.cli.common import _on_signal, interrupted_by, interruptible
from rigcheck.cli.exits import EXIT_INTERRUPTED, EXIT_TERMINATED
from rigcheck.errors import Interrupted
from tests.cli.test_monitor_cli import _fake
from tests.support.cli import Rigcheck


def test_monitor_sigterm_prints_the_summary_and_exits_143(rigcheck: Rigcheck, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake(monkeypatch)
    pauses = iter(range(1000))

    def pause(seconds: float) -> None:
        if next(pauses) == 3:
            os.kill(os.getpid(), signal.SIGTERM)  # the CLI's handler raises Interrupted here
        time.sleep(0.05)

    monkeypatch.setattr(monitor_cmd, "_pause", pause)
    code, out, err = rigcheck("monitor", "--interval", "0.02", "--json")
    assert code == EXIT_TERMINATED
    assert json.loads(out)["interrupted"] is True
    assert "stopped" in err
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # the handler is put back after the command


def test_only_the_first_signal_interrupts() -> None:
    """A second signal while the command stops its workers and prints its results does not cut that short."""
    calls: list[int] = []

    def command() -> None:
        with pytest.raises(Interrupted):
            os.kill(os.getpid(), signal.SIGTERM)  # delivered before the next statement
        os.kill(os.getpid(), signal.SIGINT)  # ignored: recorded only
        calls.append(interrupted_by() or 0)

    interruptible(command)()
    assert calls == [signal.SIGTERM]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert signal.getsignal(signal.SIGTERM) is not _on_signal


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, EXIT_INTERRUPTED), (signal.SIGTERM, EXIT_TERMINATED)])
def test_burn_exit_code_follows_the_signal(monkeypatch: pytest.MonkeyPatch, signum: int, code: int) -> None:
    class Run:
        interrupted = True

    monkeypatch.setattr(burn_cmd, "interrupted_by", lambda: signum)
    assert burn_cmd.burn_exit_code(Run()) == code  # type: ignore[arg-type]


def _wrapped_interrupt() -> RuntimeError:
    """What Python 3.11 raises when Ctrl-C lands in a class's __set_name__ (torch's import, say)."""
    try:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as inner:
            raise RuntimeError("Error calling __set_name__ on 'Field' instance") from inner
    except RuntimeError as outer:
        return outer


def test_an_interrupt_wrapped_by_an_import_is_still_an_interrupt() -> None:
    from rigcheck.errors import interrupt_behind

    found = interrupt_behind(_wrapped_interrupt())
    assert isinstance(found, KeyboardInterrupt)
    assert interrupt_behind(RuntimeError("a real bug")) is None


def test_the_cli_exits_130_not_3_for_a_wrapped_interrupt(monkeypatch: pytest.MonkeyPatch, rigcheck: Rigcheck) -> None:
    from rigcheck.cli import app as app_module

    def boom(*_args: object, **_kwargs: object) -> None:
        raise _wrapped_interrupt()

    monkeypatch.setattr(app_module, "app", boom)
    assert rigcheck("doctor").code == 130

"""The command line: typer commands, loaded lazily (``lazy.py``: `rigcheck --help` lists them from ``app.py``'s
table without importing them). A command parses its options, reads what the library must not (files, the live
machine through probe/), calls the library, picks the format and prints through ``common.emit``; ``exits.py``
alone turns a kind of outcome or error into an exit code; ``app.main`` makes every error one line and a code.

Rules: the only layer that writes to the terminal, reads the environment for its own switches, installs signal
handlers and decides exit codes. It may import every layer below.

One naming rule for its modules:

- a command's module is ``cli/<command>.py`` (``doctor.py``, ``nccl_log.py`` for `nccl-log`);
- a subcommand's is ``cli/<command>_<sub>.py`` (``power_plan.py``, ``bench_train.py``);
- what a group's commands share is ``cli/<group>_common.py`` (``bench_common.py``);
- the rest is plumbing named for what it does (``app.py``, ``lazy.py``, ``exits.py``, ``progress.py``,
  ``terminal_safe.py``, ``ascii_out.py``, ``group_help.py``, ``nogpu.py``, ``common.py``).

Not yet so (they predate the rule): ``thermal`` lives in ``power.py`` beside `power`; ``bench_collectives.py``
and ``bench_device.py`` hold several `bench` subcommands each; ``bench_nccl_tests.py``, ``bench_reference.py``,
``bench_mamf.py`` and ``burn_analyze.py`` hold a mode of a command (`bench … --from`, `burn --analyze`)."""

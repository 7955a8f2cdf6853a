"""The command line: typer commands, loaded lazily (``lazy.py``: `rigcheck --help` lists them from ``app.py``'s
table without importing them). A command parses its options, reads what the library must not (files, the live
machine through probe/), calls the library, picks the format and prints through ``common.emit``; ``exits.py``
alone turns a kind of outcome or error into an exit code; ``app.main`` makes every error one line and a code.

Rules: the only layer that writes to the terminal, reads the environment for its own switches, installs signal
handlers and decides exit codes. It may import every layer below.

One naming rule for its modules, held by tests/cli/test_cli_naming.py:

- a command's module is ``cli/<command>.py``, the module the command table in ``app.py`` loads for it
  (``doctor.py``, ``thermal.py``, ``nccl_log.py`` for `nccl-log`; for a group, its typer app: ``bench.py``,
  ``power.py``);
- a part of a command is ``cli/<command>_<part>.py``, and a part is one of:
  - one subcommand, named for it: ``power_plan.py`` (`power plan`), ``bench_train.py`` (`bench train`);
  - a family of subcommands that share their options, named for the family: ``bench_collectives.py``
    (`bench allreduce | allgather | reducescatter | broadcast`), ``bench_device.py`` (`bench matmul | membw |
    hostlink | p2p | nvme`);
  - a mode that an option selects, named for the option or what it reads: ``burn_analyze.py`` (`burn --analyze`),
    ``bench_nccl_tests.py`` (the collectives' `--from` nccl-tests output), ``bench_reference.py`` (`bench p2p |
    membw | hostlink --from` nvbandwidth, p2pBandwidthLatencyTest or bandwidthTest output), ``bench_mamf.py``
    (`bench matmul --from` a mamf-finder output);
  - what a group's commands share: ``bench_common.py`` (``cli/<group>_common.py``);
- the rest is plumbing named for what it does (``app.py``, ``lazy.py``,
  ``exits.py``, ``progress.py``, ``terminal_safe.py``, ``ascii_out.py``, ``group_help.py``, ``nogpu.py``,
  ``streams.py``, ``common.py``, ``record.py`` (a printed document into the ledger: `--ledger`))."""

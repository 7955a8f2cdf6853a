"""Judges: pure functions from what was read or measured to findings and verdicts; no I/O, no clock, no NVML.

- ``doctor/``: the checks of one machine's snapshot (``run_checks``, ``CHECKS``, ``FINDING_IDS``);
- ``verify/``: the acceptance judge of a verify run (figures against bands, saved runs, DCGM);
- ``fleet/``: the fleet's nodes and pairs, the slow-node search;
- ``burn/``: a burn's trace (slowdowns, plateaus, the load rule shared with verify and analyze);
- ``reference/``: other tools' saved outputs (nccl-tests, nvbandwidth, p2p tests, mamf-finder) against bands;
- ``verdicts.py``: the one contract of node verdicts, step statuses and exit codes; ``common.py``: what several
  judges share.

Rules: nothing here imports probe, readers, monitor or bench, or does I/O (tests/contracts/test_layers.py).
"""

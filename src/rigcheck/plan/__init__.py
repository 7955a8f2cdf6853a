"""Planners: pure computations over facts and the data they are given. ``power.py`` (the PSU and the independent
cables, `power plan`), ``comm.py`` (bytes and time on the wire per step, `plan`), ``offload.py`` (ZeRO offload:
bytes per tier, traffic per step), ``guide.py`` (the guide's NVLink result explained) and ``build.py`` (a plan
from the command's options and what its --from files hold).

Rules: no I/O: no file, no host read, no probe or readers import (tests/contracts/test_layers.py); the CLI reads
the --from files (readers/plan_sources.py) and this machine's RAM and free space and passes them in. Imports
model, facts and the leaves."""

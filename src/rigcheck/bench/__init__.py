"""Measurements: the launcher (spawned workers, NCCL or gloo; ``gpu_select.py`` maps --gpus to the workers'
devices), timing, collectives, ``device/`` (matmul, membw, hostlink, p2p), nvme (direct I/O, no torch), train
(the guide's gpt2 DDP run), compare (P2P on and off), burn, ``verify/`` (one node in a time budget) and
``fleet/`` (many nodes).

Rules: torch only here, imported lazily inside functions; a benchmark takes the snapshot and the telemetry
poller from the CLI and never imports probe/; it reports progress through callbacks and prints nothing. May
import monitor, checks, plan, readers (the NCCL log, for `--compare-p2p`) and below; never report or cli."""

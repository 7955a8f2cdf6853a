"""Single-device and device-pair measurements: matmul, membw (device-local copy), hostlink, p2p.

matmul and membw run one worker per device through ``rigcheck.bench.launcher`` (with a CPU path, gloo, that CI
runs); hostlink and p2p need NVIDIA GPUs and run in the calling process (see their modules for why). Rules as
bench/.
"""

from __future__ import annotations

from rigcheck.bench.device.hostlink import run_hostlink
from rigcheck.bench.device.matmul import MatmulPayload, matmul_worker, run_matmul
from rigcheck.bench.device.membw import MembwPayload, membw_worker, run_membw
from rigcheck.bench.device.p2p import run_p2p

__all__ = [
    "MatmulPayload",
    "MembwPayload",
    "matmul_worker",
    "membw_worker",
    "run_hostlink",
    "run_matmul",
    "run_membw",
    "run_p2p",
]

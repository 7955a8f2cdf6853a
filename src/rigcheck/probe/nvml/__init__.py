"""NVML through nvidia-ml-py: the snapshot probe (every GPU in one pass) and the telemetry poller.

A value NVML does not give becomes ``None`` with a reason in the record's ``missing`` map:
NotSupported -> not_supported, NoPermission -> no_permission, GpuIsLost -> gpu_lost, a function the
driver (or the installed pynvml) lacks -> driver_too_old, any other NVMLError -> error plus a
Diagnostic naming the function. A missing function is probed once per snapshot and listed in
``Snapshot.missing_functions``.

    constants.py  the nvml.h numbers, written out (tests hold them against pynvml)
    library.py    NvmlLibrary, the protocol of the pynvml functions used (tests/support/fakenvml.py implements it),
                  and pure decoders of what NVML returns
    calls.py      the one door: every NVML call, its error mapped to a reason; the only pynvml import
    session.py    one snapshot's calls (absent-function cache, diagnostics) and the reader of one GPU
    device.py     one GPU in one pass
    nvlink.py     one GPU's NVLinks: which exist, their state, far end and speed
    snapshot.py   probe_nvml: the GPUs, their pairs, the topology matrix, the driver versions
    poller.py     NvmlPoller: the cheap repeated read for the sampler (readings and error counters)
    poll_links.py each active NVLink's error counters for the poller, at a slower cadence
"""

from rigcheck.probe.nvml.library import (
    FieldValue,
    MemoryInfo,
    NvmlLibrary,
    PciInfo,
    Utilization,
    ViolationTime,
    bits_to_list,
    cuda_version_string,
    decode_clock_event_reasons,
)
from rigcheck.probe.nvml.poller import NvmlPoller
from rigcheck.probe.nvml.snapshot import count_nvlinks, probe_nvml

__all__ = [
    "FieldValue",
    "MemoryInfo",
    "NvmlLibrary",
    "NvmlPoller",
    "PciInfo",
    "Utilization",
    "ViolationTime",
    "bits_to_list",
    "count_nvlinks",
    "cuda_version_string",
    "decode_clock_event_reasons",
    "probe_nvml",
]

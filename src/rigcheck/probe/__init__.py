"""The live machine: NVML (``nvml/``), sysfs and /proc (``sysfs.py``, ``host.py``, ``storage.py``,
``storage_path.py``), the driver and its versions (``driver.py``, ``versions.py``), the kernel log and the
Fabric Manager (``kernel_log.py``, ``fabric_manager.py``; ``tool_run.py`` runs dmesg, journalctl and systemctl,
each in its own process group, killed whole at its deadline), and ``live.py``, one snapshot of all of them.

Rules: reads this machine only, never a saved output (readers/ does); pynvml only in nvml/calls.py; imports
inputs, model, facts and the leaves. Only the CLI reads the machine through it (readers/ use its text parsers
of the kernel log, the driver's state and the Fabric Manager's log); bench, monitor, checks and plan are handed
what it read."""

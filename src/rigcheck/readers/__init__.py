"""Saved outputs read into the model: nvidia-smi in its forms (``smi/``), other tools' outputs (``reference/``),
telemetry traces (``trace/``), the NCCL log (``nccl_log.py``), `lspci` (``lspci.py``), saved rigcheck
documents (``saved.py``, ``fleet_saved.py``), the --from detection (``from_file.py``: imports only the parser
its input needs) and merging several files into one snapshot (``merge.py``, ``merge_fields.py``), what
`plan --from` reads (``plan_sources.py``) and the launcher prefixes taken off a command line
(``launcher_prefix.py``).

Rules: parsers of text the user gives, through inputs.py's primitives (size limits, binary and empty files);
bad input is an InputError or ParseError naming the file and line. Never reads the live machine; it uses
probe/'s text parsers the live reads share (the kernel log, the driver's state, the Fabric Manager's log).
Imports probe, inputs, model, facts and the leaves."""

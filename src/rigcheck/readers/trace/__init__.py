"""Telemetry traces read: rigcheck's CSV and JSONL and nvidia-smi's --query-gpu CSV streamed
(``stream.py``), a block at a time into per-GPU batches for `burn --analyze` (``batches.py``), and
`nvidia-smi dmon` output (``dmon.py``). Rules as readers/."""

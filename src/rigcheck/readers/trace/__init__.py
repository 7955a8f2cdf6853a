"""Telemetry traces read: rigcheck's CSV and JSONL and nvidia-smi's --query-gpu CSV streamed (``stream.py``), a
block at a time into per-GPU batches for `burn --analyze` (``batches.py``), and `nvidia-smi dmon` output
(``dmon.py``). The two ways of reading share an nvidia-smi CSV's row parser (``smi_csv.py``) and the file's lines
(``lines.py``), and import neither each other's private names nor each other the other way. Rules as readers/."""

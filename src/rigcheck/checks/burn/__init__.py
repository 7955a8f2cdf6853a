"""The burn judge: a trace to per-GPU verdicts (``judge.py``: slowdowns, the load rule shared with verify and
`burn --analyze`, ``is_problem``), the columns the hot loop reads a batch at a time (``columns.py``), plateaus
(``plateau.py``) and the problems named (``problems.py``). Rules as checks/: pure, no I/O."""

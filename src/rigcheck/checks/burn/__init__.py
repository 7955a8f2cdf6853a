"""The burn judge: a trace to per-GPU verdicts (``judge.py``: slowdowns, the load rule shared with verify and
`burn --analyze`, ``is_problem``), fed a sample at a time or as the columns the hot loop reads a batch at a time
(``columns.py``); both feed one GPU's running figures through the rules of one reading (``tally.py``, the
interface the two share). Plateaus (``plateau.py``) and the problems named (``problems.py``). Rules as checks/:
pure, no I/O."""

"""`rigcheck fleet` live: the nodes meet (``meet.py``, ``store.py``, ``auth.py``: a key-checked control plane),
measure in rounds (``rounds.py``) and one document is built (``run.py``); ``env.py`` reads torchrun's and
Slurm's variables, ``state.py`` a node's state. Rules as bench/; the judging is checks/fleet/."""

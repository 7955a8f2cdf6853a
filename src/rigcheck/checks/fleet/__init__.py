"""The fleet judge: the nodes' documents against each other (``judge.py``), the collectives across nodes
(``collectives.py``) and the slow-node search over pairwise rounds (``pairs.py``). Rules as checks/: pure."""

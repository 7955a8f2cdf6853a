"""The verify judge: figures per GPU and node (``figures.py``) against bands (``bands.py``), peers and a baseline,
the node's verdict and drain reason (``judge.py``), saved runs judged again (``saved.py``) and a DCGM
diagnostic as checks (``dcgm.py``). Rules as checks/: pure; the outcome of each verdict is checks/verdicts.py's."""

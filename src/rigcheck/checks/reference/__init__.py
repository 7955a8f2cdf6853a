"""Other tools' saved outputs judged: imported p2p, membw and hostlink figures against their ceilings and bands
(``judge.py``; ``p2p.py``: P2P enabled slower than staged) and a mamf-finder best figure against its matmul
band (``mamf.py``). Rules as checks/: pure; the files are read by readers/reference/."""

"""The renderings of ``rigcheck.verify/1`` (``render.py``) and of the bands table `verify --explain` prints
(``bands.py``). Rules as report/."""

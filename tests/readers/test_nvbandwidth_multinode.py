"""Multinode nvbandwidth (GB200 NVL72 across trays): its matrices are indexed by process, and each process names its
GPU ("Process 4 (worker-1): device 0: HGX GB200"), so every pair is judged, the second tray's too, against the
NVLink 5 band (18 links). The output is a vendor's example of a working cluster (tests/calibration/manifest.json)."""

from __future__ import annotations

import json
from pathlib import Path

from rigcheck.readers.reference.nvbandwidth import parse_nvbandwidth
from tests.calibration.runner import CASES_DIR
from tests.support.cli import Rigcheck

CASE = CASES_DIR / "nvbandwidth-2x4gb200-multinode-d2d.txt"


def test_processes_are_the_matrix_rows() -> None:
    run = parse_nvbandwidth(Path(CASE).read_text(encoding="utf-8"))
    assert sorted(d.index for d in run.devices) == list(range(8))
    assert {d.name for d in run.devices} == {"HGX GB200"}


def test_every_pair_of_both_trays_is_judged_against_nvlink5(rigcheck: Rigcheck) -> None:
    code, out, _ = rigcheck("bench", "p2p", "--from", str(CASE), "--json")
    assert code == 0
    judged = [j for j in json.loads(out)["judgement"] if j["check"] == "p2p"]
    assert len(judged) == 56  # 8 x 7 ordered pairs
    assert {j["verdict"] for j in judged} == {"pass"}
    assert {j["floor"] for j in judged} == {702.0}

"""A fleet's daily verify documents for the ledger's tests and benchmark, deterministic: ``nodes`` nodes x ``days``
days, each a minimal valid ``rigcheck.verify/1`` document dated by its file's modification time (verify's document
has no created_at: the ledger dates it by the file, as it does any such document). No two are the same bytes (the
ledger keys a document by its content): each day's run took its own time.

The story (issue #31's check): OFFENDERS fail every fifth day; ONCE fail once each; GPU 1 of MOVED_FROM fails on
MOVED_FAIL_DAY, is swapped out the next day and shows up as GPU 1 of MOVED_TO from MOVED_ON_DAY (passing there);
GPU 0 of DRIFTING loses 5% of its memory bandwidth over the last 30 days. Each GPU has the figures of a quick
verify (membw, matmul_bf16, hostlink) with a small weekly wobble (under 0.3%).
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rigcheck.model.history import HistoryDocument

START = datetime(2025, 1, 1, 6, 0, tzinfo=UTC)
OFFENDERS = ("node-05", "node-17", "node-40")
ONCE = tuple(f"node-{i:02d}" for i in range(20, 32))  # a dozen
MOVED_FROM, MOVED_TO = "node-50", "node-07"
MOVED_FAIL_DAY, MOVED_ON_DAY = 10, 30
DRIFTING = "node-33"  # its GPU 0's membw falls DRIFT_FALL over the last DRIFT_DAYS days, passing verify all along
DRIFT_FALL, DRIFT_DAYS = 0.05, 30


def node_name(i: int) -> str:
    return f"node-{i:02d}"


def gpu_uuid(node: str, index: int, generation: int = 0) -> str:
    n = int(node.split("-")[1])
    return f"GPU-{n:08x}-{index:04x}-{generation:04x}-0000-000000000000"


MOVED_UUID = gpu_uuid(MOVED_FROM, 1)


def _check(cid: str, value: float, unit: str, verdict: str) -> dict[str, Any]:
    return {
        "id": cid, "verdict": verdict, "value": value, "unit": unit, "expected_min": None, "expected_source": None,
        "peak": None, "peer_best": None, "baseline": None, "judgements": [], "detail": f"{cid} {value:g} {unit}",
        "remeasured": [],
    }  # fmt: skip


def verify_document(node: str, day: int, gpus: int = 2, days: int = 60) -> dict[str, Any]:
    """One node's verify of one day, by the story above."""
    failing: set[int] = set()
    if node in OFFENDERS and day % 5 == 4:
        failing.add(0)
    if node in ONCE and day == 3 * int(node.split("-")[1]) % 60:
        failing.add(0)
    if node == MOVED_FROM and day == MOVED_FAIL_DAY:
        failing.add(1)
    rows = []
    for index in range(gpus):
        uuid = gpu_uuid(node, index)
        if node == MOVED_FROM and index == 1 and day > MOVED_FAIL_DAY:
            uuid = gpu_uuid(node, index, generation=1)  # the replacement
        if node == MOVED_TO and index == 1 and day >= MOVED_ON_DAY:
            uuid = MOVED_UUID
        verdict = "fail" if index in failing else "pass"
        membw = 2900.0 - (600.0 if verdict == "fail" else 0.0) - (day % 7)
        if node == DRIFTING and index == 0:
            membw *= 1 - DRIFT_FALL * max(0, day - (days - DRIFT_DAYS)) / DRIFT_DAYS
        checks = [
            _check("membw", membw, "GB/s", verdict),
            _check("matmul_bf16", 690.0 - (day % 5), "TFLOPS", "pass"),
            _check("hostlink", 53.0 + (day % 3) / 10, "GB/s", "pass"),
        ]
        rows.append({
            "index": index, "name": "NVIDIA H100 80GB HBM3", "uuid": uuid,
            "pci_bus_id": f"00000000:{0x18 + 0x20 * index:02X}:00.0", "verdict": verdict, "checks": checks,
        })  # fmt: skip
    return {
        "schema": "rigcheck.verify/1", "verdict": "fail" if failing else "pass", "level": "quick",
        "source": "live", "elapsed_s": 60.0 + day / 100, "budget_s": 120.0, "host": node, "gpus": rows,
        "node": [], "steps": [], "baseline": None, "site_config": None,
        "drain_reason": "GPU failed" if failing else None, "notes": [],
    }  # fmt: skip


def write_fleet(root: Path, nodes: int = 63, days: int = 60, gpus: int = 2) -> int:
    """Write the documents under root/<node>/<date>.json, each file's time its day; the number written."""
    written = 0
    for i in range(nodes):
        node = node_name(i)
        folder = root / node
        folder.mkdir(parents=True, exist_ok=True)
        for day in range(days):
            when = START + timedelta(days=day)
            path = folder / f"{when:%Y-%m-%d}.json"
            path.write_text(json.dumps(verify_document(node, day, gpus, days)), encoding="utf-8")
            os.utime(path, (when.timestamp(), when.timestamp()))
            written += 1
    return written


def history_sample() -> HistoryDocument:
    """One GPU over 40 daily runs: membw falling 6% over the last 30, failing on days 12 and 30, moved from n1 to
    n2 on day 20; judged as `history show` judges the ledger's rows."""
    from rigcheck.checks.history.drift import fit_trends
    from rigcheck.checks.history.judge import Ledger, judge_history
    from rigcheck.model.history import Filters, SightingRow

    start = datetime(2025, 3, 1, 6, tzinfo=UTC)
    rows = [
        SightingRow(
            (start + timedelta(days=d)).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "n1" if d < 20 else "n2",
            "GPU-drifting",
            None,
            "0000:18:00.0",
            0,
            "fail" if d in (12, 30) else "pass",
            {"membw": 2900.0 * (1 - 0.06 * max(0, d - 10) / 30), "matmul_bf16": 690.0 + d % 3},
        )
        for d in range(41)
    ]
    return judge_history(
        Ledger("ledger.sqlite", 41, [], [], rows, fit_trends(rows)), Filters(node=None, gpu=None, since=None)
    )

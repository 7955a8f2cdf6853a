"""`rigcheck history add` and `history show` on a fleet's daily verify documents, beside sqlite3's own bulk insert of
the same rows in the same run (issue #31).

The documents come from tests/support/ledger_fleet.py (minimal valid verify documents, 8 GPUs each here); their
writing is not timed. rigcheck's ingest reads, hashes and parses every file and writes a document row and a row per
GPU in transactions; the reference writes the same number of rows with one ``executemany`` per table into a fresh
database (no file reading, no JSON): the floor any ingest of those rows pays.

Target (the issue): 1,000 nodes x 8 GPUs x 365 days (365,000 documents) in <= 10 minutes on 2 cores, `show` over
them in <= 1 s. Run:  python benchmarks/ledger_scale.py [--nodes N] [--days D]   (default 100 x 30 = 3,000
documents); the 365,000-document figure is extrapolated linearly from the measured rate, and said so.
"""

from __future__ import annotations

import argparse
import hashlib
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.ledger_fleet import write_fleet  # noqa: E402 - after the repository root is on the path

FULL_DOCUMENTS = 1_000 * 365
GPUS = 8


def _timed(argv: list[str]) -> float:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "rigcheck", *argv], capture_output=True, text=True, check=False)
    took = time.perf_counter() - started
    if done.returncode not in (0, 1):
        raise SystemExit(f"rigcheck {' '.join(argv)} exited {done.returncode}: {done.stderr[-2000:]}")
    return took


def _reference(documents: int, path: Path) -> float:
    """The same row counts through sqlite3's executemany: documents, then a row per GPU."""
    started = time.perf_counter()
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("CREATE TABLE documents (hash TEXT PRIMARY KEY, node TEXT, created_at TEXT, verdict TEXT)")
    conn.execute("CREATE TABLE sightings (hash TEXT, uuid TEXT, bus TEXT, idx INTEGER, verdict TEXT)")
    docs = [
        (hashlib.sha256(str(i).encode()).hexdigest(), f"node-{i % 1000}", "2025-01-01", "pass")
        for i in range(documents)
    ]
    with conn:
        conn.executemany("INSERT INTO documents VALUES (?, ?, ?, ?)", docs)
        conn.executemany(
            "INSERT INTO sightings VALUES (?, ?, ?, ?, ?)",
            ((h, f"GPU-{h[:8]}-{g}", f"0000:{g:02x}:00.0", g, "pass") for h, *_ in docs for g in range(GPUS)),
        )
    conn.close()
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--days", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        docs_dir, ledger = Path(tmp) / "docs", Path(tmp) / "ledger.sqlite"
        docs_dir.mkdir()
        count = write_fleet(docs_dir, nodes=args.nodes, days=args.days, gpus=GPUS)
        add = _timed(["history", "add", str(docs_dir), "--ledger", str(ledger)])
        show = _timed(["history", "show", "--json", "--ledger", str(ledger)])
        reference = _reference(count, Path(tmp) / "reference.sqlite")
    rate = count / add
    print(f"history add: {count:,} documents ({GPUS} GPUs each) in {add:.2f} s ({rate:,.0f}/s, the start included)")
    print(f"sqlite3 executemany of the same rows, same run: {reference:.2f} s")
    print(f"history show --json over them: {show:.2f} s (the process start included; target <= 1 s)")
    print(
        f"extrapolated, linearly, to {FULL_DOCUMENTS:,} documents: {FULL_DOCUMENTS / rate / 60:.1f} min "
        "(target <= 10 min; not measured at that size)"
    )
    return 0 if show <= 1.0 and FULL_DOCUMENTS / rate <= 600 else 1


if __name__ == "__main__":
    sys.exit(main())

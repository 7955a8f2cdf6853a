"""The long fuzz run (issue #12 item 5): `python benchmarks/fuzz.py --n 20000 [--seed S] [--limit-s 10]`.

Mutates the real corpus (tests/support/fuzzing.py) through every reader in-process and prints counts per reader and
outcome: ok, rigcheck-error, hang, or BUG (any other exception, with the first input that raised it, so a
failure reproduces with tests.support.fuzzing.mutate(seed_file, steps)). Exit 1 when any BUG or hang was seen.
"""

from __future__ import annotations

import argparse
import collections
import random
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.fuzzing import MUTATIONS, READERS, mutate, outcome, scratch_dir


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20000, help="inputs in all (round-robin over the readers)")
    ap.add_argument("--seed", type=int, default=12)
    ap.add_argument("--limit-s", type=float, default=10.0, help="a read longer than this is a hang")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    counts: collections.Counter[tuple[str, str]] = collections.Counter()
    first: dict[tuple[str, str, str], str] = {}
    start = time.perf_counter()
    with scratch_dir() as d:
        for i in range(args.n):
            reader = READERS[i % len(READERS)]
            seed = rng.choice(list(reader.seeds))
            steps = [(rng.choice(sorted(MUTATIONS)), rng.randrange(2**31)) for _ in range(rng.randint(1, 3))]
            try:
                result = outcome(reader, mutate(seed.read_bytes(), steps), Path(d), args.limit_s)
            except Exception as exc:  # noqa: BLE001 - the fuzzer's job: record any bug and go on
                frame = traceback.extract_tb(exc.__traceback__)[-1]
                key = (reader.name, type(exc).__name__, f"{Path(frame.filename).name}:{frame.lineno}")
                first.setdefault(key, f"{seed.relative_to(seed.parents[1])} {steps}: {str(exc)[:160]}")
                result = "BUG"
            if result == "hang":
                first.setdefault((reader.name, "hang", ""), f"{seed.relative_to(seed.parents[1])} {steps}")
            counts[(reader.name, result)] += 1
    print(f"{args.n} inputs in {time.perf_counter() - start:.1f} s")
    for reader in READERS:
        row = {o: counts[(reader.name, o)] for o in ("ok", "rigcheck-error", "hang", "BUG")}
        print(f"  {reader.name:10} " + "  ".join(f"{k} {v}" for k, v in row.items()))
    for key, example in first.items():
        print("  first", " ".join(k for k in key if k), "<-", example)
    return 1 if first else 0


if __name__ == "__main__":
    sys.exit(main())

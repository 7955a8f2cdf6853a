"""Regenerate docs/coverage.md from the incident corpus (tests/incidents): each incident replayed through the real
CLI under the doctor, prolog, quick and full profiles, the share of incidents each flags and of healthy-by-design
cases each leaves alone. Run from the repository root after changing a check, a reader or an incident;
tests/contracts/test_coverage_doc.py checks the page is current and that no share fell under its floor.

`--raise-floors` writes the current shares into tests/incidents/floors.json where they are higher than the
committed floors (a floor is never lowered here: lowering one is a decision for a reviewer to see in the diff).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the incidents live in the tests package

from tests.incidents.corpus import FLOORS, load_floors, load_incidents  # noqa: E402
from tests.incidents.coverage_doc import render  # noqa: E402
from tests.incidents.profiles import replays, shares  # noqa: E402

DOC = ROOT / "docs" / "coverage.md"


def page() -> str:
    return render(replays(), list(load_incidents()))


def raised_floors() -> dict[str, dict[str, float]]:
    """The committed floors, each raised to today's share where that is higher (two decimals, rounded down)."""
    floors = load_floors()
    for s in shares(replays()):
        mine = floors.setdefault(s.profile, {})
        for key, value in (("flagged", s.flagged_share), ("left_alone", s.left_alone_share)):
            today = int(value * 100) / 100
            mine[key] = max(mine.get(key, 0.0), today)
    return floors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--raise-floors", action="store_true", help="raise tests/incidents/floors.json to today")
    args = parser.parse_args()
    DOC.write_text(page(), encoding="utf-8")
    print(f"wrote {DOC.relative_to(ROOT)}")
    for s in shares(replays()):
        print(
            f"  {s.profile:<7} flagged {s.flagged}/{s.sick} ({100 * s.flagged_share:.0f}%), "
            f"left alone {s.left_alone}/{s.healthy_judged} ({100 * s.left_alone_share:.0f}%), "
            f"healthy not judged {s.healthy_na}"
        )
    if args.raise_floors:
        FLOORS.write_text(json.dumps({"floors": raised_floors()}, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {FLOORS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()

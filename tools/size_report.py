"""How big the code is, and where: lines per package of src/rigcheck, the largest modules, and the test folders.

Run:  python tools/size_report.py [--top N]

A report for a person to read, not a gate: a long module is a question (does it hold one thing?), and cutting
it at a line count is no answer when the cut goes through a class. Lines are physical lines, blank and comment
lines included (what an editor shows).
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "src" / "rigcheck"
TESTS = ROOT / "tests"


def line_count(path: Path) -> int:
    with path.open("rb") as fh:
        return sum(1 for _ in fh)


def python_files(root: Path) -> dict[Path, int]:
    """Every .py file under ``root`` (relative to it) and its lines."""
    return {p.relative_to(root): line_count(p) for p in sorted(root.rglob("*.py"))}


def by_folder(files: dict[Path, int]) -> dict[Path, tuple[int, int, int]]:
    """Folder -> (its files, their lines, the lines of the folder and every folder below it)."""
    own: dict[Path, list[int]] = defaultdict(lambda: [0, 0])
    for path, lines in files.items():
        own[path.parent][0] += 1
        own[path.parent][1] += lines
    return {
        folder: (n, lines, sum(c for p, c in files.items() if p.parent.is_relative_to(folder)))
        for folder, (n, lines) in sorted(own.items())
    }


def table(title: str, prefix: str, files: dict[Path, int]) -> list[str]:
    rows = [(Path(prefix, folder).as_posix() + "/", *counts) for folder, counts in by_folder(files).items()]
    width = max(len(name) for name, *_ in rows)
    out = [title, f"  {'':<{width}}  {'files':>5}  {'lines':>7}  {'with sub-folders':>16}"]
    out += [f"  {name:<{width}}  {n:>5}  {lines:>7,}  {tree:>16,}" for name, n, lines, tree in rows]
    out.append(f"  {'total':<{width}}  {len(files):>5}  {sum(files.values()):>7,}")
    return out


def report(top: int) -> str:
    src = python_files(PACKAGE)
    tests = python_files(TESTS)
    lines: list[str] = []
    lines += table("src/rigcheck, by package:", "src/rigcheck", src)
    lines.append("")
    lines.append(f"largest modules (top {top}):")
    largest = sorted(src.items(), key=lambda item: (-item[1], str(item[0])))[:top]
    lines += [f"  {n:>7,}  src/rigcheck/{path.as_posix()}" for path, n in largest]
    lines.append("")
    lines += table("tests, by folder:", "tests", tests)
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=15, help="how many of the largest modules to list")
    args = parser.parse_args()
    print(report(args.top))


if __name__ == "__main__":
    main()

"""`rigcheck history add` and `show` on issue #31's fleet: 63 nodes x 60 days of daily verify documents
(tests/support/ledger_fleet.py): the three nodes failing every fifth day are the top offenders and repeat
offenders, the GPU that failed and moved raises `reissued` on its new node, adding twice changes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.contracts.test_schemas import assert_valid
from tests.support.cli import Rigcheck
from tests.support.ledger_fleet import MOVED_FROM, MOVED_ON_DAY, MOVED_TO, MOVED_UUID, OFFENDERS, ONCE, write_fleet


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fleet")
    assert write_fleet(root) == 63 * 60
    return root


@pytest.fixture(scope="module")
def ledger(fleet: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fleet added once (through the library, as the command does), shared by the tests that only read it."""
    from rigcheck.ledger.ingest import add_files, document_files
    from rigcheck.ledger.store import open_ledger

    path = tmp_path_factory.mktemp("ledger") / "ledger.sqlite"
    with open_ledger(path) as conn:
        added = add_files(conn, document_files([fleet]))
    assert (added.new, added.known, added.not_rigcheck, added.from_mtime) == (3780, 0, [], 3780)
    return path


def test_add_is_idempotent_and_counts_what_it_skipped(rigcheck: Rigcheck, tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    write_fleet(folder, nodes=2, days=3)
    (folder / "notes.json").write_text('{"hello": 1}')
    (folder / "broken.json").write_text("{")
    ledger = tmp_path / "l.sqlite"
    first = rigcheck("history", "add", folder, "--ledger", ledger)
    assert first.code == 0
    assert "6 new, 0 already known, 2 not rigcheck documents (6 new dated by their file's time)" in first.stdout
    again = rigcheck("history", "add", folder / "node-00", folder, env={"RIGCHECK_LEDGER": str(ledger)})
    assert "0 new, 9 already known, 2 not rigcheck documents" in again.stdout  # node-00's 3 twice, then all 6
    shown = rigcheck("history", "show", "--ledger", ledger, "--node", "node-00", "--json").json
    assert shown["documents"] == 6
    assert shown["timelines"][0]["entries"][0]["created_at"] == "2025-01-01T06:00:00Z"  # the file's time, UTC


def test_the_three_are_the_top_offenders_and_the_moved_gpu_is_flagged(rigcheck: Rigcheck, ledger: Path) -> None:
    result = rigcheck("history", "show", "--ledger", ledger, "--json")
    assert result.code == 0, result.stderr
    doc = result.json
    assert_valid(doc)
    top = doc["offenders"][:3]
    assert sorted(o["node"] for o in top) == sorted(OFFENDERS)
    assert all(o["excluded"] == 12 and o["runs"] == 60 for o in top)
    assert sum(o["share"] for o in top) == pytest.approx(36 / doc["excluded"], abs=1e-3)
    assert doc["excluded"] == 36 + len(ONCE) + 1  # the moved GPU's node failed once too
    reissued = [a for a in doc["alerts"] if a["kind"] == "reissued"]
    assert [(a["node"], a["gpu"], a["created_at"][:10]) for a in reissued] == [
        (MOVED_TO, MOVED_UUID, f"2025-01-{1 + MOVED_ON_DAY:02d}")
    ]
    assert MOVED_FROM in reissued[0]["message"]
    repeat = {a["node"] for a in doc["alerts"] if a["kind"] == "repeat-offender"}
    assert repeat == set(OFFENDERS)  # a node failing once is not one
    moved = next(t for t in doc["timelines"] if t["gpu"] == MOVED_UUID)
    assert moved["nodes"] == [MOVED_FROM, MOVED_TO]


def test_the_filters_narrow_the_answer(rigcheck: Rigcheck, ledger: Path) -> None:
    by_gpu = rigcheck("history", "show", "--ledger", ledger, "--gpu", MOVED_UUID, "--json").json
    assert [t["gpu"] for t in by_gpu["timelines"]] == [MOVED_UUID]
    assert [a["kind"] for a in by_gpu["alerts"]] == ["reissued"]
    by_node = rigcheck("history", "show", "--ledger", ledger, "--node", OFFENDERS[0], "--json").json
    assert [o["node"] for o in by_node["offenders"]] == [OFFENDERS[0]]
    assert by_node["runs"] == 60
    assert all(OFFENDERS[0] in t["nodes"] for t in by_node["timelines"])
    late = rigcheck("history", "show", "--ledger", ledger, "--since", "2025-02-20", "--json").json
    assert late["filters"]["since"] == "2025-02-20T00:00:00Z"
    assert late["runs"] == 63 * 10  # 2025-02-20 .. 2025-03-01
    assert not [a for a in late["alerts"] if a["kind"] == "reissued"]  # its failure is before --since


@pytest.mark.parametrize("fmt", ["--markdown", "--html", ""])
def test_the_renderings_name_the_offenders_and_the_alert(rigcheck: Rigcheck, ledger: Path, fmt: str) -> None:
    from rigcheck.cli.history import history_document
    from rigcheck.model.history import Filters
    from rigcheck.report.history import RENDERERS

    doc = history_document(ledger, Filters(node=None, gpu=None, since=None))
    if fmt == "--markdown":
        text = RENDERERS.markdown(doc)
    elif fmt == "--html":
        text = RENDERERS.html(doc)
    else:
        text = rigcheck("history", "show", "--ledger", ledger).stdout
    assert all(node in text for node in OFFENDERS)
    assert f"reissued: GPU {MOVED_UUID} failed on {MOVED_FROM}" in text


def test_bad_inputs_are_one_line_errors(rigcheck: Rigcheck, tmp_path: Path) -> None:
    not_ledger = tmp_path / "x.sqlite"
    not_ledger.write_text("hello")
    assert "not a rigcheck ledger" in rigcheck("history", "show", "--ledger", not_ledger).error()
    assert not_ledger.read_text() == "hello"
    assert "no ledger here" in rigcheck("history", "show", "--ledger", tmp_path / "none").error()
    assert "no such file or folder" in rigcheck("history", "add", tmp_path / "nope", "--ledger", not_ledger).error()
    since = rigcheck("history", "show", "--ledger", not_ledger, "--since", "last week").error()
    assert "--since last week" in since

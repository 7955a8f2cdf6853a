"""`rigcheck history add` and `show` on issue #31's fleet: 63 nodes x 60 days of daily verify documents
(tests/support/ledger_fleet.py): the three nodes failing every fifth day are the top offenders and repeat
offenders, the GPU that failed and moved raises `reissued` on its new node, the GPU whose bandwidth falls raises
`drift`, adding twice changes nothing; the trends the ledger caches give the same answer as fitting afresh."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.contracts.test_schemas import assert_valid
from tests.support.cli import Rigcheck
from tests.support.ledger_fleet import (
    DRIFTING,
    MOVED_FROM,
    MOVED_ON_DAY,
    MOVED_TO,
    MOVED_UUID,
    OFFENDERS,
    ONCE,
    gpu_uuid,
    history_sample,
    write_fleet,
)

DRIFTING_UUID = gpu_uuid(DRIFTING, 0)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fleet")
    assert write_fleet(root) == 63 * 60
    return root


@pytest.fixture(scope="module")
def ledger(fleet: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fleet added once by the command (two worker processes read the files; the trends are fitted and
    kept), shared by the tests that only read it."""
    from rigcheck.cli.history import refresh_trends
    from rigcheck.ledger.ingest import add_files, document_files
    from rigcheck.ledger.store import open_ledger
    from rigcheck.ledger.trends import stale

    path = tmp_path_factory.mktemp("ledger") / "ledger.sqlite"
    with open_ledger(path) as conn:
        added = add_files(conn, document_files([fleet]), workers=2)
        assert len(stale(conn)) == 63 * 2 + 1  # every GPU, and the moved one's replacement
        assert refresh_trends(conn) == 63 * 2 + 1
        assert stale(conn) == set()
        assert conn.execute("SELECT COUNT(*) FROM trends").fetchone()[0] == (63 * 2 + 1) * 3
    assert (added.new, added.known, added.not_rigcheck, added.from_name, added.from_mtime) == (3780, 0, [], 3780, 0)
    return path


@pytest.fixture(scope="module")
def stale_ledger(fleet: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same fleet added in this process with no trend fitted: every answer must be fitted at `show`."""
    from rigcheck.ledger.ingest import add_files, document_files
    from rigcheck.ledger.store import open_ledger

    path = tmp_path_factory.mktemp("stale") / "ledger.sqlite"
    with open_ledger(path) as conn:
        add_files(conn, document_files([fleet]), workers=0)
    return path


@pytest.mark.parametrize(
    "filters",
    [(), ("--since", "2025-02-20"), ("--since", "2024-12-01"), ("--gpu", DRIFTING_UUID), ("--node", DRIFTING)],
    ids=["all", "since-cuts-windows", "since-before-all", "one-gpu", "one-node"],
)
def test_the_cached_trends_answer_as_fitting_afresh_does(
    rigcheck: Rigcheck, ledger: Path, stale_ledger: Path, filters: tuple[str, ...]
) -> None:
    cached = rigcheck("history", "show", "--ledger", ledger, "--json", *filters).json
    fresh = rigcheck("history", "show", "--ledger", stale_ledger, "--json", *filters).json
    assert {k: v for k, v in cached.items() if k != "ledger"} == {k: v for k, v in fresh.items() if k != "ledger"}


def test_add_is_idempotent_and_counts_what_it_skipped(rigcheck: Rigcheck, tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    write_fleet(folder, nodes=2, days=3)
    (folder / "notes.json").write_text('{"hello": 1}')
    (folder / "broken.json").write_text("{")
    ledger = tmp_path / "l.sqlite"
    first = rigcheck("history", "add", folder, "--ledger", ledger)
    assert first.code == 0
    assert (
        "6 new, 0 already known, 2 not rigcheck documents (6 new dated by a date in their file's name)" in first.stdout
    )
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
    drift = [a for a in doc["alerts"] if a["kind"] == "drift"]
    assert [(a["node"], a["gpu"], a["created_at"][:10]) for a in drift] == [(DRIFTING, DRIFTING_UUID, "2025-03-01")]
    assert (
        "membw fell -5.0% over 30 days (2902 -> 2757, 31 runs" in drift[0]["message"]
    )  # the wobble does not move Theil-Sen's line


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
    assert not [a for a in late["alerts"] if a["kind"] == "drift"]  # 10 days from --since on: too short a trend
    drifting = rigcheck("history", "show", "--ledger", ledger, "--node", DRIFTING, "--json").json
    assert [(a["kind"], a["gpu"]) for a in drifting["alerts"]] == [("drift", DRIFTING_UUID)]


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


def test_a_timeline_table_keeps_its_key_runs_and_counts_the_rest() -> None:
    from rigcheck.report.history import timeline_rows

    (line,) = history_sample().timelines
    rows, classes = timeline_rows(line)
    assert [r[0] for r in rows] == [
        "2025-03-01", "...", "2025-03-13", "...", "2025-03-21", "...", "2025-03-31", "...", "2025-04-10",
    ]  # fmt: skip
    assert classes == ["pass", "gap", "fail", "gap", "pass", "gap", "fail", "gap", "pass"]
    assert rows[1][1:] == ("", "", "11 runs", "11 pass, 2025-03-02 to 2025-03-12")
    assert rows[4][1] == "n2"  # the first run on the node it moved to


def test_show_writes_its_html_and_markdown_pages(rigcheck: Rigcheck, ledger: Path, tmp_path: Path) -> None:
    page, notes = tmp_path / "h.html", tmp_path / "h.md"
    result = rigcheck("history", "show", "--ledger", ledger, "--html", page, "--markdown", notes)
    assert result.code == 0, result.stderr
    html, markdown = page.read_text(), notes.read_text()
    titles = markdown.split("\n## GPU ")[1:]
    assert len(titles) == 3 + len(ONCE) + 1 + 1  # the failed GPUs, and the drifting one
    assert html.count("<svg") == len(titles)  # a chart each
    assert f"GPU {DRIFTING_UUID}: 0 failed run(s) on {DRIFTING}" in markdown  # drifting, never failed: charted
    assert f"on {MOVED_TO}</text>" in html  # the moved GPU's chart marks the day


def test_add_fits_what_was_left_stale_even_with_nothing_new(rigcheck: Rigcheck, tmp_path: Path) -> None:
    """A ledger whose GPUs are stale (migrated from v2, or added by the library alone) is fitted by the next
    `history add`, though every file it is given is known."""
    from rigcheck.ledger.ingest import add_files, document_files
    from rigcheck.ledger.store import open_ledger
    from rigcheck.ledger.trends import cached, stale

    folder = tmp_path / "docs"
    write_fleet(folder, nodes=2, days=10)
    path = tmp_path / "l.sqlite"
    with open_ledger(path) as conn:
        add_files(conn, document_files([folder]), workers=0)
        assert len(stale(conn)) == 4
    result = rigcheck("history", "add", folder, "--ledger", path)
    assert "0 new, 20 already known" in result.stdout
    assert "fitting the drift trends of 4 GPUs" in result.stderr
    with open_ledger(path) as conn:
        assert stale(conn) == set()
        assert {t.figure for t in cached(conn)} == {"membw", "matmul_bf16", "hostlink"}
        assert len(cached(conn)) == 4 * 3


def test_a_long_offender_list_is_cut_in_text_and_whole_in_json_and_html() -> None:
    from rigcheck.model.history import Offender
    from rigcheck.report.history import OFFENDERS_SHOWN, RENDERERS

    doc = history_sample()
    many = [
        Offender(
            node=f"n{i:03d}", runs=30, excluded=3 if i < 2 else 1, share=0.01, last_excluded="2025-04-10T06:00:00Z"
        )
        for i in range(OFFENDERS_SHOWN + 12)
    ]
    doc = doc.model_copy(update={"offenders": many})
    said = "and 12 more node(s) with 12 excluded run(s) between them, at most 1 each"
    markdown = RENDERERS.markdown(doc)
    assert said in markdown
    assert f"| n{OFFENDERS_SHOWN - 1:03d} |" in markdown
    assert f"| n{OFFENDERS_SHOWN:03d} |" not in markdown
    html = RENDERERS.html(doc)
    assert f"n{OFFENDERS_SHOWN + 11:03d}" in html
    assert said not in html
    assert len(doc.to_json_dict()["offenders"]) == OFFENDERS_SHOWN + 12


def test_the_summary_counts_in_words_that_agree() -> None:
    from rigcheck.report.history import RENDERERS

    many = RENDERERS.markdown(history_sample())
    assert "41 documents; 0 runs judged a node each, 0 excluded it" in many
    one = RENDERERS.markdown(history_sample().model_copy(update={"documents": 1, "runs": 1, "excluded": 1}))
    assert "1 document; 1 run judged a node, 1 excluded it" in one

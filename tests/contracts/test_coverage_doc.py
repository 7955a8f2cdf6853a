"""docs/coverage.md is generated from the incident corpus (tests/incidents, tools/update_coverage_doc.py) and
current; no profile's share of real incidents falls under its committed floor (tests/incidents/floors.json); the
corpus is whole (sources, files, verdicts) and every miss or false alarm says why."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from tests.incidents.corpus import HERE, MANIFEST, RECONSTRUCTED, ROLES, Culprit, load_floors, load_incidents
from tests.incidents.coverage_doc import render
from tests.incidents.profiles import PROFILES, Failing, files_for, judge, matches, replays, shares

DOC = Path(__file__).parent.parent.parent / "docs" / "coverage.md"
INCIDENTS = load_incidents()


def test_manifest_is_complete_and_every_file_is_there() -> None:
    raw = json.loads(MANIFEST.read_text(encoding="utf-8"))
    assert raw["format"] == "rigcheck-incidents/1"
    ids = [i.id for i in INCIDENTS]
    assert len(ids) == len(set(ids))
    assert len(INCIDENTS) >= 25
    assert sum(i.verdict == "healthy" for i in INCIDENTS) >= 5
    for incident in INCIDENTS:
        assert incident.verdict in ("sick", "healthy"), incident.id
        assert incident.source.startswith("https://"), incident.id  # a public address, never a lookup id
        assert incident.what, incident.id
        assert incident.established, incident.id
        assert incident.files, incident.id
        for saved in incident.files:
            assert saved.full_path.is_file(), saved.path
            assert saved.role in ROLES, saved.path
            assert set(saved.profiles or ()) <= set(PROFILES), saved.path
            assert saved.origin in ("verbatim", RECONSTRUCTED), saved.path
            if saved.origin == RECONSTRUCTED:
                assert saved.note, f"{saved.path}: say what was built around the quoted values"
    # every output kept under tests/incidents/ belongs to an incident
    listed = {f.full_path.resolve() for i in INCIDENTS for f in i.files}
    kept = {p.resolve() for d in HERE.iterdir() if d.is_dir() and d.name != "__pycache__" for p in d.rglob("*")}
    assert {p for p in kept if p.is_file()} <= listed


def test_committed_page_is_current() -> None:
    assert DOC.read_text(encoding="utf-8") == render(replays(), list(INCIDENTS)), (
        "docs/coverage.md is stale: run `python tools/update_coverage_doc.py`"
    )


@pytest.mark.parametrize("profile", PROFILES)
def test_no_share_falls_under_its_floor(profile: str) -> None:
    floor = load_floors()[profile]
    share = next(s for s in shares(replays()) if s.profile == profile)
    assert share.flagged_share >= floor["flagged"], (
        f"{profile} flags {share.flagged}/{share.sick} sick incidents, under its floor {floor['flagged']}"
    )
    assert share.left_alone_share >= floor["left_alone"], (
        f"{profile} leaves {share.left_alone}/{share.healthy_judged} healthy incidents alone, "
        f"under its floor {floor['left_alone']}"
    )


def test_every_miss_and_false_alarm_says_why() -> None:
    # A profile that had something to read and did not flag a sick incident, or failed a healthy one, is a gap in
    # a reader or a rule: the manifest says which, and the page lists it.
    needs = {
        r.incident.id
        for r in replays()
        if files_for(r.incident, r.profile)
        and (
            (r.incident.verdict == "sick" and r.status != "flagged")
            or (r.incident.verdict == "healthy" and r.status in ("false alarm", "unread"))
        )
    }
    explained = {i.id for i in INCIDENTS if i.gap}
    assert needs <= explained, f"say why in the manifest's gap: {sorted(needs - explained)}"
    # ... and a gap that no profile shows any more is stale: the page would list a fixed fault as a miss.
    assert explained <= needs, f"remove the fixed gap from the manifest: {sorted(explained - needs)}"


def test_a_failure_that_names_another_gpu_is_not_a_flag() -> None:
    incident = next(i for i in INCIDENTS if i.id == "xid119-h100-gsp-rpc-timeout")
    assert judge(incident, "doctor").status == "flagged"
    elsewhere = dataclasses.replace(incident, culprit=Culprit(bus_id="0000:1b:00.0"))
    assert judge(elsewhere, "doctor").status == "wrong subject"


def test_bus_ids_match_in_any_spelling() -> None:
    gpu = Failing(0, "00000000:9B:00.0", "xid.hardware")
    assert matches(gpu, Culprit(bus_id="0000:9b:00.0"))
    assert matches(gpu, Culprit(bus_id="9b:00"))
    assert not matches(gpu, Culprit(bus_id="0000:9c:00.0"))
    assert not matches(gpu, Culprit(index=1))
    assert matches(Failing(None, None, "doctor xid.gsp-timeout GPU6"), Culprit(text="gpu6"))


def test_page_names_no_path_of_the_machine() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert str(Path(__file__).resolve().parents[2]) not in text
    assert "/tmp/" not in text
    assert "rigcheck-incident-" not in text  # the replays' temporary directories

"""Reports from saved outputs lead with what matters: the `unknown` findings that only say the input lacks a
kind of data are folded into one line per missing source after the findings; `--show-unknown` lists them, the
JSON always holds every finding, and an unknown the machine caused is never folded."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from rich.console import Console

from rigcheck.checks.doctor import FINDING_IDS, run_checks
from rigcheck.checks.doctor.unknown_sources import FOLDABLE, NEVER_FOLDED, fold_input_gaps, folds_input_gaps
from rigcheck.cli.exits import exit_code_for
from rigcheck.model import Finding, Missing, Severity, Snapshot, Source, snapshot_from_json
from rigcheck.model.doctor import DoctorDocument, doctor_document
from rigcheck.readers.from_file import load_file, load_files
from rigcheck.report.doctor import doctor_html, doctor_markdown, doctor_terminal
from rigcheck.report.render import DEFAULT_OPTIONS, RenderOptions, json_text
from tests.support.cli import Rigcheck

ROOT = Path(__file__).resolve().parent.parents[1]
CORPUS = ROOT / "tests" / "fixtures" / "corpus"
TABLE = str(CORPUS / "smi" / "001-4x-rtx6000ada-575-truncated-names.txt")  # the plain `nvidia-smi` table, 4 GPUs
TOPO = str(CORPUS / "topo" / "004-4x-rtx6000ada-node-sys-4nic-spaces.txt")  # the same machine's `topo -m`
SNAPSHOTS = ROOT / "tests" / "fixtures" / "snapshots"

# The table's 12 unknowns, by the source that would carry their data.
TABLE_LINES = {
    "no GPU topology in this input (1 finding): add `--from topo.txt` (`nvidia-smi topo -m`)",
    "no PCIe link or power readings in this input (8 findings): add `--from q.xml` (`nvidia-smi -q -x`)",
    "no P2P status in this input (1 finding): add `--from p2p.txt` (`nvidia-smi topo -p2p r`)",
    "no IOMMU state or PCIe ACS state in this input (2 findings): add `--from rig.json` "
    "(`rigcheck snapshot > rig.json`)",
}


def _doc(snap: Snapshot) -> DoctorDocument:
    findings = run_checks(snap)
    return doctor_document(snap, findings, exit_code=exit_code_for(findings), strict=False)


def _terminal(doc: DoctorDocument, options: RenderOptions = DEFAULT_OPTIONS) -> str:
    out = io.StringIO()
    Console(file=out, width=400, color_system=None).print(doctor_terminal(doc, options))
    return out.getvalue()


def _table_doc() -> DoctorDocument:
    return _doc(load_file(TABLE))


def test_table_folds_its_unknowns_into_one_line_per_source_after_the_problems() -> None:
    doc = _table_doc()
    assert doc.counts.unknown == 12
    text = _terminal(doc)
    lines = text.splitlines()
    assert "UNKNOWN" not in text  # every unknown of the table is only a gap of the table
    fold = next(i for i, line in enumerate(lines) if line.startswith("NOT IN INPUT"))
    assert "12 of the 12 unknown findings" in lines[fold]
    assert "--show-unknown" in lines[fold]
    shown = [line.strip() for line in lines[fold + 1 : fold + 5]]
    assert {re.sub(r"  \[.*\]$", "", line) for line in shown} == TABLE_LINES
    assert shown[1].endswith("[pcie.link-unavailable, power.readings-unavailable]")
    # Problems first: every finding line (the INFO ones too) and the passed line come before the fold.
    assert max(i for i, line in enumerate(lines) if line.startswith(("INFO", "OK"))) < fold
    # The result line counts every unknown, folded too; the 9 info findings are the 3 lines printed.
    assert "Result: no problems found, but some checks could not decide (12 unknown, 3 info) — exit 0" in text


def test_show_unknown_restores_the_full_list() -> None:
    doc = _table_doc()
    every = RenderOptions(show_unknown=True)
    text = _terminal(doc, every)
    markdown = doctor_markdown(doc, every)
    html = doctor_html(doc, every)
    assert "NOT IN INPUT" not in text
    assert len(re.findall(r"^UNKNOWN ", text, flags=re.MULTILINE)) == 6  # one line per id, GPUs grouped
    for fid in ("topology.link-unknown", "pcie.link-unavailable", "p2p.iommu-unknown", "p2p.acs-unknown"):
        assert f"[{fid}]" in text
    assert "Not in this input" not in markdown
    assert "12 unknown, 9 info, 8 ok; exit code 0." in markdown
    assert 'id="not-in-input"' not in html
    assert html.count('data-severity="unknown"') == 7


def test_the_cli_flag(rigcheck: Rigcheck) -> None:
    code, folded, _ = rigcheck("doctor", "--from", TABLE)
    code_all, listed, _ = rigcheck("doctor", "--from", TABLE, "--show-unknown")
    assert code == code_all == 0
    assert "NOT IN INPUT" in folded
    assert "UNKNOWN" not in folded
    assert "NOT IN INPUT" not in listed
    assert "link type unknown for 6 of 6 GPU pairs" in listed


def test_the_flag_reaches_the_pages_written_beside(tmp_path: Path, rigcheck: Rigcheck) -> None:
    for flag, folded in (([], True), (["--show-unknown"], False)):
        md, html = tmp_path / "rig.md", tmp_path / "rig.html"
        rigcheck("doctor", "--from", TABLE, "--json", "--markdown", str(md), "--html", str(html), *flag)
        assert ("## Not in this input" in md.read_text(encoding="utf-8")) is folded
        assert ('id="not-in-input"' in html.read_text(encoding="utf-8")) is folded


def test_json_is_the_same_with_and_without_folding(rigcheck: Rigcheck) -> None:
    doc = _table_doc()
    listed = json_text(doc, RenderOptions(show_unknown=True))
    assert json_text(doc) == listed
    out = rigcheck("doctor", "--from", TABLE, "--json").stdout
    out_all = rigcheck("doctor", "--from", TABLE, "--json", "--show-unknown").stdout
    assert out == out_all
    assert json.loads(out)["counts"]["unknown"] == 12
    assert sum(f["severity"] == "unknown" for f in json.loads(out)["findings"]) == 12


def test_the_fold_partitions_the_findings() -> None:
    doc = _table_doc()
    kept, groups = fold_input_gaps(doc.snapshot, doc.findings)
    folded = [f for g in groups for f in g.findings]
    assert len(kept) + len(folded) == len(doc.findings)
    assert sorted(map(id, kept + folded)) == sorted(map(id, doc.findings))
    assert [f for f in doc.findings if f in kept] == kept  # the order of what is listed is kept
    assert all(f.severity is Severity.UNKNOWN for f in folded)


def test_every_format_renders_the_fold() -> None:
    doc = _table_doc()
    markdown = doctor_markdown(doc)
    assert "12 unknown (12 folded below), 9 info, 8 ok; exit code 0." in markdown
    section = markdown[markdown.index("## Not in this input") :]
    assert markdown.index("## Findings") < markdown.index("## Not in this input")
    for line in TABLE_LINES:
        assert f"- {line} — " in section
    assert "`pcie.link-unavailable`, `power.readings-unavailable`" in section
    assert "| UNKNOWN |" not in markdown

    html = doctor_html(doc)
    section = html[html.index('<section id="not-in-input">') :]
    assert html.index('<section id="findings">') < html.index('<section id="not-in-input">')
    assert section.count("<li data-source=") == 4
    # rigcheck's backticks become code; the `>` of the command is escaped.
    assert "add <code>--from rig.json</code> (<code>rigcheck snapshot &gt; rig.json</code>)" in section
    assert 'data-severity="unknown"' not in html  # nothing left to list as an unknown entry
    assert "12 unknown (12 folded below)" in html


def test_a_combined_input_folds_only_what_is_still_missing() -> None:
    doc = _doc(load_files([TABLE, TOPO]))
    _, groups = fold_input_gaps(doc.snapshot, doc.findings)
    assert [g.source.key for g in groups] == ["nvidia-smi-q", "p2p", "host"]  # the topology is there now


@pytest.mark.parametrize(
    "reason", [Missing.NOT_SUPPORTED, Missing.NO_PERMISSION, Missing.REPORTED_NA, Missing.TRUNCATED, Missing.ERROR]
)
def test_an_unknown_the_machine_caused_stays_a_finding(reason: Missing) -> None:
    snap = load_file(TABLE)
    snap.gpus[2].missing["pcie_gen_max"] = reason
    snap.gpus[3].missing["power_default_limit_w"] = reason
    doc = _doc(snap)
    kept, groups = fold_input_gaps(doc.snapshot, doc.findings)
    unknown = {(f.id, f.subject) for f in kept if f.severity is Severity.UNKNOWN}
    assert unknown == {("pcie.link-unavailable", "GPU2"), ("power.readings-unavailable", "GPU3")}
    q = next(g for g in groups if g.source.key == "nvidia-smi-q")
    assert len(q.findings) == 6  # the other GPUs' PCIe and power gaps are still the table's
    text = _terminal(doc)
    assert re.search(r"^UNKNOWN GPU2 .*\[pcie\.link-unavailable\]$", text, flags=re.MULTILINE)
    assert "(6 findings)" in text


def test_a_snapshot_read_through_nvml_never_folds() -> None:
    # A live run, or its snapshot replayed: there `not_in_source` also means "not installed", and an unknown is
    # about the machine. consumer-power-not-supported holds a power unknown (not_supported) and an ACS one.
    snap = snapshot_from_json((SNAPSHOTS / "2x-3090-phb-throttling.json").read_text(encoding="utf-8"))
    assert snap.source.kind == "nvml"
    assert not folds_input_gaps(snap)
    doc = _doc(snap)
    assert doc.counts.unknown > 0
    assert fold_input_gaps(doc.snapshot, doc.findings) == (list(doc.findings), [])
    assert "NOT IN INPUT" not in _terminal(doc)
    # A file combined with a snapshot that came from NVML: still the machine's word.
    table = load_file(TABLE)
    table.source = Source(kind="combined", parts=[Source(kind="nvml"), Source(kind="nvidia-smi-table", path=TABLE)])
    assert not folds_input_gaps(table)


def test_an_unmapped_unknown_goes_under_other_only_when_it_names_the_input() -> None:
    snap = load_file(TABLE)
    gap = Finding(
        id="future.thing-unknown",
        severity=Severity.UNKNOWN,
        category="future",
        subject="GPU0",
        gpu=0,
        message="cannot judge the thing: thing not available (not_in_source)",
    )
    machine = gap.model_copy(update={"subject": "GPU1", "message": "thing not available (not_supported)"})
    kept, groups = fold_input_gaps(snap, [gap, machine])
    assert kept == [machine]
    assert [(g.source.key, g.line) for g in groups] == [
        ("other", "no other data in this input (1 finding): --show-unknown lists them")
    ]


def test_every_unknown_a_check_can_emit_is_classified() -> None:
    # Each `"<id>", Severity.UNKNOWN` in checks/ is mapped to its source or said never to fold; a new one must
    # be placed (else it falls to the generic line at best).
    checks = ROOT / "src" / "rigcheck" / "checks"
    emitted = set()
    for path in checks.rglob("*.py"):
        emitted |= set(re.findall(r'"([a-z0-9]+\.[a-z0-9-]+)",\s*Severity\.UNKNOWN', path.read_text(encoding="utf-8")))
    assert len(emitted) >= 12
    assert emitted == set(FOLDABLE) | NEVER_FOLDED
    known = {fid for ids in FINDING_IDS.values() for fid in ids}
    assert set(FOLDABLE) | NEVER_FOLDED <= known

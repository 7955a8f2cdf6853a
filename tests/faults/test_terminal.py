"""Escape sequences in inputs never reach the terminal (issue 25, Deliver 4). A saved snapshot is anyone's
file: its GPU names and hostname here hold a window-title OSC, a clear-screen CSI, an OSC 52 clipboard write, a
C1 CSI, DEL, a bare CR and a backspace. No report rigcheck prints holds one of them; JSON keeps them escaped."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.faults.support import CONTROL, ROOT, SNAPSHOTS
from tests.support.cli import Rigcheck

# Synthetic, labelled as such: what an attacker would put in a saved snapshot.
POISON = "\x1b]0;pwned\x07\x1b[2J\x1b]52;c;cHduZWQ=\x07\x9b31m\x7f\rX\x08"
PAYLOADS = ("pwned", "cHduZWQ=")  # inside the sequences: stripped with them, never shown


def _poisoned(path: Path, into: Path) -> Path:
    data: dict[str, Any] = json.loads(path.read_text())
    data["host"]["hostname"] += POISON
    for gpu in data["gpus"]:
        gpu["name"] += POISON
    for row in (data.get("topology") or {}).get("gpus") or []:  # what `topo` prints of the snapshot's own text
        row["cpu_affinity"] = (row.get("cpu_affinity") or "") + POISON
    into.write_text(json.dumps(data), encoding="utf-8")
    return into


def _assert_clean(text: str) -> None:
    assert not CONTROL.intersection(text), sorted({hex(ord(c)) for c in CONTROL.intersection(text)})
    for payload in PAYLOADS:
        assert payload not in text


@pytest.fixture(autouse=True)
def _no_forced_colour(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FORCE_COLOR", raising=False)  # rich's own colours would be escape sequences too


@pytest.fixture
def snapshot(tmp_path: Path) -> Path:
    return _poisoned(SNAPSHOTS / "2x-titan-rtx-nv2.json", tmp_path / "snapshot.json")


@pytest.mark.parametrize(
    "argv",
    [["doctor"], ["doctor", "--format", "markdown"], ["topo"], ["power"], ["thermal"]],
    ids=" ".join,
)
def test_a_poisoned_snapshot_prints_no_control_character(snapshot: Path, rigcheck: Rigcheck, argv: list[str]) -> None:
    code, out, err = rigcheck(*argv, "--from", str(snapshot))
    assert code in (0, 1), err
    assert ("0-23" if argv[0] == "topo" else "TITAN RTX") in out  # the text is shown, its sequences are not
    _assert_clean(out)
    _assert_clean(err)


def test_verify_from_a_poisoned_directory(tmp_path: Path, rigcheck: Rigcheck) -> None:
    saved = tmp_path / "saved"
    shutil.copytree(ROOT / "tests" / "fixtures" / "verify" / "h100x8-pass", saved)
    _poisoned(saved / "snapshot.json", saved / "snapshot.json")
    code, out, err = rigcheck("verify", "--from", str(saved))
    assert code in (0, 1), err
    assert "NVIDIA H100 80GB HBM3" in out
    _assert_clean(out)
    _assert_clean(err)
    code, out, _ = rigcheck("verify", "--from", str(saved), "--slurm")  # the drain-reason line
    _assert_clean(out)


def test_fleet_from_poisoned_node_documents(tmp_path: Path, rigcheck: Rigcheck) -> None:
    saved = tmp_path / "nodes"
    shutil.copytree(ROOT / "tests" / "fixtures" / "fleet" / "4-nodes", saved)
    for node in saved.glob("*.json"):
        _poisoned(node, node)
    code, out, err = rigcheck("fleet", "--from", str(saved))
    assert code in (0, 1), err
    assert "node01" in out
    _assert_clean(out)
    _assert_clean(err)


def test_json_keeps_the_characters_escaped(snapshot: Path, rigcheck: Rigcheck) -> None:
    code, out, _ = rigcheck("doctor", "--from", str(snapshot), "--json")
    assert code in (0, 1)
    assert not CONTROL.intersection(out)  # C0 escaped by JSON itself, DEL and C1 by rigcheck
    data = json.loads(out)
    assert data["snapshot"]["gpus"][0]["name"] == "TITAN RTX" + POISON  # the same document, exactly


def test_html_and_markdown_files_hold_no_control_character(snapshot: Path, tmp_path: Path, rigcheck: Rigcheck) -> None:
    html, markdown = tmp_path / "r.html", tmp_path / "r.md"
    code, _, err = rigcheck("doctor", "--from", str(snapshot), "--html", str(html), "--markdown", str(markdown))
    assert code in (0, 1), err
    for page in (html, markdown):
        _assert_clean(page.read_text(encoding="utf-8"))


@pytest.mark.parametrize("argv", [["doctor"], ["power"], ["thermal"]], ids=" ".join)
def test_rich_markup_in_a_name_is_text(tmp_path: Path, rigcheck: Rigcheck, argv: list[str]) -> None:
    """A GPU name is text, not rich markup: "[/]" was a MarkupError (exit 3, "internal error"), and
    "[link=...]" would have become a terminal hyperlink."""
    data = json.loads((SNAPSHOTS / "2x-titan-rtx-nv2.json").read_text())
    for gpu in data["gpus"]:
        gpu["name"] += " [/] [link=https://example.invalid]x[/link]"
    snapshot = tmp_path / "markup.json"
    snapshot.write_text(json.dumps(data))
    code, out, err = rigcheck(*argv, "--from", str(snapshot))
    assert code in (0, 1), err
    assert "TITAN RTX [/] [link=https://example.invalid]x[/link]" in out


def test_a_progress_line_quoting_a_rank_prints_no_control_character() -> None:
    """Progress lines quote what other ranks sent (a hostname): they go to the terminal too."""
    import io

    from rigcheck.cli.progress import ProgressLine

    stream = io.StringIO()
    line = ProgressLine(stream, tty=False)
    line(f"gather: node {'node07' + POISON} arrived")
    _assert_clean(stream.getvalue())
    assert "node07" in stream.getvalue()

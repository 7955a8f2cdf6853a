"""The Markdown reports show what they quote from their input as text: a GPU name holding `<script>` or `|`
neither injects HTML nor breaks a table (report/common.py md_text, md_cell, md_code)."""

from __future__ import annotations

import html
import re

import pytest
from markdown_it import MarkdownIt

from rigcheck.checks.doctor import run_checks
from rigcheck.model.doctor import doctor_document
from rigcheck.model.power_thermal import power_document, thermal_document
from rigcheck.model.snapshot import Nic, Snapshot
from rigcheck.model.topo import snapshot_topo_document
from rigcheck.report.common import md_cell, md_code, md_prose, md_text
from rigcheck.report.render import Format, render
from tests.support.snapshots import healthy_8x_h100

EVIL = "<script>alert(1)</script> | x"
MD = MarkdownIt("commonmark").enable("table")


def _evil_snapshot() -> Snapshot:
    snap = healthy_8x_h100()
    for gpu in snap.gpus:
        gpu.name = EVIL
    snap.gpus[1].temp_c = 92.0  # a finding whose message may quote the GPU
    assert snap.topology is not None
    snap.topology.nics = [Nic(label="NIC0", name="<b>mlx5_0</b>|`x`")]
    snap.topology.labels.append("NIC0")
    for row in snap.topology.matrix:
        row.append("SYS")
    snap.topology.matrix.append(["SYS"] * 8 + ["X"])
    snap.host.hostname = "box_*1*_[a](b)"
    return snap


def _markdown(kind: str) -> str:
    snap = _evil_snapshot()
    findings = run_checks(snap)
    if kind == "doctor":
        doc = doctor_document(snap, findings, exit_code=1, strict=False)
    elif kind == "power":
        doc = power_document(snap, [f for f in findings if f.category == "power"], exit_code=0, strict=False)
    elif kind == "thermal":
        doc = thermal_document(snap, [f for f in findings if f.category == "thermal"], exit_code=1, strict=False)
    else:
        topo = snapshot_topo_document(snap)
        assert topo is not None
        doc = topo
    text = render(doc, Format.MARKDOWN)
    assert isinstance(text, str)
    return text


def _cells(row: str) -> int:
    """Cells of a GFM table row: split at the pipes not escaped with a backslash."""
    return len(re.split(r"(?<!\\)\|", row.strip())) - 2


@pytest.mark.parametrize("kind", ["doctor", "power", "thermal", "topo"])
def test_input_text_is_text_and_tables_stay_intact(kind: str) -> None:
    text = _markdown(kind)
    assert "<script" not in text
    assert "<b>" not in text
    tables = re.findall(r"(?:^\|.*\n)+", text + "\n", flags=re.MULTILINE)
    assert tables
    for table in tables:
        rows = table.splitlines()
        assert {_cells(r) for r in rows} == {_cells(rows[0])}, table
    rendered = MD.render(text)
    assert "<script" not in rendered
    assert "<b>" not in rendered
    for table in re.findall(r"<table>.*?</table>", rendered, flags=re.DOTALL):
        widths = {len(re.findall(r"<t[hd][ >]", row)) for row in re.findall(r"<tr>.*?</tr>", table, re.DOTALL)}
        assert len(widths) == 1, table
    if kind != "topo":  # the topo document names no GPU models
        assert "&lt;script&gt;alert(1)&lt;/script&gt; | x" in rendered
    if kind == "topo":
        assert "&lt;b&gt;mlx5_0&lt;/b&gt;|`x`" in rendered  # the NIC name whole, its backticks as text
    if kind == "doctor":  # quoted in a finding's sentence, whose `backticks` are code as in the HTML report
        assert "&lt;b&gt;mlx5_0&lt;/b&gt;|<code>x</code>" in rendered
    if kind == "doctor":
        assert "box_*1*_[a](b)" in rendered  # no emphasis, no link
        assert "<em>" not in rendered
        assert "<a " not in rendered


def test_md_text_escapes_html_and_markdown() -> None:
    assert md_text("<a> & b") == "&lt;a> &amp; b"  # no tag can open without its "<"
    assert md_text("> quote") == "&gt; quote"
    assert md_text("# heading") == "\\# heading"
    assert md_text("a|b `c` *d* \\") == "a\\|b \\`c\\` \\*d\\* \\\\"
    assert md_text("[e](u) [f][g] rank[0] -> 1[1]") == "[e\\](u) [f\\][g] rank[0] -> 1[1]"
    assert md_text("sw_power_cap _x_") == "sw_power_cap \\_x\\_"  # an intraword _ opens no emphasis
    assert md_text("one\ntwo\r\nthree") == "one two three"
    assert md_cell("a|b") == "a\\|b"


@pytest.mark.parametrize("text", ["plain", "a`b", "``double`` and `one`", "`edge`", "<script>&amp;", "x|y"])
def test_md_code_shows_its_text_verbatim(text: str) -> None:
    span = md_code(text)
    code = re.search(r"<code>(.*?)</code>", MD.render(span), re.DOTALL)
    assert code is not None, span
    assert html.unescape(code.group(1)) == text
    assert md_code("a`b").startswith("``")
    assert md_code("a``b").startswith("```")


def test_md_code_in_a_table_cell_keeps_the_row() -> None:
    table = f"| a | b |\n| --- | --- |\n| {md_code('x|y`z', in_table=True)} | 2 |\n"
    rendered = MD.render(table)
    assert len(re.findall(r"<td>", rendered)) == 2
    assert "<code>x|y`z</code>" in rendered


def test_md_prose_sets_commands_as_code_and_the_rest_as_text() -> None:
    assert md_prose("run `nvidia-smi -q` on <x>") == "run `nvidia-smi -q` on &lt;x>"
    assert md_prose("a `x|y` b", in_table=True) == "a `x\\|y` b"
    assert md_prose("one ` unmatched *") == "one \\` unmatched \\*"

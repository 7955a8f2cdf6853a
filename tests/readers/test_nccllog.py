"""rigcheck.readers.nccl_log on every NCCL log we hold: the corpus's facts (manifest.json), extra real and synthetic
logs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rigcheck.errors import InputError, ParseError
from rigcheck.readers.nccl_log import (
    P2P_LABEL,
    SHM_LABEL,
    SINGLE_RANK_LABEL,
    NcclLogDocument,
    describe_transport,
    p2p_mismatch,
    parse_nccl_log,
    read_nccl_log,
)
from rigcheck.report.nccl_log import markdown
from rigcheck.report.render import Format, render
from tests.support.cli import Rigcheck

FIXTURES = Path(__file__).parent.parent / "fixtures"
CORPUS = FIXTURES / "corpus"
EXTRA = FIXTURES / "nccl-extra"
MANIFEST = [e for e in json.loads((CORPUS / "manifest.json").read_text()) if e["kind"] == "nccl-log"]


def parse(path: Path) -> NcclLogDocument:
    return parse_nccl_log(path.read_bytes().decode("utf-8"), str(path))


def test_manifest_has_nccl_logs() -> None:
    assert len(MANIFEST) >= 2


@pytest.mark.parametrize("entry", MANIFEST, ids=[e["file"] for e in MANIFEST])
def test_corpus_log_matches_manifest(entry: dict[str, Any]) -> None:
    facts = entry["facts"]
    log = parse(CORPUS / entry["file"])
    assert list(log.transports) == facts["transports_used"]
    assert log.p2p_disabled is facts["p2p_disabled"]
    env = facts["nccl_p2p_disable_env"]
    assert log.env.get("NCCL_P2P_DISABLE") == env
    assert list(log.nccl_versions) == facts["nccl_versions"]
    assert log.nranks == max(int(n) for n in facts["nranks"])
    assert log.channel_line_count == facts["channel_line_count"]
    assert log.channel_connections == facts["channel_connections"]
    assert log.peer_connections == len(facts["channel_connections"])


def test_corpus_vllm_log_details() -> None:
    log = parse(CORPUS / "nccl-log/001-2x5060ti-vllm-tp2-p2p-cumem-2.28.9.txt")
    assert (log.nccl_version, log.cuda) == ("2.28.9", "13.0")
    assert log.hosts == ["proxmox"]  # not "dproxmox" from the line glued mid-word
    assert log.env["NCCL_CUMEM_ENABLE"] == "1"
    assert describe_transport(log) == P2P_LABEL
    assert log.ranks_seen == [0, 1]


def test_corpus_multinode_ib_log_details() -> None:
    log = parse(CORPUS / "nccl-log/004-4node-32xa100-p2p-ipc-read-net-ib-2.10.3.txt")
    assert (log.nccl_version, log.cuda) == ("2.10.3", "11.3")
    assert log.transport_kinds == ["NET", "P2P"]
    assert len(log.hosts) == 4
    assert describe_transport(log) == P2P_LABEL + " + NET/IB"
    sends = [c for c in log.channels if c.direction == "send"]
    assert sends
    assert all(c.kind == "NET" for c in sends)
    assert {c.from_device for c in log.channels} >= {"7000", "cb000"}  # bus ids, kept as printed


def test_h100_one_rank_log() -> None:
    log = parse(CORPUS / "h100-vm/nccl-info-1rank-gpt2-ddp.txt")
    assert log.nranks == 1
    assert log.transports == []
    assert log.channel_line_count == 0  # "Channel 00/64 : 0" lines are ring orders, not connections
    assert log.p2p_disabled is None
    assert (log.nccl_version, log.cuda) == ("2.28.9", "13.0")
    assert describe_transport(log) == SINGLE_RANK_LABEL
    assert p2p_mismatch(log, expected_p2p=True) is None


# file, version, nranks, transports, p2p_disabled, channel lines, connections
EXTRA_FACTS: list[tuple[str, str | None, int | None, tuple[str, ...], bool | None, int, int]] = [
    ("002-8gpu-ring-p2p-ipc-glued-lines-issue147.txt", None, None, ("P2P/IPC",), False, 17, 15),
    ("003-srun-rank-prefix-ring-busid-2.5.6-issue302.txt", None, None, ("P2P/IPC",), False, 3, 3),
    ("004-multinode-net-socket-p2p-ipc-read-issue952.txt", None, None, ("NET/Socket/3", "P2P/IPC/read"), False, 16, 6),
    # NCCL 2.7's shared memory, "via direct shared memory", after "Could not enable P2P" (P2P unavailable, not off)
    (
        "005-4gpu-direct-shared-memory-could-not-enable-p2p-2.7.8.txt",
        "2.7.8",
        None,
        ("direct shared memory",),
        None,
        5,
        5,
    ),
    ("s01-synthetic-2x-titanrtx-nv2-p2p-ipc-2.7.8-crlf-progress.txt", "2.7.8", 2, ("P2P/IPC",), False, 8, 2),
    (
        "s02-synthetic-2x-titanrtx-p2p-disabled-shm-2.18.5-mpirun-ansi.txt",
        "2.18.5",
        2,
        ("SHM/direct/direct",),
        True,
        4,
        2,
    ),
    (
        "s03-synthetic-4rank-2node-p2p-disable-0-cumem-read-net-gdrdma-2.21.5.txt",
        "2.21.5",
        4,
        ("NET/IB/0/GDRDMA", "NET/IB/1(0)/GDRDMA(PCI)/Shared", "P2P/CUMEM/read", "P2P/direct pointer/read"),
        False,
        4,
        3,  # 0[0] -> 1[1] twice: P2P/CUMEM/read on channel 00, P2P/direct pointer/read on channel 01
    ),
    # what said the run failed (asserted below): an IB completion error, an abort and a watchdog timeout
    ("006-ib-plugin-warn-completion-status12-issue1405.txt", None, None, (), None, 0, 0),
    ("007-p2p-cumem-abort-complete-watchdog-issue1504.txt", None, 4, ("P2P/CUMEM",), False, 4, 2),
    ("008-torch-watchdog-timeout-only-llamafactory7396.txt", None, None, (), None, 0, 0),
]


@pytest.mark.parametrize("facts", EXTRA_FACTS, ids=[f[0] for f in EXTRA_FACTS])
def test_extra_logs(facts: tuple[str, str | None, int | None, tuple[str, ...], bool | None, int, int]) -> None:
    name, version, nranks, transports, disabled, lines, conns = facts
    log = parse(EXTRA / name)
    assert log.nccl_version == version
    assert log.nranks == nranks
    assert tuple(log.transports) == transports
    assert log.p2p_disabled is disabled
    assert log.channel_line_count == lines
    assert log.peer_connections == conns


def test_every_extra_fixture_is_tested_and_documented() -> None:
    files = {p.name for p in EXTRA.glob("*.txt")}
    assert files == {f[0] for f in EXTRA_FACTS}
    readme = (EXTRA / "README.md").read_text()
    for name in files:
        assert name in readme
        if name.startswith("s"):
            assert parse(EXTRA / name).path is not None
            assert (EXTRA / name).read_text().startswith("synthetic:")


def test_p2p_disabled_pair_and_mismatch() -> None:
    on = parse(CORPUS / "nccl-log/001-2x5060ti-vllm-tp2-p2p-cumem-2.28.9.txt")
    off = parse(EXTRA / "s02-synthetic-2x-titanrtx-p2p-disabled-shm-2.18.5-mpirun-ansi.txt")
    assert off.env["NCCL_P2P_DISABLE"] == "1"
    assert "NCCL_P2P_DISABLE" in off.p2p_evidence
    assert describe_transport(off) == SHM_LABEL
    # labels agree with transports: no warning
    assert p2p_mismatch(on, expected_p2p=True) is None
    assert p2p_mismatch(off, expected_p2p=False) is None
    # a "no-P2P" run that used P2P, a "P2P" run that fell back to SHM
    still_p2p = p2p_mismatch(on, expected_p2p=False)
    assert still_p2p is not None
    assert "P2P/CUMEM (4 channel lines)" in still_p2p
    fell_back = p2p_mismatch(off, expected_p2p=True)
    assert fell_back is not None
    assert "SHM/direct/direct" in fell_back
    assert "NCCL_P2P_DISABLE set by environment to 1" in fell_back


def test_glued_and_unprefixed_lines_are_read() -> None:
    log = parse(EXTRA / "002-8gpu-ring-p2p-ipc-glued-lines-issue147.txt")
    keys = {c.peer_key for c in log.channels}
    assert "7[7] -> 3[3]" in keys  # second prefix on one line
    assert "6[6] -> 5[5]" in keys  # a channel line with no prefix at all
    assert len(log.channels) == 17  # "Ring 04 : 3[3] -> 2[2] via P2P/IPC" lines (NCCL 2.4-2.6)
    assert all(c.conn_index is None and c.kind == "P2P" for c in log.channels)


def test_tolerant_of_ansi_cr_and_prefixes() -> None:
    log = parse(EXTRA / "s02-synthetic-2x-titanrtx-p2p-disabled-shm-2.18.5-mpirun-ansi.txt")
    assert log.env["NCCL_P2P_DISABLE"] == "1"  # ANSI and the final period removed
    assert log.hosts == ["rig"]
    crlf = parse(EXTRA / "s01-synthetic-2x-titanrtx-nv2-p2p-ipc-2.7.8-crlf-progress.txt")
    assert all("\r" not in c.transport for c in crlf.channels)
    assert crlf.nccl_versions == ["2.7.8+cuda11.0"]


def test_direction_and_conn_index() -> None:
    log = parse_nccl_log(
        "h:1:2 [0] NCCL INFO Channel 03/1 : 15[7] -> 6[6] [receive] via NET/Socket/3\n"
        "h:1:2 [0] NCCL INFO Channel 04 : 1[1] -> 0[0] via P2P/IPC\n"
    )
    first, second = log.channels
    assert (first.channel, first.channel_id, first.conn_index, first.direction) == ("03/1", 3, 1, "receive")
    assert (second.channel, second.conn_index, second.direction) == ("04", None, None)
    assert log.p2p_disabled is False


def test_p2p_level_loc_counts_as_disabled() -> None:
    log = parse_nccl_log("h:1:2 [0] NCCL INFO NCCL_P2P_LEVEL set by environment to LOC\n")
    assert log.p2p_disabled is True
    assert "LOC" in log.p2p_evidence


def test_env_zero_means_not_disabled_even_with_shm() -> None:
    text = (
        "h:1:2 [0] NCCL INFO NCCL_P2P_DISABLE set by environment to 0.\n"
        "h:1:2 [0] NCCL INFO Channel 00 : 0[0] -> 1[1] via SHM/direct/direct\n"
    )
    log = parse_nccl_log(text)
    assert log.p2p_disabled is False
    assert p2p_mismatch(log, expected_p2p=True) is not None


def test_shm_without_env_line_cannot_tell() -> None:
    log = parse_nccl_log("h:1:2 [0] NCCL INFO Channel 00 : 0[0] -> 1[1] via SHM/direct/direct\n")
    assert log.p2p_disabled is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty"),
        ("   \n\n", "empty"),
        ("abc\x00def NCCL INFO x", "NUL"),
        ("".join(chr(i) for i in range(1, 8)) * 40, "binary"),
        ("just a python traceback\nValueError: nope\n", "no NCCL line"),
    ],
)
def test_bad_input_raises_parse_error(text: str, message: str) -> None:
    with pytest.raises(ParseError, match=message) as info:
        parse_nccl_log(text, "x.log")
    assert info.value.path == "x.log"
    assert "\n" not in str(info.value)


def test_json_document_contract() -> None:
    doc = parse(CORPUS / "nccl-log/004-4node-32xa100-p2p-ipc-read-net-ib-2.10.3.txt").to_json_dict()
    assert doc["schema"] == "rigcheck.nccl-log/1"
    for key in ("transports", "p2p_disabled", "nccl_version", "nranks", "channels"):
        assert key in doc
    assert doc["nranks"] == 32
    channels = doc["channels"]
    assert isinstance(channels, list)
    assert len(channels) == 152
    assert json.loads(json.dumps(doc)) == doc


def test_every_null_has_its_reason_in_missing() -> None:
    log = parse_nccl_log("h:1:2 [0] NCCL INFO Channel 00 : 0[0] -> 1[1] via SHM/direct/direct\n")
    doc = log.to_json_dict()
    assert doc["missing"] == {
        "nccl_version": "no 'NCCL version' line in the log",
        "cuda": "no 'NCCL version' line in the log",
        "nranks": "no nRanks line in the log",
        "nnodes": "no nNodes line in the log",
        "p2p_disabled": "no NCCL_P2P_DISABLE line and no P2P channel: the log cannot tell",
    }
    bare_version = parse_nccl_log("NCCL version 2.10.3\nh:1:2 [0] NCCL INFO comm 0x1 rank 0 nRanks 2\n").to_json_dict()
    assert bare_version["nccl_version"] == "2.10.3"
    assert bare_version["nranks"] == 2
    missing = bare_version["missing"]
    assert isinstance(missing, dict)
    assert missing["cuda"] == "the NCCL version line has no +cuda suffix"
    assert "nccl_version" not in missing
    assert "nranks" not in missing
    vllm = parse(CORPUS / "nccl-log/001-2x5060ti-vllm-tp2-p2p-cumem-2.28.9.txt").to_json_dict()
    assert vllm["missing"] == {}  # everything printed, nothing null


# --- the renderings -------------------------------------------------------------------------------------------


def test_markdown_and_html_list_transports_connections_and_env() -> None:
    log = parse(EXTRA / "s02-synthetic-2x-titanrtx-p2p-disabled-shm-2.18.5-mpirun-ansi.txt")
    md = render(log, Format.MARKDOWN)
    assert isinstance(md, str)
    assert md.startswith("# rigcheck nccl-log\n")
    assert "- NCCL 2.18.5 (CUDA 12.2); ranks: 2; hosts: 1" in md
    assert "| SHM/direct/direct | 4 |" in md
    assert "| 0[0] -> 1[1] | SHM/direct/direct ch 00,01 |" in md
    assert "| `NCCL_P2P_DISABLE` | `1` |" in md
    page = render(log, Format.HTML)
    assert isinstance(page, str)
    assert '<td class="mono">0[0] -&gt; 1[1]</td>' in page
    assert "P2P disabled: yes (NCCL_P2P_DISABLE set by environment to 1)" in page


def test_renderings_escape_what_the_log_says() -> None:
    log = parse_nccl_log("h:1:2 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to <b>|eth0\n")
    assert log.env == {"NCCL_SOCKET_IFNAME": "<b>|eth0"}
    assert "`<b>\\|eth0`" in markdown(log)  # a pipe would split the Markdown table cell
    page = render(log, Format.HTML)
    assert isinstance(page, str)
    assert "&lt;b&gt;|eth0" in page
    assert "<b>" not in page
    assert "No channel connection lines in the log." in page


# --- the command ------------------------------------------------------------------------------------------------


def test_cli_json(rigcheck: Rigcheck) -> None:
    path = CORPUS / "nccl-log/001-2x5060ti-vllm-tp2-p2p-cumem-2.28.9.txt"
    result = rigcheck("nccl-log", path, "--json")
    assert result.code == 0, result.stderr
    doc = result.json
    assert doc["transports"] == ["P2P/CUMEM"]
    assert doc["p2p_disabled"] is False
    assert doc["nccl_version"] == "2.28.9"
    assert doc["nranks"] == 2
    assert len(doc["channels"]) == 4


def test_cli_terminal_summary(rigcheck: Rigcheck) -> None:
    path = EXTRA / "s02-synthetic-2x-titanrtx-p2p-disabled-shm-2.18.5-mpirun-ansi.txt"
    result = rigcheck("nccl-log", path)
    assert result.code == 0, result.stderr
    out = result.stdout
    assert "NCCL 2.18.5 (CUDA 12.2); ranks: 2" in out
    assert SHM_LABEL in out
    assert "P2P disabled: yes" in out
    assert "0[0] -> 1[1]: SHM/direct/direct ch 00,01" in out


def test_cli_bad_input(tmp_path: Path, rigcheck: Rigcheck) -> None:
    bad = tmp_path / "notes.txt"
    bad.write_text("no nccl here\n")
    with pytest.raises(ParseError):  # not a log: a parse error, where a missing file is an input error
        read_nccl_log(str(bad))
    code, out, err = rigcheck("nccl-log", bad)
    assert (code, out) == (2, "")
    assert err.startswith(f"rigcheck: error: {bad}: no NCCL line found")
    assert len(err.splitlines()) == 1
    with pytest.raises(InputError):
        read_nccl_log(str(tmp_path / "absent.log"))
    code, out, err = rigcheck("nccl-log", tmp_path / "absent.log")
    assert (code, out) == (2, "")
    assert err == f"rigcheck: error: {tmp_path / 'absent.log'}: no such file\n"


# --- what says the run failed ----------------------------------------------------------------------------------

EXTRA_LOGS = Path(__file__).parent.parent / "fixtures" / "nccl-extra"


def test_nccl_warnings_are_kept_and_an_ib_completion_error_is_a_failure() -> None:
    doc = parse_nccl_log((EXTRA_LOGS / "006-ib-plugin-warn-completion-status12-issue1405.txt").read_text())
    assert doc.warning_lines == 3
    assert doc.warnings is not None
    assert doc.warnings[0].startswith("NET/IB : Got completion from peer 10.216.210.236<54862> with status=12")
    assert doc.failure_lines == 3
    assert doc.failures is not None
    assert all("status=12" in line for line in doc.failures)


@pytest.mark.parametrize(
    ("name", "lines", "first"),
    [
        ("007-p2p-cumem-abort-complete-watchdog-issue1504.txt", 2, "busId 1000 - Abort COMPLETE"),
        ("008-torch-watchdog-timeout-only-llamafactory7396.txt", 2, "Watchdog caught collective operation timeout"),
    ],
)
def test_an_abort_or_a_watchdog_timeout_is_a_failed_run_exit_1(
    name: str, lines: int, first: str, rigcheck: Rigcheck
) -> None:
    """Before, the abort and the timeout were not in the document (and a log of only watchdog lines was refused)."""
    result = rigcheck("nccl-log", str(EXTRA_LOGS / name), "--json")
    assert result.code == 1
    doc = json.loads(result.stdout)
    assert doc["failure_lines"] == lines
    assert first in doc["failures"][0]
    assert "warnings" not in doc  # absent, not empty, where NCCL warned of nothing


def test_a_clean_log_has_no_failure_keys_and_exits_0(rigcheck: Rigcheck) -> None:
    clean = EXTRA_LOGS / "004-multinode-net-socket-p2p-ipc-read-issue952.txt"
    result = rigcheck("nccl-log", str(clean), "--json")
    assert result.code == 0
    doc = json.loads(result.stdout)
    assert not {"failures", "failure_lines"} & set(doc)

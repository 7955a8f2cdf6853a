"""`doctor --config`: a site file sets Xid severities and count-in-window limits (model/site_config.py, xid)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from rigcheck.checks.doctor import run_checks
from rigcheck.checks.doctor.xid import check_xid
from rigcheck.errors import InputError
from rigcheck.model import Severity
from rigcheck.model.site_config import parse_site_config
from rigcheck.readers.from_file import load_files
from tests.support.cli import Rigcheck

LOGS = Path(__file__).parent.parent / "fixtures" / "corpus" / "kernel-log"


needs_toml = pytest.mark.skipif(sys.version_info < (3, 11), reason="tomllib is Python 3.11+")


def _log(prefix: str) -> str:
    return str(next(LOGS.glob(prefix + "*")))


def _doctor(
    tmp_path: Path, rigcheck: Rigcheck, prefix: str, text: str, name: str = "site.toml"
) -> tuple[int, list[dict[str, str]]]:
    site = tmp_path / name
    site.write_text(text)
    code, out, err = rigcheck("doctor", "--from", _log(prefix), "--config", str(site), "--json")
    assert code in (0, 1), err
    return code, [f for f in json.loads(out)["findings"] if f["category"] == "xid"]


def _xid(prefix: str, text: str) -> dict[str, Severity]:
    config = parse_site_config(text.encode(), "site.toml")
    return {f.id: f.severity for f in check_xid(load_files([_log(prefix)]), config.xid, config.origin)}


@needs_toml
def test_raising_xid_13_to_fail_makes_203_exit_1(tmp_path: Path, rigcheck: Rigcheck) -> None:
    assert rigcheck("doctor", "--from", _log("203"), "--json")[0] == 0
    code, xids = _doctor(tmp_path, rigcheck, "203", '[xid.severity]\n13 = "fail"\n')
    assert code == 1
    (raised,) = [f for f in xids if f["severity"] == "fail"]
    assert raised["id"] == "xid.hardware"
    assert "4 x Xid 13" in raised["message"]
    assert "site.toml: Xid 13 info -> fail" in raised["source"]
    assert any(f["id"] == "xid.application" and "Xid 31" in f["message"] for f in xids)  # the others unchanged


def test_lowering_79_to_warn_makes_204_exit_0_with_a_warning(tmp_path: Path, rigcheck: Rigcheck) -> None:
    assert rigcheck("doctor", "--from", _log("204"), "--json")[0] == 1
    code, xids = _doctor(tmp_path, rigcheck, "204", json.dumps({"xid": {"severity": {"79": "warn"}}}), "site.json")
    assert code == 0
    (lowered,) = [f for f in xids if f["id"] == "xid.warning"]
    assert lowered["severity"] == "warn"
    assert "Xid 79 fail -> warn" in lowered["source"]
    assert not any(f["severity"] == "fail" for f in xids)


@needs_toml
def test_ok_is_accepted() -> None:
    assert _xid("206", '[xid.severity]\n13 = "ok"\n')["xid.accepted"] is Severity.OK


@needs_toml
@pytest.mark.parametrize(
    ("prefix", "limit", "over"),
    [
        ("203", "{ count = 3, window = '1m' }", True),  # 4 x Xid 13 within 0.01 s (seconds since boot)
        ("203", "{ count = 4, window = '1m' }", False),
        ("206", "{ count = 2, window = '10s' }", True),  # 3 x Xid 13 in the same second (dmesg -T)
        ("206", "{ count = 3, window = '1h' }", False),
    ],
)
def test_limit_on_13_counted_in_a_window(prefix: str, limit: str, over: bool) -> None:
    config = parse_site_config(f"[xid.limits]\n13 = {limit}\n".encode(), "site.toml")
    findings = check_xid(load_files([_log(prefix)]), config.xid, config.origin)
    limited = [f for f in findings if f.id == "xid.application-limit"]
    assert bool(limited) is over
    holder = limited[0] if over else next(f for f in findings if f.id == "xid.application" and "Xid 13" in f.message)
    assert "Xid 13: at most" in (holder.measured or "")
    assert "site limit" in (holder.measured or "")
    if over:
        assert holder.severity is Severity.FAIL
        assert "site file site.toml: xid.limits" in (holder.source or "")


def test_untimed_events_are_counted_together() -> None:
    lines = "".join(f"NVRM: Xid (PCI:0000:01:00): 31, fault {i}\n" for i in range(3))
    from rigcheck.model import Snapshot
    from rigcheck.probe.kernel_log import parse_kernel_events

    config = parse_site_config(b'{"xid": {"limits": {"31": {"count": 2, "window": "1h"}}}}', "s.json")
    (finding,) = check_xid(Snapshot(kernel_events=parse_kernel_events(lines)), config.xid, config.origin)
    assert finding.id == "xid.application-limit"
    assert "3 without a usable time, counted all together" in (finding.measured or "")


def test_no_config_is_the_default_verdicts() -> None:
    snap = load_files([_log("203")])
    assert run_checks(snap) == run_checks(snap, config=None)
    assert check_xid(snap) == check_xid(snap, None)


@pytest.mark.parametrize(
    ("name", "text", "says"),
    [
        ("s.toml", '[xid.sevrity]\n13 = "warn"\n', "unknown key 'xid.sevrity'"),
        ("s.toml", '[xid.severity]\n13 = "fatal"\n', "xid.severity.13"),
        ("s.toml", "[xid.limits]\n31 = { count = 5, window = '1 fortnight' }\n", "xid.limits.31.window"),
        ("s.toml", "[xid.limits]\n31 = { count = 5, window = '1h', every = 2 }\n", "unknown key 'xid.limits.31.every'"),
        ("s.toml", "[xid.limits]\n79 = { count = 5, window = '1h' }\n", "Xid 79 is caused by the hardware"),
        ("s.toml", "[xid.severity]\nthirteen = 'warn'\n", "'thirteen' is not an Xid code"),
        ("s.toml", "this is not toml = = =\n", "not valid TOML or JSON"),
        ("s.json", '{"xid": {"severity": ', "not valid JSON"),
        ("s.json", "[1, 2]", "not a site file"),
    ],
)
def test_bad_site_file_is_one_line_exit_2(tmp_path: Path, rigcheck: Rigcheck, name: str, text: str, says: str) -> None:
    if name.endswith(".toml") and sys.version_info < (3, 11):
        says = "needs Python 3.11"
    site = tmp_path / name
    site.write_text(text)
    code, out, err = rigcheck("doctor", "--from", _log("203"), "--config", str(site))
    lines = err.strip().splitlines()
    assert code == 2
    assert not out
    assert len(lines) == 1, err
    assert str(site) in lines[0]
    assert says in lines[0]
    with pytest.raises(InputError, match=says.replace("(", r"\(")):
        parse_site_config(text.encode(), name)


def test_missing_site_file_is_exit_2(tmp_path: Path, rigcheck: Rigcheck) -> None:
    code, _, err = rigcheck("doctor", "--from", _log("203"), "--config", str(tmp_path / "none.toml"))
    assert code == 2
    assert len(err.strip().splitlines()) == 1
    assert "cannot read the site file" in err

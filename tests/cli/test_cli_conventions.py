"""Command-line conventions: usage errors in one line with exit 2, reports on any stdout encoding (ASCII
stand-ins, --ascii, RIGCHECK_ASCII), JSON exact whatever the encoding, and shell completion."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rigcheck.cli.app import app
from rigcheck.cli.ascii_out import json_for, stand_in
from tests.support.cli import Rigcheck

CORPUS = Path(__file__).resolve().parent.parent / "fixtures" / "corpus"
SMI = CORPUS / "smi" / "002-2x2080ti-550.txt"  # its report has ×, → and —
TOPO = CORPUS / "topo" / "002-8x4090-phb-node-sys-2numa.txt"


def run(args: list[str], **env: str) -> subprocess.CompletedProcess[bytes]:
    """rigcheck in its own process, stdout and stderr pipes (not terminals), bytes kept as written."""
    environ = {k: v for k, v in os.environ.items() if k not in ("PYTHONIOENCODING", "RIGCHECK_ASCII", "COLUMNS")}
    environ.update(env)
    return subprocess.run(
        [sys.executable, "-m", "rigcheck", *args], capture_output=True, env=environ, timeout=120, check=False
    )


# --- usage errors ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["doctor", "--bogus"], "No such option: --bogus"),
        (["bench", "allreduce", "-n", "0"], "'--world-size' / '-n'"),
        (["nosuchcommand"], "No such command 'nosuchcommand'"),
    ],
)
def test_usage_error_is_one_line_and_exit_2(args: list[str], says: str) -> None:
    proc = run(args)
    err = proc.stderr.decode()
    assert proc.returncode == 2, err
    assert len(err.splitlines()) == 1, err
    assert err.startswith("rigcheck: error: ")
    assert says in err
    command = " ".join(a for a in args[:2] if a in ("doctor", "bench", "allreduce"))
    assert err.rstrip().endswith(f"(see rigcheck{' ' + command if command else ''} --help)")
    assert proc.stdout == b""


@pytest.mark.parametrize(
    ("args", "hint", "says"),
    [
        (["doctor", "--from"], "rigcheck doctor", "Option '--from' requires an argument"),
        (["--ascii", "power", "plan", "--gpu"], "rigcheck power plan", "'--gpu' requires an argument"),
        (["nccl-log"], "rigcheck nccl-log", "Missing argument"),
        (["power", "plan", "--gpu", "TITAN RTX", "--count", "two"], "rigcheck power plan", "'--count'"),
        (["doctr"], "rigcheck", "Did you mean 'doctor'?"),
    ],
)
def test_every_kind_of_usage_error_names_its_command(args: list[str], hint: str, says: str, rigcheck: Rigcheck) -> None:
    """Missing value, missing argument, bad value, unknown command: one line naming the command's --help (the
    parser's "requires an argument" carries no context: the command is read from the words)."""
    result = rigcheck(*args)
    assert result.code == 2
    err = result.stderr
    assert err.count("\n") == 1, err
    assert says in err
    assert err.rstrip().endswith(f"(see {hint} --help)")


def test_on_a_terminal_the_usage_line_comes_first(monkeypatch: pytest.MonkeyPatch, rigcheck: Rigcheck) -> None:
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    result = rigcheck("doctor", "--bogus")
    assert result.code == 2
    lines = result.stderr.splitlines()
    assert 1 < len(lines) <= 3
    assert lines[0].startswith("Usage: rigcheck doctor [OPTIONS]")
    assert lines[-1].startswith("rigcheck: error: No such option: --bogus")


def test_no_arguments_still_prints_the_help(rigcheck: Rigcheck) -> None:
    result = rigcheck()
    assert result.code == 2
    assert "Usage: rigcheck" in result.stdout
    assert result.stderr == ""


# --- encodings -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def utf8_report() -> subprocess.CompletedProcess[bytes]:
    """The doctor report on a UTF-8 stdout, which the narrow ones are compared with."""
    return run(["doctor", "--from", str(SMI)], PYTHONIOENCODING="utf-8")


def narrowed(text: str, encoding: str) -> str:
    """``text`` as the fallback writes it in ``encoding``: each character the encoding lacks as its stand-in."""
    return "".join(c if c.encode(encoding, errors="ignore") else stand_in(c) for c in text)


@pytest.mark.parametrize("encoding", ["latin-1", "cp1252", "ascii"])
def test_doctor_report_prints_on_a_narrow_stdout(
    encoding: str, utf8_report: subprocess.CompletedProcess[bytes]
) -> None:
    """The report is the UTF-8 one, with a stand-in exactly where the encoding lacks a character (× stays in
    latin-1 and cp1252, → becomes ->, and in ASCII × becomes x)."""
    utf8 = utf8_report
    proc = run(["doctor", "--from", str(SMI)], PYTHONIOENCODING=encoding)
    assert proc.returncode == utf8.returncode, proc.stderr.decode(errors="replace")
    assert proc.returncode in (0, 1)
    assert "→" in utf8.stdout.decode("utf-8")
    assert proc.stdout.decode(encoding) == narrowed(utf8.stdout.decode("utf-8"), encoding)
    assert "-> " in proc.stdout.decode(encoding)


@pytest.mark.parametrize(("args", "env"), [(["--ascii"], {}), ([], {"RIGCHECK_ASCII": "1"})], ids=["option", "env"])
def test_ascii_forced_on_a_utf8_stdout(
    args: list[str], env: dict[str, str], utf8_report: subprocess.CompletedProcess[bytes]
) -> None:
    utf8 = utf8_report
    proc = run([*args, "doctor", "--from", str(SMI)], PYTHONIOENCODING="utf-8", **env)
    assert proc.returncode == utf8.returncode, proc.stderr.decode()
    assert proc.stdout.isascii()
    out = proc.stdout.decode("ascii")
    assert out == narrowed(utf8.stdout.decode("utf-8"), "ascii")
    assert "GPUs: 2 x NVIDIA" in out


def test_json_stays_exact_on_latin1_and_with_ascii(rigcheck: Rigcheck) -> None:
    result = rigcheck("doctor", "--from", str(SMI), "--json")
    utf8 = result.stdout
    assert not utf8.isascii()  # the document does hold characters to escape
    latin1 = run(["doctor", "--from", str(SMI), "--json"], PYTHONIOENCODING="latin-1")
    forced = run(["--ascii", "doctor", "--from", str(SMI), "--json"], PYTHONIOENCODING="utf-8")
    assert json.loads(latin1.stdout.decode("latin-1")) == json.loads(utf8)
    assert forced.stdout.isascii()
    assert json.loads(forced.stdout.decode("ascii")) == json.loads(utf8)
    assert latin1.returncode == forced.returncode == result.code


def test_other_reports_and_help_print_on_latin1(tmp_path: Path) -> None:
    """Several commands in one latin-1 process (each through main, as the console script runs it)."""
    commands = [
        ["topo", "--from", str(TOPO)],
        ["power", "plan", "--gpu", "TITAN RTX", "--count", "2"],
        ["verify", "--explain", "--gpu", "H100 SXM5"],
        ["plan", "--params", "124M", "--gpus", "2", "--strategy", "zero3"],
        ["bench", "allreduce", "--help"],
        ["--help"],
    ]
    script = (
        "import json, sys\n"
        "from rigcheck.cli.app import main\n"
        "codes = []\n"
        "for args in json.loads(sys.argv[1]):\n"
        "    try:\n"
        "        main(args)\n"
        "    except SystemExit as exc:\n"
        "        codes.append(exc.code)\n"
        "    sys.stdout.flush()\n"
        "sys.stderr.write(json.dumps(codes))\n"
    )
    environ = {k: v for k, v in os.environ.items() if k != "RIGCHECK_ASCII"}
    environ["PYTHONIOENCODING"] = "latin-1"
    proc = subprocess.run(
        [sys.executable, "-c", script, json.dumps(commands)], capture_output=True, env=environ, timeout=120, check=False
    )
    err = proc.stderr.decode("latin-1")
    assert proc.returncode == 0, err
    assert json.loads(err.splitlines()[-1]) == [0, 0, 0, 0, 0, 0], err
    out = proc.stdout.decode("latin-1")
    for expected in ("GPU0", "TITAN RTX", "H100 SXM5", "zero3", "--max-bytes", "Commands"):
        assert expected in out


@pytest.mark.parametrize(
    ("char", "ascii_text"),
    [
        ("—", "-"),
        ("×", "x"),
        ("≤", "<="),
        ("≥", ">="),
        ("✓", "ok"),
        ("→", "->"),
        ("°", ""),
        ("─", "-"),
        ("│", "|"),
        ("╭", "+"),
        ("┼", "+"),
        ("é", "e"),
        ("█", "#"),
        ("漢", "?"),
        ("a", "a"),
    ],
)
def test_stand_ins(char: str, ascii_text: str) -> None:
    assert stand_in(char) == ascii_text


def test_no_stand_in_breaks_a_json_string() -> None:
    for code in range(0x80, 0x3000):
        assert '"' not in stand_in(chr(code))
        assert "\\" not in stand_in(chr(code))
        assert stand_in(chr(code)).isascii()


def test_json_for_escapes_only_where_the_encoding_lacks_a_character() -> None:
    text = json.dumps({"a": "2 × 80 °C — ok 🙂"}, ensure_ascii=False)
    assert json_for(text, "utf-8") == text
    escaped = json_for(text, "latin-1")
    assert escaped.isascii()
    assert json.loads(escaped) == json.loads(text)


# --- shell completion ------------------------------------------------------------------------------


def test_help_offers_completion() -> None:
    out = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "200"}).output
    assert "--install-completion" in out
    assert "--show-completion" in out
    assert "--ascii" in out


def test_show_completion_prints_a_bash_script(monkeypatch: pytest.MonkeyPatch) -> None:
    # Without detection the option takes the shell's name (detection walks the process tree, which a test
    # does not control).
    monkeypatch.setenv("_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION", "1")
    result = CliRunner().invoke(app, ["--show-completion", "bash"], prog_name="rigcheck")
    assert result.exit_code == 0, result.output
    assert "_RIGCHECK_COMPLETE=complete_bash" in result.output
    assert "complete -o default -F _rigcheck_completion rigcheck" in result.output


def test_install_completion_writes_the_script_under_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION", "1")
    monkeypatch.setenv("HOME", str(tmp_path))
    result = CliRunner().invoke(app, ["--install-completion", "bash"], prog_name="rigcheck")
    assert result.exit_code == 0, result.output
    assert "_RIGCHECK_COMPLETE" in (tmp_path / ".bash_completions" / "rigcheck.sh").read_text()
    assert "rigcheck.sh" in (tmp_path / ".bashrc").read_text()


@pytest.mark.parametrize(
    ("words", "expected"),
    [("rigcheck do", "doctor"), ("rigcheck bench all", "allreduce"), ("rigcheck doctor --js", "--json")],
)
def test_completion_reaches_the_lazily_loaded_commands(words: str, expected: str) -> None:
    env = {"_RIGCHECK_COMPLETE": "complete_bash", "COMP_WORDS": words, "COMP_CWORD": str(len(words.split()) - 1)}
    result = CliRunner().invoke(app, [], prog_name="rigcheck", env=env)
    assert result.exit_code == 0, result.output
    assert expected in result.output.split()

"""`nccl-log FILE` read in one pass (rigcheck.readers.nccl_log.read_nccl_log): the same document as the whole-text
parser
on every log we hold and at any block boundary, the streaming limits, and memory that does not follow the file."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest

from rigcheck.errors import InputError, ParseError
from rigcheck.readers.nccl_log import parse_nccl_log, read_nccl_log

FIXTURES = Path(__file__).parent.parent / "fixtures"
LOGS = sorted(
    [
        *(FIXTURES / "corpus" / "nccl-log").glob("*.txt"),
        *(FIXTURES / "nccl-extra").glob("*.txt"),
        FIXTURES / "corpus" / "h100-vm" / "nccl-info-1rank-gpt2-ddp.txt",
    ]
)
LINE = "host:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM\n"


def whole(path: Path) -> dict[str, object]:
    return parse_nccl_log(path.read_bytes().decode("utf-8-sig"), str(path)).to_json_dict()


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.name)
@pytest.mark.parametrize("chunk", [1 << 20, 61])
def test_stream_equals_whole_text_parse(path: Path, chunk: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # 61 bytes a block: lines (and CRLF pairs, escape sequences) are cut across blocks in every way.
    monkeypatch.setattr("rigcheck.inputs.CHUNK_BYTES", chunk)
    assert read_nccl_log(str(path)).to_json_dict() == whole(path)


@pytest.mark.parametrize(
    "raw",
    [
        b"\xef\xbb\xbf\xef\xbb\xbf" + LINE.encode() + b"NCCL version 2.18.5+cuda12.2",  # BOMs, no final newline
        LINE.replace("\n", "\r\n").encode() * 3 + b"progress 10%\rprogress 20%\r" + LINE.encode(),
        b"\x1b[1;32m" + LINE.encode() + b"\x1b[0m\x1b[2K" + LINE.replace("\n", "\r").encode() * 2,
        "\ufeffh:1:2 [0] NCCL INFO NCCL version 2.7.8+cuda11.0\n".encode("utf-16"),
    ],
    ids=["bom-no-final-newline", "crlf-and-cr", "ansi", "utf-16"],
)
def test_stream_line_ends_and_encodings(raw: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("rigcheck.inputs.CHUNK_BYTES", 7)
    path = tmp_path / "x.log"
    path.write_bytes(raw)
    text = raw.decode("utf-16") if raw.startswith(b"\xff\xfe") else raw.decode("utf-8-sig")
    assert read_nccl_log(str(path)).to_json_dict() == parse_nccl_log(text, str(path)).to_json_dict()


@pytest.mark.parametrize(
    ("raw", "error", "message"),
    [
        (b"  \n\n", InputError, "empty file"),
        (b"\xef\xbb\xbf\n", ParseError, "empty file"),
        ("\u00a0\n".encode(), ParseError, "empty file"),
        (LINE.encode() + b"abc\x00def\n", InputError, "NUL"),
        (LINE.encode() * 2 + b"\xff\xfe\n", InputError, ":3: binary data, not UTF-8"),
        (bytes(range(1, 8)) * 40, ParseError, "control characters"),
        (b"just a traceback\nValueError: nope\n", ParseError, "no NCCL line"),
    ],
)
def test_stream_errors_are_the_whole_file_errors(
    raw: bytes, error: type[Exception], message: str, tmp_path: Path
) -> None:
    path = tmp_path / "x.log"
    path.write_bytes(raw)
    with pytest.raises(error, match=message) as info:
        read_nccl_log(str(path))
    assert "\n" not in str(info.value)


def test_stream_limits_end_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    long_line = tmp_path / "long.log"
    long_line.write_bytes(LINE.encode() + b"x" * 3000)
    monkeypatch.setattr("rigcheck.inputs.STREAM_MAX_LINE", 1024)
    with pytest.raises(InputError, match="longer than 1 KiB") as info:
        read_nccl_log(str(long_line))
    assert info.value.line == 2
    endless = tmp_path / "endless.log"
    endless.write_bytes(LINE.encode() * 100)
    monkeypatch.setattr("rigcheck.inputs.STREAM_MAX_BYTES", 2000)  # the file is 6,600 bytes
    with pytest.raises(InputError, match="too large"):
        read_nccl_log(str(endless))
    with pytest.raises(InputError, match="no such file"):
        read_nccl_log(str(tmp_path / "absent.log"))


def _peak(path: Path, mib: int) -> int:
    """Peak traced memory of reading a log of ``mib`` MiB, mostly program output, two NCCL lines."""
    filler = "step 123 loss 2.345 lr 0.0001 tokens/s 123456 some output a training script prints\n" * 2000
    with path.open("w", encoding="utf-8") as fh:
        fh.write("h:1:2 [0] NCCL INFO NCCL version 2.18.5+cuda12.2\n" + LINE)
        while fh.tell() < mib * 2**20:
            fh.write(filler)
    tracemalloc.start()
    try:
        doc = read_nccl_log(str(path))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (doc.nccl_line_count, doc.channel_line_count) == (2, 1)
    return peak


def test_stream_memory_does_not_follow_the_file(tmp_path: Path) -> None:
    """The reader holds a block at a time and the document, not the file (the whole-text parser held the text
    about four times over): four times the file, the same peak."""
    small, large = _peak(tmp_path / "small.log", 4), _peak(tmp_path / "large.log", 16)
    assert large < 8 * 2**20  # the file is 16 MiB
    assert large < 1.3 * small


def test_a_number_of_thousands_of_digits_is_bad_input_not_an_internal_error(tmp_path: Path) -> None:
    # A line under the 1 MiB limit whose channel number has 5,000 digits: int() refuses it (CPython's 4,300-digit
    # guard) and the reader let the ValueError out (exit 3). Synthetic: a real channel line with the number grown.
    log = tmp_path / "nccl.log"
    log.write_text(f"host:919:1150 [0] NCCL INFO Channel {'9' * 5000}/0 : 8[0] -> 15[7] via P2P/IPC/read\n")
    with pytest.raises(InputError, match="thousands of digits"):
        read_nccl_log(str(log))

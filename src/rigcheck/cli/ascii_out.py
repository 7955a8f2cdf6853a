"""Output on a stream that cannot hold every character: ASCII stand-ins instead of a crash.

Reports use a few characters beyond ASCII (—, ×, ≤, °, arrows, box drawing). On a stdout whose encoding
lacks them — a latin-1 or cp1252 redirect, PYTHONIOENCODING=ascii — Python raises UnicodeEncodeError, which
would end every report with exit 3. :func:`install` gives stdout and stderr an encoding error handler that
writes an ASCII stand-in for each character the encoding lacks (the rest stay as they are), and with
``force`` (``rigcheck --ascii``, ``RIGCHECK_ASCII=1``) makes both streams ASCII. JSON is escaped instead
(:func:`json_for`), so it stays exact and valid. Loaded only where it is needed (cli/app.py main decides).
"""

from __future__ import annotations

import codecs
import io
import json
import re
import sys
import unicodedata

from rigcheck.cli.streams import is_utf

HANDLER = "rigcheck-ascii"

# Stand-ins for the characters rigcheck's reports use. None contains '"' or '\', so a JSON text written
# through the handler (by a command that does not use json_for) still parses.
STAND_INS: dict[str, str] = {
    "—": "-",
    "–": "-",
    "−": "-",
    "‐": "-",
    "×": "x",
    "≤": "<=",
    "≥": ">=",
    "≈": "~",
    "±": "+/-",
    "≠": "!=",
    "✓": "ok",
    "✔": "ok",
    "✗": "X",
    "✘": "X",
    "→": "->",
    "←": "<-",
    "↔": "<->",
    "⇄": "<->",
    "↑": "^",
    "↓": "v",
    "°": "",
    "µ": "u",
    "…": "...",
    "•": "*",
    "·": ".",
    "“": "'",
    "”": "'",
    "„": "'",
    "‘": "'",
    "’": "'",
    "«": "<<",
    "»": ">>",
    "\u00a0": " ",
    "\u202f": " ",
    "\u2009": " ",
}


def stand_in(char: str) -> str:
    """The ASCII text written for one character a stream's encoding lacks (never empty for a visible
    character except the degree sign, so '80 °C' reads '80 C')."""
    if char in STAND_INS:
        return STAND_INS[char]
    if char.isascii():
        return char
    code = ord(char)
    if 0x2500 <= code <= 0x257F:  # box drawing: lines and corners
        name = unicodedata.name(char, "")
        if "HORIZONTAL" in name and "VERTICAL" not in name:
            return "-"
        if "VERTICAL" in name and "HORIZONTAL" not in name and "AND" not in name:
            return "|"
        return "+"
    if 0x2580 <= code <= 0x259F:  # block elements (bars, sparklines)
        return "#"
    decomposed = unicodedata.normalize("NFKD", char).encode("ascii", "ignore").decode("ascii")
    return decomposed.replace('"', "'").replace("\\", "/") if decomposed else "?"


def _handle(error: UnicodeError) -> tuple[str, int]:
    if not isinstance(error, UnicodeEncodeError):
        raise error
    return "".join(stand_in(c) for c in error.object[error.start : error.end]), error.end


def _register() -> None:
    try:
        codecs.lookup_error(HANDLER)
    except LookupError:
        codecs.register_error(HANDLER, _handle)


def install(*, force: bool = False) -> None:
    """Give stdout and stderr the stand-in handler where they need it: with ``force`` both become ASCII;
    otherwise only a stream whose encoding is not UTF-8/16/32 changes (its encoding is kept)."""
    _register()
    for stream in (sys.stdout, sys.stderr):
        if not isinstance(stream, io.TextIOWrapper):  # a test's capture, or a replaced stream: leave it
            continue
        if force:
            stream.reconfigure(encoding="ascii", errors=HANDLER)
        elif not is_utf(stream.encoding):
            stream.reconfigure(errors=HANDLER)


_NON_ASCII = re.compile(r"[^\x00-\x7f]")


def json_for(text: str, encoding: str | None) -> str:
    """``text`` (JSON) as it can be written in ``encoding``: unchanged where the encoding holds it, else with
    every non-ASCII character as a JSON escape (they occur only inside strings, so the value is the same)."""
    try:
        text.encode(encoding or "utf-8")
    except (UnicodeEncodeError, LookupError):
        return _NON_ASCII.sub(lambda m: json.dumps(m.group())[1:-1], text)
    return text

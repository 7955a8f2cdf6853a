"""Text as a terminal may be given it: no control characters from the data.

Strings rigcheck prints come from inputs it does not control: a GPU name or hostname in a saved snapshot, a
kernel log line, another rank's report. A terminal obeys the control characters in them: ``ESC ] 0 ; … BEL``
retitles the window, ``ESC [ 2 J`` clears it, OSC 52 writes the clipboard, a bare CR overwrites a line. So every
report reaches the terminal through here (cli/common.py ``emit``, ``note``, ``write_stdout``): escape sequences are
removed whole (CSI, OSC, DCS/SOS/PM/APC, both as ESC pairs and as C1 bytes), then every remaining C0 control but
newline and tab, DEL and every C1 control. rigcheck's own colours are not touched: rich adds them after this, as
styles on the cleaned segments.

JSON keeps the characters, escaped (``json_escapes``): JSON already escapes C0; DEL and C1 become ``\\u007f`` ...
``\\u009f`` on stdout, the same document, inert in a terminal.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderableType
    from rich.segment import Segment

# A string (OSC, DCS, SOS, PM, APC) runs to its terminator (BEL, ESC \ or ST); one left open ends at the line's end
# here, so that an unterminated one cannot swallow the rest of a report.
_STRING_BODY = r"[^\x07\x1b\x9c\n]*(?:\x07|\x1b\\|\x9c)?"
_SEQUENCE = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]?"  # CSI: ESC [ parameters intermediates final
    r"|\x9b[0-?]*[ -/]*[@-~]?"  # CSI as one C1 byte
    r"|\x1b[\]PX^_]"
    + _STRING_BODY  # OSC, DCS, SOS, PM, APC
    + r"|[\x90\x98\x9d\x9e\x9f]"
    + _STRING_BODY  # the same as C1 bytes
    + r"|\x1b[ -/]*[0-~]?"  # ESC ( B, ESC c, ESC 7 ...; a lone ESC
)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # C0 but newline and tab, DEL, C1
_C1_AND_DEL = re.compile(r"[\x7f-\x9f]")


def terminal_text(text: str) -> str:
    """``text`` without escape sequences and control characters (newline and tab kept)."""
    if _CONTROL.search(text) is None:  # the common case: nothing to do, no copy
        return text
    return _CONTROL.sub("", _SEQUENCE.sub("", text))


def json_escapes(text: str) -> str:
    """JSON text with DEL and the C1 controls written as ``\\u`` escapes (they can occur only inside strings, and
    json.dumps with ensure_ascii=False leaves them raw): the same document, nothing a terminal acts on."""
    return _C1_AND_DEL.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


class TerminalSafe:
    """A rich renderable drawn as ``inner`` is, each segment's text through :func:`terminal_text`; rich's own
    control segments (a live view's cursor moves) pass as they are."""

    def __init__(self, inner: RenderableType) -> None:
        self.inner = inner

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterable[Segment]:
        from rich.segment import Segment

        for segment in console.render(self.inner, options):
            if segment.control is None and _CONTROL.search(segment.text) is not None:
                yield Segment(terminal_text(segment.text), segment.style)
            else:
                yield segment

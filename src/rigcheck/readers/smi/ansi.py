"""ANSI escape sequences a terminal copy may carry: the one text clean-up every input goes through first."""

from __future__ import annotations

import re

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-Z\\-_]")


def strip_ansi(text: str) -> str:
    """Remove ANSI escape sequences (colour, underline) a terminal copy may carry."""
    return _ANSI.sub("", text)

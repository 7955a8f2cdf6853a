"""A site file (`rigcheck doctor --config FILE`): a site's own verdicts for Xid codes, as data for the checks.

TOML where Python has ``tomllib`` (3.11 and later), JSON everywhere (rigcheck runs on 3.10 too): a ``.json``
file, or one whose text starts with ``{``, is JSON; anything else is TOML. The keys (nothing else is accepted)::

    [xid.severity]          # Xid code -> ok|info|warn|fail, whatever the catalog and the line say
    13 = "warn"
    [xid.limits]            # application Xid codes: fail when more than `count` fall within `window`
    31 = { count = 5, window = "1h" }

A bad file is one :class:`~rigcheck.errors.InputError` line naming the file and the key. Parsing is pure: the
CLI reads the bytes and hands them here with the file's name.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator

from rigcheck.errors import InputError
from rigcheck.facts.xid import lookup

SiteSeverity = Literal["ok", "info", "warn", "fail"]

_WINDOW = re.compile(r"^\s*(\d+)\s*(s|m|h|d)\s*$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def window_seconds(text: str) -> int:
    """ "90s", "30m", "1h", "2d" -> seconds; ValueError for anything else (or zero)."""
    m = _WINDOW.match(text)
    if m is None or int(m.group(1)) == 0:
        raise ValueError(f"window {text!r}: expected a positive duration such as 90s, 30m, 1h or 1d")
    return int(m.group(1)) * _UNIT_SECONDS[m.group(2)]


def _code(key: object) -> int:
    text = str(key).strip()
    if not (text.isascii() and text.isdigit()) or int(text) == 0:
        raise ValueError(f"{key!r} is not an Xid code (a positive whole number)")
    return int(text)


class XidLimit(BaseModel):
    """Fail when more than ``count`` events of the code fall within ``window`` on one GPU."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    count: int = Field(ge=1, strict=True)
    window: str

    @field_validator("window")
    @classmethod
    def _window(cls, value: str) -> str:
        window_seconds(value)
        return value.strip()

    @property
    def seconds(self) -> int:
        return window_seconds(self.window)


class XidSite(BaseModel):
    """The ``[xid]`` table: severity overrides per code, count-in-window limits per application code."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    severity: dict[int, SiteSeverity] = Field(default_factory=dict)
    limits: dict[int, XidLimit] = Field(default_factory=dict)

    @field_validator("severity", "limits", mode="before")
    @classmethod
    def _codes(cls, value: object) -> object:
        if not isinstance(value, dict):
            return value  # pydantic says "should be a valid dictionary"
        return {_code(k): v for k, v in value.items()}

    @field_validator("limits")
    @classmethod
    def _application_only(cls, value: dict[int, XidLimit]) -> dict[int, XidLimit]:
        for code in value:
            entry = lookup("xid", code)
            if entry is None or entry.cause != "application":
                what = "not in rigcheck's table" if entry is None else f"caused by the {entry.cause}"
                raise ValueError(f"Xid {code} is {what}: limits are for application codes (set its severity instead)")
        return value


class SiteConfig(BaseModel):
    """A whole site file. ``origin`` (not a key of the file) is the file's name, for the findings to cite."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    xid: XidSite = Field(default_factory=XidSite)
    _origin: str = PrivateAttr(default="site file")

    @property
    def origin(self) -> str:
        return self._origin


def _decode(data: bytes, path: str) -> Any:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError("not a site file (not UTF-8 text)", path=path) from None
    if path.lower().endswith(".json") or text.lstrip().startswith("{"):
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"not valid JSON: {exc.msg}", path=path, line=exc.lineno) from None
    if sys.version_info >= (3, 11):
        import tomllib

        try:
            return tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise InputError(f"not valid TOML or JSON: {exc}", path=path) from None
    raise InputError(
        'a TOML site file needs Python 3.11 or later; write the same keys as JSON ({"xid": {...}})', path=path
    )


def _where(loc: tuple[int | str, ...]) -> str:
    return ".".join(str(p) for p in loc if p != "[key]") or "(top)"


def parse_site_config(data: bytes, path: str) -> SiteConfig:
    """The site file's bytes as a SiteConfig; InputError (one line: file, key, what is wrong) otherwise."""
    raw = _decode(data, path)
    if not isinstance(raw, dict):
        raise InputError("not a site file (expected a table of keys such as [xid.severity])", path=path)
    try:
        config = SiteConfig.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        key = _where(first["loc"])
        if first["type"] == "extra_forbidden":
            known = "count, window" if key.startswith("xid.limits.") else "xid.severity, xid.limits"
            raise InputError(f"unknown key {key!r} (known: {known})", path=path) from None
        message = str(first["msg"]).removeprefix("Value error, ")
        got = "" if isinstance(first["input"], dict) else f" (got {first['input']!r})"
        raise InputError(f"{key}: {message}{got}", path=path) from None
    config._origin = path
    return config


__all__ = ["SiteConfig", "SiteSeverity", "XidLimit", "XidSite", "parse_site_config", "window_seconds"]

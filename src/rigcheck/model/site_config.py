"""A site file (`rigcheck doctor --config FILE`, `rigcheck verify --config FILE`): a site's own verdicts for Xid
codes and its own floors for `verify`'s bands, as data for the checks.

TOML where Python has ``tomllib`` (3.11 and later), JSON everywhere (rigcheck runs on 3.10 too): a ``.json``
file, or one whose text starts with ``{``, is JSON; anything else is TOML. The keys (nothing else is accepted)::

    [xid.severity]          # Xid code -> ok|info|warn|fail, whatever the catalog and the line say
    13 = "warn"
    [xid.limits]            # application Xid codes: fail when more than `count` fall within `window`
    31 = { count = 5, window = "1h" }
    [bands."H100 SXM5"]     # a GPU (catalogue name or NVML alias) -> check id -> the floor verify holds it to
    matmul_bf16 = 700
    membw = { expected_min = 2900, source = "acceptance runs, 2026-10" }
    [bands."*"]             # every GPU; an entry for the GPU's own name wins over it
    hostlink_h2d = 40

A bad file is one :class:`~rigcheck.errors.InputError` line naming the file and the key. Parsing is pure: the
CLI reads the bytes and hands them here with the file's name.
"""

from __future__ import annotations

import json
import math
import re
import sys
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator

from rigcheck.errors import InputError
from rigcheck.facts import catalog
from rigcheck.facts.bands import CHECKS
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


STAR = "*"
_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")
_BAND_KEYS = ("expected_min", "source")


def band_key(gpu: str, check: str) -> str:
    """The dotted TOML key of one site band: ``bands."H100 SXM5".matmul_bf16``."""
    name = gpu if _BARE_KEY.match(gpu) else json.dumps(gpu)
    return f"bands.{name}.{check}"


class SiteBand(BaseModel):
    """A site's floor for one check of one GPU (or of every GPU), and where the site got it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    expected_min: float
    source: str | None = None


def _floor(where: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f'{where}: expected a number or {{ expected_min = N, source = "..." }} (got {value!r})')
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{where}: a floor must be a positive number (got {value!r})")
    return float(value)


def _site_band(where: str, value: object) -> SiteBand:
    if not isinstance(value, dict):
        return SiteBand(expected_min=_floor(where, value))
    for key in value:
        if key not in _BAND_KEYS:
            raise ValueError(f"{where}: unknown key {key!r} (known: {', '.join(_BAND_KEYS)})")
    if "expected_min" not in value:
        raise ValueError(f"{where}: expected_min is missing")
    source = value.get("source")
    if source is not None and (not isinstance(source, str) or not source.strip()):
        raise ValueError(f"{where}.source: expected a non-empty string (got {source!r})")
    return SiteBand(expected_min=_floor(f"{where}.expected_min", value["expected_min"]), source=source)


def _gpu(name: str) -> catalog.GpuSpec | None:
    """The catalogue entry a ``[bands]`` key names; None for "*"; ValueError for a name rigcheck does not know."""
    if name == STAR:
        return None
    spec = catalog.lookup(name)
    if spec is None:
        near = catalog.candidates(name, limit=3)
        hint = f"did you mean {', '.join(repr(n) for n in near)}?" if near else "see `rigcheck verify --explain`;"
        raise ValueError(f'{band_key(name, "")[:-1]}: unknown GPU {name!r} ({hint} "*" means every GPU)')
    return spec


def _bands(value: object) -> dict[str, dict[str, SiteBand]]:
    if not isinstance(value, dict):
        raise ValueError(f"bands: expected a table of GPU names (got {value!r})")
    out: dict[str, dict[str, SiteBand]] = {}
    seen: dict[str, str] = {}  # canonical name -> the key that named it
    for gpu, table in value.items():
        spec = _gpu(str(gpu))
        if spec is not None:
            if spec.name in seen:
                raise ValueError(f"bands: {gpu!r} and {seen[spec.name]!r} both name the {spec.name}")
            seen[spec.name] = str(gpu)
        if not isinstance(table, dict):
            raise ValueError(f"{band_key(str(gpu), '')[:-1]}: expected a table of check ids (got {table!r})")
        entries: dict[str, SiteBand] = {}
        for check, entry in table.items():
            where = band_key(str(gpu), str(check))
            if check not in CHECKS:
                raise ValueError(f"{where}: unknown check id {check!r} (known: {', '.join(CHECKS)})")
            entries[str(check)] = _site_band(where, entry)
        out[str(gpu)] = entries
    return out


class SiteConfig(BaseModel):
    """A whole site file. ``origin`` (not a key of the file) is the file's name, for the findings to cite."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    xid: XidSite = Field(default_factory=XidSite)
    bands: dict[str, dict[str, SiteBand]] = Field(default_factory=dict)
    _origin: str = PrivateAttr(default="site file")

    @field_validator("bands", mode="before")
    @classmethod
    def _check_bands(cls, value: object) -> object:
        return _bands(value)

    @property
    def origin(self) -> str:
        return self._origin

    def band_floor(self, gpu_name: str, check: str) -> tuple[float, str] | None:
        """The site's floor for ``check`` on a GPU of that name, and the text naming the site file's key; an entry
        for the GPU's own name (or an alias of it) wins over "*"; None where the site sets none."""
        spec = catalog.lookup(gpu_name)
        found: tuple[str, SiteBand] | None = None
        if spec is not None:
            found = next(
                (
                    (key, t[check])
                    for key, t in self.bands.items()
                    if key != STAR and check in t and catalog.lookup(key) is spec
                ),
                None,
            )
        if found is None and check in self.bands.get(STAR, {}):
            found = (STAR, self.bands[STAR][check])
        if found is None:
            return None
        key, band = found
        text = f"{self.origin}: {band_key(key, check)}"
        return band.expected_min, text + (f" ({band.source})" if band.source else "")


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
            known = "count, window" if key.startswith("xid.limits.") else "xid.severity, xid.limits, bands"
            raise InputError(f"unknown key {key!r} (known: {known})", path=path) from None
        message = str(first["msg"]).removeprefix("Value error, ")
        if key == "bands" and message.startswith("bands"):  # the [bands] messages name their own key
            raise InputError(message, path=path) from None
        got = "" if isinstance(first["input"], dict) else f" (got {first['input']!r})"
        raise InputError(f"{key}: {message}{got}", path=path) from None
    config._origin = path
    return config


__all__ = [
    "STAR",
    "SiteBand",
    "SiteConfig",
    "SiteSeverity",
    "XidLimit",
    "XidSite",
    "band_key",
    "parse_site_config",
    "window_seconds",
]

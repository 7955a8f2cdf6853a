"""The `[bands]` table of a site file (model/site_config.py): a site's own floors for `verify`, per GPU name or
for every GPU, and one InputError line naming the key for anything it cannot use."""

from __future__ import annotations

import sys

import pytest

from rigcheck.errors import InputError
from rigcheck.model.site_config import parse_site_config

needs_toml = pytest.mark.skipif(sys.version_info < (3, 11), reason="tomllib is Python 3.11+")

SITE = b"""
[xid.severity]
13 = "warn"

[bands."H100 SXM5"]
matmul_bf16 = 700
membw = { expected_min = 2900, source = "acceptance runs, 2026-10" }

[bands."*"]
matmul_bf16 = 100
hostlink_h2d = 40.5
"""


@needs_toml
def test_an_exact_name_beats_star_and_aliases_resolve() -> None:
    site = parse_site_config(SITE, "site.toml")
    # NVML's name of the H100 SXM5 finds the catalogue-name entry
    assert site.band_floor("NVIDIA H100 80GB HBM3", "matmul_bf16") == (
        700.0,
        'site.toml: bands."H100 SXM5".matmul_bf16',
    )
    assert site.band_floor("H100 SXM5", "membw") == (
        2900.0,
        'site.toml: bands."H100 SXM5".membw (acceptance runs, 2026-10)',
    )
    # not set for the H100: "*" applies
    assert site.band_floor("H100 SXM5", "hostlink_h2d") == (40.5, 'site.toml: bands."*".hostlink_h2d')
    # another GPU, and one the catalogue does not know, get "*"
    assert site.band_floor("NVIDIA A10", "matmul_bf16") == (100.0, 'site.toml: bands."*".matmul_bf16')
    assert site.band_floor("Mystery GPU", "matmul_bf16") == (100.0, 'site.toml: bands."*".matmul_bf16')
    assert site.band_floor("NVIDIA A10", "p2p") is None
    # the Xid table still reads beside it
    assert site.xid.severity == {13: "warn"}


def test_json_site_file_with_bands() -> None:
    site = parse_site_config(b'{"bands": {"NVIDIA GeForce RTX 4090": {"matmul_bf16": 150}}}', "site.json")
    assert site.band_floor("GeForce RTX 4090", "matmul_bf16") == (
        150.0,
        'site.json: bands."NVIDIA GeForce RTX 4090".matmul_bf16',
    )
    assert site.band_floor("GeForce RTX 3090", "matmul_bf16") is None


def test_a_file_without_bands_sets_no_floor() -> None:
    site = parse_site_config(b'{"xid": {"severity": {"13": "warn"}}}', "site.json")
    assert site.bands == {}
    assert site.band_floor("H100 SXM5", "membw") is None


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ('{"bands": {"*": {"matmul_bf17": 1}}}', "bands.\"*\".matmul_bf17: unknown check id 'matmul_bf17'"),
        ('{"bands": {"*": {"membw": 0}}}', 'bands."*".membw: a floor must be a positive number (got 0)'),
        ('{"bands": {"*": {"membw": -3.5}}}', 'bands."*".membw: a floor must be a positive number'),
        ('{"bands": {"*": {"membw": true}}}', 'bands."*".membw: expected a number'),
        ('{"bands": {"*": {"membw": "fast"}}}', 'bands."*".membw: expected a number'),
        ('{"bands": {"*": {"membw": {"floor": 3}}}}', "bands.\"*\".membw: unknown key 'floor'"),
        ('{"bands": {"*": {"membw": {"source": "x"}}}}', 'bands."*".membw: expected_min is missing'),
        ('{"bands": {"*": {"membw": {"expected_min": -1}}}}', 'bands."*".membw.expected_min: a floor must be'),
        (
            '{"bands": {"H100 SXM6": {"membw": 1}}}',
            "bands.\"H100 SXM6\": unknown GPU 'H100 SXM6' (did you mean 'H100 SXM5'",
        ),
        ('{"bands": {"H100 SXM5": 3}}', 'bands."H100 SXM5": expected a table of check ids'),
        (
            '{"bands": {"H100 SXM5": {"membw": 1}, "NVIDIA H100 80GB HBM3": {"membw": 2}}}',
            "both name the H100 SXM5",
        ),
        ('{"bands": [1]}', "bands: expected a table of GPU names"),
        ('{"band": {}}', "unknown key 'band' (known: xid.severity, xid.limits, bands)"),
    ],
)
def test_a_bad_bands_key_is_one_line_naming_it(text: str, needle: str) -> None:
    with pytest.raises(InputError) as info:
        parse_site_config(text.encode(), "site.json")
    message = str(info.value)
    assert message.startswith("site.json: ")
    assert needle in message
    assert "\n" not in message

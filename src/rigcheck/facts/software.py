"""Which NVIDIA driver a CUDA toolkit, and a GPU architecture, needs.

Sources:
- NVIDIA CUDA Toolkit Release Notes, Table 3 "CUDA Toolkit and Corresponding Driver Versions" (the driver
  each toolkit's GA release ships with) and Table 2 "CUDA Toolkit and Minimum Required Driver Version for
  CUDA Minor Version Compatibility", https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/index.html
- NVIDIA CUDA Compatibility guide, "Minor Version Compatibility" (CUDA 11.x >= 450, 12.x >= 525,
  13.x >= 580), https://docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html
- For architectures: the first toolkit whose release notes add the architecture's compute capability
  (sm_60 CUDA 8.0, sm_70 CUDA 9.0, sm_75 CUDA 10.0, sm_80 CUDA 11.0, sm_86 CUDA 11.1, sm_89 and sm_90
  CUDA 11.8, sm_100/sm_120 CUDA 12.8 — see also the Blackwell Compatibility Guide,
  https://docs.nvidia.com/cuda/blackwell-compatibility-guide/), and that toolkit's driver from Table 3.
- Driver branches that dropped an architecture: Kepler's last branch is R470 (NVIDIA support notice
  "Kepler-based GPUs ... R470 is the last driver branch", 2021); Maxwell, Pascal and Volta are
  feature-frozen in R580 and not supported by R590 and later (CUDA 12.9/13.0 release notes,
  "Deprecated Architectures"; NVIDIA R590 driver release notes).

Driver versions are Linux x86_64 unless named Windows. A Windows driver is compared against the Windows
column where one is listed, else the Linux one (Windows numbers of a release are a little higher, so
that comparison only errs toward passing).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

RELEASE_NOTES = (
    "NVIDIA CUDA Toolkit Release Notes, Table 3 'CUDA Toolkit and Corresponding Driver Versions', "
    "https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/index.html"
)
MINOR_COMPAT_SOURCE = (
    "NVIDIA CUDA Compatibility, 'Minor Version Compatibility' (CUDA 11.x >= 450.80.02, 12.x >= 525.60.13, "
    "13.x >= 580), https://docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html"
)


@dataclass(frozen=True)
class ToolkitDriver:
    """The driver a CUDA toolkit's GA release requires (Table 3 of its release notes)."""

    cuda: tuple[int, int]
    linux: str
    windows: str | None
    release: str  # as the table names it, "CUDA 12.4 GA"


# CUDA major.minor -> the GA release's minimum driver. Source: RELEASE_NOTES (Table 3).
CUDA_TOOLKIT_DRIVERS: dict[tuple[int, int], ToolkitDriver] = {
    t.cuda: t
    for t in (
        ToolkitDriver((8, 0), "367.48", "369.30", "CUDA 8.0 (8.0.44)"),
        ToolkitDriver((9, 0), "384.81", "385.54", "CUDA 9.0 (9.0.76)"),
        ToolkitDriver((9, 1), "390.46", "391.29", "CUDA 9.1 (9.1.85)"),
        ToolkitDriver((9, 2), "396.26", "397.44", "CUDA 9.2 (9.2.88)"),
        ToolkitDriver((10, 0), "410.48", "411.31", "CUDA 10.0 (10.0.130)"),
        ToolkitDriver((10, 1), "418.39", "418.96", "CUDA 10.1 (10.1.105)"),
        ToolkitDriver((10, 2), "440.33", "441.22", "CUDA 10.2 (10.2.89)"),
        ToolkitDriver((11, 0), "450.51.05", "451.48", "CUDA 11.0.2 GA"),
        ToolkitDriver((11, 1), "455.23", "456.38", "CUDA 11.1 GA"),
        ToolkitDriver((11, 2), "460.27.03", "460.82", "CUDA 11.2.0 GA"),
        ToolkitDriver((11, 3), "465.19.01", "465.89", "CUDA 11.3.0 GA"),
        ToolkitDriver((11, 4), "470.42.01", "471.11", "CUDA 11.4.0 GA"),
        ToolkitDriver((11, 5), "495.29.05", "496.04", "CUDA 11.5 GA"),
        ToolkitDriver((11, 6), "510.39.01", "511.23", "CUDA 11.6 GA"),
        ToolkitDriver((11, 7), "515.43.04", "516.01", "CUDA 11.7 GA"),
        ToolkitDriver((11, 8), "520.61.05", "520.06", "CUDA 11.8 GA"),
        ToolkitDriver((12, 0), "525.60.13", "527.41", "CUDA 12.0 GA"),
        ToolkitDriver((12, 1), "530.30.02", "531.14", "CUDA 12.1 GA"),
        ToolkitDriver((12, 2), "535.54.03", "536.25", "CUDA 12.2 GA"),
        ToolkitDriver((12, 3), "545.23.06", "545.84", "CUDA 12.3 GA"),
        ToolkitDriver((12, 4), "550.54.14", "551.61", "CUDA 12.4 GA"),
        ToolkitDriver((12, 5), "555.42.02", "555.85", "CUDA 12.5 GA"),
        ToolkitDriver((12, 6), "560.28.03", "560.76", "CUDA 12.6 GA"),
        ToolkitDriver((12, 8), "570.26", "570.65", "CUDA 12.8 GA"),
        ToolkitDriver((12, 9), "575.51.03", "576.02", "CUDA 12.9 GA"),
        ToolkitDriver((13, 0), "580.65.06", None, "CUDA 13.0 GA"),
    )
}

# CUDA major -> (Linux, Windows) minimum driver for minor version compatibility: a program built with any
# 12.x toolkit runs (with a limited feature set: no PTX JIT of newer PTX) on a driver of at least this
# version. Source: MINOR_COMPAT_SOURCE and Table 2 of RELEASE_NOTES. Before CUDA 11 there was none.
MINOR_COMPAT_MIN_DRIVER: dict[int, tuple[str, str | None]] = {
    11: ("450.80.02", "452.39"),
    12: ("525.60.13", "527.41"),
    13: ("580.65.06", None),
}


@dataclass(frozen=True)
class ArchDriver:
    """The driver range that supports a GPU architecture."""

    arch: str  # canonical lower-case name: "hopper"
    display: str  # "Hopper"
    first_cuda: str  # the first toolkit with its compute capability
    min_driver: str  # that toolkit's GA driver (Linux)
    last_branch: int | None  # the last driver branch that supports it (None: still supported)
    source: str


ARCH_DRIVERS: dict[str, ArchDriver] = {
    a.arch: a
    for a in (
        ArchDriver(
            "kepler",
            "Kepler",
            "CUDA 5.0 (sm_35)",
            "304.54",
            470,
            "CUDA 5.0 release notes; NVIDIA Kepler support notice (R470 is the last branch)",
        ),
        ArchDriver(
            "maxwell",
            "Maxwell",
            "CUDA 6.5 (sm_50/52)",
            "340.21",
            580,
            "CUDA 6.5 release notes; R580 is the last branch for Maxwell (CUDA 12.9 release notes, R590 notes)",
        ),
        ArchDriver(
            "pascal",
            "Pascal",
            "CUDA 8.0 (sm_60/61)",
            "367.48",
            580,
            RELEASE_NOTES + " (CUDA 8.0); R580 is the last branch for Pascal (R590 driver release notes)",
        ),
        ArchDriver(
            "volta",
            "Volta",
            "CUDA 9.0 (sm_70)",
            "384.81",
            580,
            RELEASE_NOTES + " (CUDA 9.0); R580 is the last branch for Volta (R590 driver release notes)",
        ),
        ArchDriver("turing", "Turing", "CUDA 10.0 (sm_75)", "410.48", None, RELEASE_NOTES + " (CUDA 10.0)"),
        ArchDriver("ampere", "Ampere", "CUDA 11.0 (sm_80)", "450.51.05", None, RELEASE_NOTES + " (CUDA 11.0.2 GA)"),
        ArchDriver("ada", "Ada Lovelace", "CUDA 11.8 (sm_89)", "520.61.05", None, RELEASE_NOTES + " (CUDA 11.8 GA)"),
        ArchDriver("hopper", "Hopper", "CUDA 11.8 (sm_90)", "520.61.05", None, RELEASE_NOTES + " (CUDA 11.8 GA)"),
        ArchDriver(
            "blackwell",
            "Blackwell",
            "CUDA 12.8 (sm_100/sm_120)",
            "570.26",
            None,
            RELEASE_NOTES + " (CUDA 12.8 GA); NVIDIA Blackwell Compatibility Guide",
        ),
    )
}

# GA10x (sm_86: RTX 30xx, A40, A6000) arrived one toolkit after GA100 (sm_80): CUDA 11.1, driver 455.23.
SM86_MIN_DRIVER = "455.23"

_VERSION_RE = re.compile(r"^\s*(\d+(?:\.\d+)*)")


def parse_version(text: str | None) -> tuple[int, ...] | None:
    """``"580.159.04"`` -> (580, 159, 4); ``"12.4"`` -> (12, 4); ``"2.21.5+cuda12.4"`` -> (2, 21, 5)."""
    if text is None:
        return None
    m = _VERSION_RE.match(text)
    if m is None:
        return None
    return tuple(int(p) for p in m.group(1).split("."))


def version_lt(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    """``a < b``, padding the shorter with zeros ("570.26" == "570.26.0")."""
    n = max(len(a), len(b))
    return a + (0,) * (n - len(a)) < b + (0,) * (n - len(b))


def toolkit_driver(cuda: tuple[int, int]) -> ToolkitDriver | None:
    return CUDA_TOOLKIT_DRIVERS.get(cuda)


def required_driver(toolkit: ToolkitDriver, *, windows: bool) -> str:
    return toolkit.windows if windows and toolkit.windows is not None else toolkit.linux


def minor_compat_driver(major: int, *, windows: bool) -> str | None:
    entry = MINOR_COMPAT_MIN_DRIVER.get(major)
    if entry is None:
        return None
    linux, win = entry
    return win if windows and win is not None else linux


_ARCH_ALIASES = {
    "ada lovelace": "ada",
    "ada": "ada",
    "adalovelace": "ada",
}


def normalize_arch(name: str | None) -> str | None:
    """An architecture name as NVML or nvidia-smi print it (``"Hopper"``, ``"Ada Lovelace"``) -> key."""
    if not name:
        return None
    key = name.strip().lower()
    key = _ARCH_ALIASES.get(key, key)
    return key if key in ARCH_DRIVERS else None


def arch_from_compute_capability(cc: str | None) -> str | None:
    """``"9.0"`` -> ``"hopper"``. Source: CUDA C++ Programming Guide, 'Compute Capabilities' table."""
    v = parse_version(cc)
    if v is None or len(v) < 2:
        return None
    major, minor = v[0], v[1]
    if major == 3:
        return "kepler"
    if major == 5:
        return "maxwell"
    if major == 6:
        return "pascal"
    if major == 7:
        return "turing" if minor == 5 else "volta"
    if major == 8:
        return "ada" if minor == 9 else "ampere"
    if major == 9:
        return "hopper"
    if major in (10, 11, 12):
        return "blackwell"
    return None

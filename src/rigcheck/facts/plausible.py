"""What any NVIDIA card can report: a reading outside these bounds is a misread, not a measurement.

A text parser that reads a figure outside its bounds keeps it out of the snapshot (``null`` with the reason
``implausible``) rather than judge the machine on it: a negative power draw, a fan at -5 %, a temperature of
2^31 C. Each bound names its source; where the source is a product figure, the bound leaves a wide margin
above the largest product so that a card newer than this table is not refused.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Bounds:
    low: float
    high: float
    unit: str
    source: str

    def text(self) -> str:
        high = "" if math.isinf(self.high) else f"{self.high:g}"
        return f"{self.low:g}..{high} {self.unit}".rstrip()


_POWER = Bounds(
    0,
    3000,
    "W",
    "nvml.h nvmlDeviceGetPowerUsage / nvmlDeviceGetPowerManagementLimit: unsigned milliwatts, so never negative; "
    "the largest per-GPU power of any NVIDIA product is 1,400 W (Blackwell Ultra B300, announced at GTC 2025, "
    "glennklockwood.com/garden/processors/B300): above 3,000 W is no card's reading",
)
_TEMPERATURE = Bounds(
    0,
    150,
    "C",
    "nvml.h nvmlDeviceGetTemperature / nvmlDeviceGetTemperatureThreshold: unsigned degrees C, so never negative; "
    "GPU shutdown thresholds are around 90-105 C (95 C on the H100 of tests/fixtures/corpus/h100-vm): a die "
    "above 150 C has shut down long before",
)
# A die's own reading: a running GPU is above the air or liquid that cools it, so 0 C is a sensor that is not
# there (a vGPU guest prints "0 C" for the host's GPU); thresholds keep the wider range above.
_TEMPERATURE_READING = Bounds(
    1,
    150,
    "C",
    "nvml.h nvmlDeviceGetTemperature (unsigned degrees C); 0 C is the placeholder of a sensor not exposed (a vGPU "
    "guest's <gpu_temp>0 C</gpu_temp>): a working die sits above its coolant, and data-centre inlet air is "
    "18-27 C (ASHRAE TC 9.9 recommended envelope)",
)
# "GPU T.Limit Temp" is the margin left below T.Limit: negative once the GPU is past it.
_TLIMIT_MARGIN = Bounds(
    -150,
    150,
    "C",
    "nvml.h NVML_TEMPERATURE_THRESHOLD_GPU_MAX / nvidia-smi 'GPU T.Limit Temp': degrees below T.Limit, "
    "within the span of _TEMPERATURE either way",
)
_FAN = Bounds(
    0,
    200,
    "%",
    "nvml.h nvmlDeviceGetFanSpeed: percent of the fan's maximum noise-tolerance speed, unsigned, 'may exceed 100% "
    "in certain cases'; 200 % leaves that room",
)
_PERCENT = Bounds(
    0,
    100,
    "%",
    "nvml.h nvmlUtilization_t.gpu: percent of the sample period during which a kernel ran",
)
# A maximum clock of 0 MHz is no clock: the placeholder of a vGPU guest (<max_clocks> of 0 MHz).
_MAX_CLOCK = Bounds(
    1,
    30000,
    "MHz",
    "nvml.h nvmlDeviceGetMaxClockInfo: the highest clock the GPU can run; 0 is a placeholder (a vGPU guest's "
    "<max_clocks> print 0 MHz), above 30,000 MHz is no card's clock (see the current clocks' bounds)",
)
_CLOCK = Bounds(
    0,
    30000,
    "MHz",
    "nvml.h nvmlDeviceGetClockInfo / nvmlDeviceGetMaxClockInfo: unsigned MHz; the fastest clock nvidia-smi prints "
    "is a GDDR memory clock near 10,500-14,000 MHz (RTX 4090: 10501 MHz): above 30,000 MHz is no card's clock",
)
_MEMORY = Bounds(
    0,
    1024 * 1024,
    "MiB",
    "nvml.h nvmlMemory_t: unsigned bytes; the largest GPU memory is 288 GB of HBM3e (Blackwell Ultra B300, "
    "glennklockwood.com/garden/processors/B300): above 1 TiB is no card's memory",
)
_PCIE_GEN = Bounds(
    1,
    7,
    "",
    "PCI Express Base Specification: generations 1.0 to 7.0 (PCI-SIG released 7.0 in 2025); "
    "nvml.h nvmlDeviceGetCurrPcieLinkGeneration",
)
_PCIE_WIDTH = Bounds(
    1,
    32,
    "lanes",
    "PCI Express Base Specification: links of x1, x2, x4, x8, x12, x16 and x32 lanes; "
    "nvml.h nvmlDeviceGetCurrPcieLinkWidth",
)
_COUNT = Bounds(
    0,
    math.inf,
    "",
    "nvml.h: error, replay, remap and retirement counters are unsigned integers",
)
_DURATION = Bounds(
    0,
    math.inf,
    "us",
    "nvml.h nvmlDeviceGetFieldValues NVML_FI_DEV_CLOCKS_EVENT_REASON_*: unsigned time in the reason",
)

# Gpu field -> its bounds. Fields not named here (names, modes, flags) have no range to check.
BOUNDS: dict[str, Bounds] = {
    **dict.fromkeys(
        (
            "power_draw_w",
            "power_draw_avg_w",
            "power_limit_w",
            "power_default_limit_w",
            "power_enforced_limit_w",
            "power_min_limit_w",
            "power_max_limit_w",
        ),
        _POWER,
    ),
    **dict.fromkeys(("temp_c", "temp_memory_c"), _TEMPERATURE_READING),
    **dict.fromkeys(
        (
            "temp_slowdown_c",
            "temp_shutdown_c",
            "temp_max_operating_c",
            "temp_memory_max_c",
            "temp_target_c",
        ),
        _TEMPERATURE,
    ),
    "temp_tlimit_margin_c": _TLIMIT_MARGIN,
    "fan_percent": _FAN,
    "utilization_gpu_percent": _PERCENT,
    **dict.fromkeys(
        (
            "clock_graphics_mhz",
            "clock_sm_mhz",
            "clock_mem_mhz",
        ),
        _CLOCK,
    ),
    **dict.fromkeys(("clock_graphics_max_mhz", "clock_sm_max_mhz", "clock_mem_max_mhz"), _MAX_CLOCK),
    "memory_total_mib": _MEMORY,
    "memory_used_mib": _MEMORY,
    **dict.fromkeys(("pcie_gen_current", "pcie_gen_max", "pcie_gen_gpu_max"), _PCIE_GEN),
    **dict.fromkeys(("pcie_width_current", "pcie_width_max"), _PCIE_WIDTH),
    **dict.fromkeys(
        (
            "pcie_replay_count",
            "ecc_uncorrected_volatile",
            "ecc_uncorrected_aggregate",
            "ecc_corrected_volatile",
            "remapped_rows_correctable",
            "remapped_rows_uncorrectable",
            "retired_pages_sbe",
            "retired_pages_dbe",
        ),
        _COUNT,
    ),
    "clock_event_durations_us": _DURATION,
}


def out_of_bounds(field: str, value: float) -> Bounds | None:
    """The bounds ``value`` of Gpu ``field`` breaks, or None when it is within them (or unbounded)."""
    bounds = BOUNDS.get(field)
    if bounds is None or isinstance(value, bool):
        return None
    if math.isnan(value) or not bounds.low <= value <= bounds.high:
        return bounds
    return None

"""The PSU and cable planner behind ``rigcheck power plan``.

Cables (the guide, seed/000 "Power"): one independent 12 V PCIe cable per 8-pin socket (150 W each; a pigtail
counts as one cable), one cable per 6-pin (75 W), one native cable per 12-pin / 12VHPWR / 12V-2x6 socket, or the
adapter's 8-pin inputs each on its own cable. SXM modules draw from the server baseboard: no PCIe cables.

PSU size = GPU power x count x TRANSIENT_FACTOR + CPU + rest of system, rounded up to a common PSU size. GPU power
is the board power, or the limit the cards are run at (--power-limit, e.g. 4x RTX 4090 at 300 W on a 1600 W PSU):
the limit caps the card's sustained (averaged) draw, so the PSU is sized for it; the cables are not, since they feed
the card as built and a limit is software (it resets with the driver).

TRANSIENT_FACTOR = 1.5, derived from two published limits:
- PCIe CEM 5.0 lets an add-in card draw up to 3x its sustained power for 100 us (Intel's platform power
  specialist Stephen Eastman to PCWorld, 2022: "a 600 watt card on a PCIe 5.0 12VHPWR connector is allowed to
  spike to 1,800 watts for 100 micro-seconds").
- Intel's ATX Version 3.0 Multi Rail Power Supply Design Guide requires a PSU with a 12VHPWR connector to
  carry 200% of its rated power for 100 us (180% for 1 ms, 160% for 10 ms, 120% for 100 ms).
A PSU rated P absorbs 2P for 100 us, so a GPU spiking to 3x needs 3/2 = 1.5x its sustained power of PSU rating.
The same sum then also covers the sustained load (>= 1x). The factor is for excursions above the sustained power
(board power or limit), lasting microseconds to milliseconds; it is not room for a sustained draw above it.
For comparison, Intel's own example budgets a 750 W ATX 3.0 PSU for a 300 W GPU + 300 W CPU + 150 W rest of
system, and up to 1,100 W on an older ATX 2.x PSU: this planner (900 W for that example) sits between the two.
The 150 W rest-of-system default is Intel's.
"""

from __future__ import annotations

import math

from rigcheck.errors import UsageError
from rigcheck.facts import catalog
from rigcheck.facts.connectors import CONNECTORS, PIGTAIL_CABLE_W, PIGTAIL_RULE
from rigcheck.model.power_plan import ConnectorUse, GpuCables, PlannedGpu, PowerPlanDocument

TRANSIENT_FACTOR = 1.5
HEADROOM_SOURCE = (
    "GPU transients: PCIe CEM 5.0 allows 3x sustained board power for 100 us (Intel's Stephen Eastman, PCWorld "
    "interview 2022, reported at https://www.tweaktown.com/news/85717/); Intel ATX Version 3.0 Multi Rail Power "
    "Supply Design Guide: PSU must carry 200% of rated power for 100 us. 3 / 2 = 1.5x GPU board power. "
    "Rest of system 150 W: Intel's ATX 3.0 sizing example (300 W GPU + 300 W CPU + 150 W rest -> 750 W PSU)."
)
# What the factor covers, in the plan's PSU line: short excursions above the sustained power, with the figures.
# ATX 3.0 design guide, Table 3-3 "PCIe AIC and PSU Power Budget used for Peak Power Excursion" (a PSU over 450 W
# with a 12VHPWR connector: 200% of rated power for 100 us, 180% for 1 ms, 160% for 10 ms, 120% for 100 ms),
# https://edc.intel.com/content/www/us/en/design/ipla/software-development-platforms/client/platforms/alder-lake-desktop/atx-version-3-0-multi-rail-desktop-platform-power-supply-design-guide/2.0/2.01/pci-express-add-in-card-considerations/
TRANSIENT_COVERS = (
    "covers short GPU power excursions above the sustained {what} (PCIe CEM 5.0 lets a card spike to about 3x for "
    "~100 us; an ATX 3.x PSU must carry 200% of its rating for 100 us, 180% for 1 ms, 160% for 10 ms), not a "
    "sustained draw above it"
)
# --power-limit: at most the board power (the plan's cables are sized for it; a higher limit is overclocking the
# reference board), at least a quarter of it (no card's driver goes that low: `nvidia-smi -q` "Min Power Limit" is
# 200 W of 700 W on an H100 SXM, about 30%; a lower figure is a typo, such as 30 for 300).
MIN_LIMIT_FRACTION = 0.25
DEFAULT_CPU_W = 150.0  # an assumption, shown in the output: a desktop CPU under load; pass --cpu-watts otherwise
DEFAULT_REST_OF_SYSTEM_W = 150.0  # Intel's ATX 3.0 sizing example (see HEADROOM_SOURCE)
COMMON_PSU_SIZES_W = (550, 650, 750, 850, 1000, 1200, 1300, 1500, 1600, 2000)
PSU_STEP_W = 50
MAX_COUNT = 64
# 12VHPWR / 12V-2x6 adapters ship with at most four 8-pin inputs (4 x 150 W = 600 W, the connector's maximum).
MAX_ADAPTER_INPUTS = 4
SLOT_W = CONNECTORS["slot"].watts or 75.0


# Why a connector's watts_each is null: no specification gives that connector a rating (facts/connectors).
NO_RATING_REASONS: dict[str, str] = {
    "12-pin": "NVIDIA published no rating for its 12-pin connector (the guide: up to 500-600 W)",
    "8-pin CPU": "the PCIe CEM specification gives the EPS12V (CPU) 8-pin socket no rating",
}
NO_RATING_REASON = "no specification gives this connector a rating"


def watts_each_reason(kind: str) -> str:
    """Why a connector of ``kind`` has no ``watts_each``."""
    return NO_RATING_REASONS.get(kind, NO_RATING_REASON)


def _connector_use(kind: str, count: int) -> ConnectorUse:
    watts = CONNECTORS[kind].watts
    return ConnectorUse(
        kind=kind, count=count, watts_each=watts, watts_each_reason=watts_each_reason(kind) if watts is None else None
    )


def _cables_of(uses: list[ConnectorUse]) -> int:
    """Independent PSU cables one card's sockets need."""
    return sum(u.count * CONNECTORS[u.kind].cables for u in uses)


def round_up_psu(watts: float) -> int:
    """The smallest common PSU size at or above ``watts``; above 2000 W, the next multiple of 50 W."""
    for size in COMMON_PSU_SIZES_W:
        if size >= watts:
            return size
    return int(math.ceil(watts / PSU_STEP_W) * PSU_STEP_W)


def adapter_8pin_inputs(board_power_w: float) -> int:
    """Independent 8-pin cables a 12-pin/16-pin adapter needs: the board power beyond the slot, 150 W each."""
    return max(1, min(MAX_ADAPTER_INPUTS, math.ceil(max(board_power_w - SLOT_W, 0.0) / PIGTAIL_CABLE_W)))


def _limited_power(name: str, board_w: float, limit_w: float | None) -> float:
    """The sustained draw planned for one card: ``limit_w`` when given (within the card's range), else the board."""
    if limit_w is None:
        return board_w
    if limit_w > board_w:
        raise UsageError(
            f"--power-limit {limit_w:g} W is above the {name}'s {board_w:g} W board power: plan at most the board "
            "power (its sockets and cables are sized for it)"
        )
    floor = board_w * MIN_LIMIT_FRACTION
    if limit_w < floor:
        raise UsageError(
            f"--power-limit {limit_w:g} W is below {floor:g} W, a quarter of the {name}'s {board_w:g} W board "
            "power, lower than any card's driver allows (nvidia-smi -q shows its Min Power Limit)"
        )
    return float(limit_w)


def _check_watts(label: str, value: float | None) -> None:
    if value is not None and (not math.isfinite(value) or value < 0):
        raise UsageError(f"{label} must be a finite number of watts >= 0, got {value}")


def plan_power(
    gpu: str,
    count: int,
    psu_watts: float | None = None,
    cpu_watts: float | None = None,
    *,
    rest_of_system_w: float = DEFAULT_REST_OF_SYSTEM_W,
    transient_factor: float = TRANSIENT_FACTOR,
    power_limit_w: float | None = None,
) -> PowerPlanDocument:
    """Plan the PSU and its cables for ``count`` GPUs named ``gpu`` (any name :func:`catalog.lookup` knows):
    the ``rigcheck.power-plan/1`` document. ``power_limit_w``: the cards run at this limit (the PSU is sized for
    it, the cables for the board)."""
    spec = catalog.lookup(gpu)
    if spec is None:
        close = catalog.candidates(gpu)
        hint = f"; did you mean: {', '.join(close)}?" if close else "; no catalog name is close"
        raise UsageError(f"unknown or ambiguous GPU {gpu!r}{hint}")
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_COUNT:
        raise UsageError(f"--count must be an integer from 1 to {MAX_COUNT}, got {count!r}")
    _check_watts("--psu-watts", psu_watts)
    _check_watts("--cpu-watts", cpu_watts)
    _check_watts("rest of system", rest_of_system_w)
    _check_watts("--power-limit", power_limit_w)
    if not math.isfinite(transient_factor) or transient_factor < 1.0:
        raise UsageError(f"transient factor must be >= 1, got {transient_factor}")
    if psu_watts is not None and psu_watts == 0:
        raise UsageError("--psu-watts must be more than 0")
    if spec.board_power_w is None:
        raise UsageError(
            f"rigcheck has no per-GPU board power for {spec.name} ({spec.notes}); it cannot plan a PSU for it"
        )

    notes: list[str] = []
    board_w = float(spec.board_power_w)
    gpu_w = _limited_power(spec.name, board_w, power_limit_w)
    uses = [_connector_use(kind, n) for kind, n in spec.power_sockets]
    kinds = {k for k, _ in spec.power_sockets}
    design = "reference/Founders Edition" if spec.segment == "consumer" else "NVIDIA reference"
    notes.append(f"{spec.name}: {board_w:g} W board power, sockets of the {design} board ({spec.source}).")

    if spec.form_factor in ("sxm", "superchip"):
        notes.append(
            f"{spec.name} is an {spec.form_factor.upper()} module: powered by the server baseboard, "
            "no PCIe power cables; size the server's own PSUs from this total."
        )
    elif not spec.power_sockets:
        notes.append(f"{spec.name} draws all its power from the PCIe slot ({SLOT_W:g} W max): no cables.")
    if "8-pin" in kinds:
        notes.append(PIGTAIL_RULE)
    if "6-pin" in kinds:
        notes.append("A 6-pin socket (75 W) takes one cable of its own.")
    for kind in ("12-pin", "12VHPWR", "12V-2x6"):
        if kind in kinds:
            n_in = adapter_8pin_inputs(board_w)
            notes.append(
                f"{kind}: one native cable from the PSU, or the adapter shipped with the card fed by at least "
                f"{n_in} independent 8-pin cables (board power beyond the slot's {SLOT_W:g} W at 150 W each; "
                "use every input the adapter has) — never pigtails."
            )
    if "8-pin CPU" in kinds:
        notes.append(
            "8-pin CPU (EPS12V) socket: needs an EPS12V lead from the PSU (not a PCIe 8-pin); where an adapter "
            "from PCIe 8-pin cables is used, each of its inputs is its own cable."
        )

    if power_limit_w is not None:
        notes.append(
            f"Run at a {gpu_w:g} W power limit (board power {board_w:g} W): the PSU is sized for {gpu_w:g} W per GPU; "
            f"the sockets and cables above are the card's as built, sized for its {board_w:g} W board power, not the "
            "limit. A limit set with `nvidia-smi -pl` does not survive a driver reload or reboot: set it at every "
            "boot, or the cards draw their board power."
        )
    total_gpu_w = gpu_w * count
    cpu_w = DEFAULT_CPU_W if cpu_watts is None else float(cpu_watts)
    if cpu_watts is None:
        notes.append(f"CPU assumed to draw {DEFAULT_CPU_W:g} W (a desktop CPU under load); pass --cpu-watts.")
    required = total_gpu_w * transient_factor + cpu_w + rest_of_system_w
    recommended = round_up_psu(required)
    notes.append(
        f"PSU: {total_gpu_w:g} W GPUs x {transient_factor:g} (transients) + {cpu_w:g} W CPU + "
        f"{rest_of_system_w:g} W rest = {required:g} W -> {recommended} W. The x{transient_factor:g} "
        + TRANSIENT_COVERS.format(what="power limit" if power_limit_w is not None else "board power")
        + "; assumes an ATX 3.x PSU rated for 200% excursions (an older ATX 2.x unit needs more margin)."
    )
    if recommended > COMMON_PSU_SIZES_W[-1]:
        notes.append(
            f"{recommended} W is beyond common single ATX PSUs ({COMMON_PSU_SIZES_W[-1]} W): split the load over "
            "several PSUs or use server power supplies."
        )
    psu_ok: bool | None = None
    if psu_watts is not None:
        psu_ok = psu_watts >= recommended
        notes.append(
            f"The {psu_watts:g} W PSU is {'enough' if psu_ok else 'NOT enough'} (recommended {recommended} W)."
        )
    return PowerPlanDocument(
        gpu=PlannedGpu(
            name=spec.name,
            count=count,
            board_power_w=spec.board_power_w,
            form_factor=spec.form_factor,
            source=spec.source,
            power_limit_w=power_limit_w,
        ),
        total_gpu_power_w=total_gpu_w,
        independent_cables_total=_cables_of(uses) * count,
        cables=[GpuCables(gpu=i, connectors=uses) for i in range(count)],
        cpu_watts=cpu_w,
        cpu_watts_assumed=cpu_watts is None,
        rest_of_system_w=rest_of_system_w,
        transient_factor=transient_factor,
        required_w=required,
        recommended_psu_w=recommended,
        headroom_source=HEADROOM_SOURCE,
        notes=notes,
        psu_watts=psu_watts,
        psu_ok=psu_ok,
    )

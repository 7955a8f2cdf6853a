"""``escalation`` alerts: a GPU that the usual recovery (a reset, a reboot) did not mend.

- The same Xid on the same GPU again after recoveries: gpud counts the reboots after a reboot-recoverable Xid and,
  when the same Xid still asks for a reboot after 2 of them (``DefaultRebootThreshold`` in leptonai/gpud
  components/accelerator/nvidia/xid/threshold.go), recommends hardware inspection instead. rigcheck's documents
  carry no boot id, so a reboot is not visible as such: the same Xid on the same GPU (UUID, else board serial) in
  documents of ``ESCALATION_DAYS`` (3: a first sighting and two more after a recovery each) distinct days stands
  for it. Application Xids (NVIDIA's Xid catalog: the application is at fault, e.g. 13, 31, 43, 94; facts/xid.py)
  are left out, as gpud leaves out 94: a recovery does not bear on them.
- Row-remap headroom running out: the snapshot keeps a GPU's remapped-row counts (correctable, uncorrectable)
  and whether remapping failed, not the per-bank histogram, so the distance to a bank's limit cannot be read.
  A remapping failure (no spare row left in a bank: an RMA condition in NVIDIA's memory-error guide) escalates at
  once; a count that rose in ``REMAP_RISES`` documents means the spare rows are being spent run after run.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from rigcheck.facts.xid import lookup
from rigcheck.model.history import Alert, SightingRow, XidRow

ESCALATION_DAYS = 3
REMAP_RISES = 3
REMAP_FIGURES = ("remapped_rows_correctable", "remapped_rows_uncorrectable")
REMAP_FAILURE = "remapped_rows_failure"  # 1.0 where the snapshot says remapping failed


def _application(code: int) -> bool:
    entry = lookup("xid", code)
    return entry is not None and entry.cause == "application"


def xid_escalations(rows: Sequence[XidRow], days: int = ESCALATION_DAYS) -> list[Alert]:
    """One alert per GPU and Xid seen on at least ``days`` distinct days, raised on the day that made it so."""
    seen: dict[tuple[str, int], list[XidRow]] = defaultdict(list)
    for row in sorted(rows, key=lambda r: r.created_at):
        key = row.key
        if key is not None and not _application(row.code):
            seen[(key, row.code)].append(row)
    alerts = []
    for (gpu, code), hits in sorted(seen.items()):
        by_day: dict[str, XidRow] = {}
        for hit in hits:
            by_day.setdefault(hit.created_at[:10], hit)
        if len(by_day) < days:
            continue
        third = list(by_day.values())[days - 1]
        node = third.node or "?"
        dates = ", ".join(list(by_day)[:days]) + (", ..." if len(by_day) > days else "")
        alerts.append(
            Alert(
                kind="escalation",
                node=node,
                gpu=gpu,
                created_at=third.created_at,
                message=f"GPU {gpu} on {node}: Xid {code} again on {len(by_day)} days ({dates}) "
                "after the resets or reboots between them: recovery does not hold; send it for hardware inspection "
                "(gpud escalates after 2 reboots)",
            )
        )
    return alerts


def _remapped(s: SightingRow) -> float | None:
    counts = [s.figures[f] for f in REMAP_FIGURES if f in s.figures]
    return sum(counts) if counts else None


def remap_escalations(sightings: Sequence[SightingRow], rises: int = REMAP_RISES) -> list[Alert]:
    """A GPU whose remapping failed, or whose remapped rows grew in ``rises`` documents: once per GPU."""
    by_gpu: dict[str, list[SightingRow]] = defaultdict(list)
    for s in sightings:
        key = s.key
        if key is not None:
            by_gpu[key].append(s)
    alerts = []
    for gpu, rows in sorted(by_gpu.items()):
        rows.sort(key=lambda r: r.created_at)
        grew, last, why, at = 0, None, "", None
        for row in rows:
            if row.figures.get(REMAP_FAILURE):
                why, at = "row remapping failed: a bank has no spare row left (an RMA condition)", row
                break
            count = _remapped(row)
            if count is not None and last is not None and count > last:
                grew += 1
                if grew >= rises:
                    why = f"remapped rows grew in {grew} runs to {count:g}: the spare rows are being spent"
                    at = row
                    break
            last = count if count is not None else last
        if at is not None:
            node = at.node or "?"
            alerts.append(
                Alert(
                    kind="escalation",
                    node=node,
                    gpu=gpu,
                    created_at=at.created_at,
                    message=f"GPU {gpu} on {node}: {why}; send it for hardware inspection before it runs out",
                )
            )
    return alerts

"""The machine a DCGM diagnostic describes, for `verify --from DIR` where DIR holds a diagnostic and no rigcheck
snapshot (operators often keep only `dcgmi diag` output). Pure.

The GPUs are those the diagnostic ran on: `-j`'s ``entity_groups`` (DCGM's GPU ids with their PCI device ids), a
table's "GPU Device IDs Detected" (one device id per GPU, DCGM's ids not printed: taken as 0..N-1, the ids of a
run on every GPU), and every GPU a result names. A device id names the model where rigcheck.facts.pci_ids knows
it. Where the output lists no GPU, only the GPUs its results name are known: a note says the node's GPU count is
not said. Nothing else of the machine is known: the snapshot carries no host, link or health field, and a
:class:`Diagnostic` (``MACHINE_MARK``) marks it, so the judge runs no doctor check on it.
"""

from __future__ import annotations

from typing import Final

from rigcheck.facts.pci_ids import gpu_name, normalize_device_id
from rigcheck.model.dcgm import MACHINE_MARK, DcgmDiag
from rigcheck.model.snapshot import Diagnostic, Gpu, Missing, Snapshot, Software

SAVE_SNAPSHOT: Final = "save `rigcheck snapshot --json` beside it"


def _listed(diag: DcgmDiag) -> set[int]:
    """The GPUs a result of several names: 3.x's software tests give one result for "gpu_ids": "0,1,2"."""
    entities = [r.entity for t in diag.tests for r in t.results if r.gpu is None and r.entity]
    return {
        int(n) for e in entities if e.startswith("GPUs ") for n in e[len("GPUs ") :].split(",") if n.strip().isdigit()
    }


def _gpu_ids(diag: DcgmDiag, file: str, notes: list[str]) -> tuple[list[int], dict[int, str]]:
    """The GPUs of the run and each one's PCI device id where the output gives it."""
    named = set(diag.gpus()) | _listed(diag)
    devices: dict[int, str] = {d.gpu: d.device_id for d in diag.devices if d.gpu is not None}
    unnumbered = [d.device_id for d in diag.devices if d.gpu is None]
    if unnumbered:
        if max(named, default=-1) < len(unnumbered):
            devices.update(enumerate(unnumbered))
        else:  # the results name a GPU past the list: the list is of some GPUs only, whose ids it does not say
            notes.append(
                f"{file} lists {len(unnumbered)} GPU device id(s) but its results name GPU "
                f"{', '.join(map(str, sorted(named)))}: the GPUs its results name are judged, models not known"
            )
            return sorted(named), {}
    ids = sorted(named | set(devices))
    if not diag.devices:
        shown = ", ".join(map(str, ids)) or "none"
        notes.append(
            f"neither {file} nor a snapshot says how many GPUs the node has (the output lists no GPU): the GPUs "
            f"its results name are judged ({shown}); a GPU DCGM did not run on is not seen ({SAVE_SNAPSHOT})"
        )
    return ids, devices


def machine_of(diag: DcgmDiag, file: str) -> tuple[Snapshot, list[str]]:
    """The snapshot of the GPUs ``diag`` (read from ``file``) ran on, and the notes that say how it was made."""
    notes: list[str] = []
    ids, devices = _gpu_ids(diag, file, notes)
    gpus: list[Gpu] = []
    unknown: dict[str, list[int]] = {}
    for index in ids:
        device = devices.get(index)
        name = gpu_name(device) if device is not None else None
        if device is not None and name is None:
            unknown.setdefault(normalize_device_id(device) or device, []).append(index)
        gpu = Gpu(index=index, name=name)
        gpu.mark_unset_missing(Missing.NOT_IN_SOURCE)
        gpus.append(gpu)
    models = {
        f"{g.name} (PCI device {normalize_device_id(devices[g.index]) or devices[g.index]})"
        for g in gpus
        if g.name and g.index in devices
    }
    what = f"{len(gpus)} GPU(s)" + (f": {', '.join(sorted(models))}" if models else "")
    notes.insert(
        0,
        f"no rigcheck snapshot in the directory: the machine is the GPUs {file} ran on ({what}); the doctor "
        f"checks did not run ({SAVE_SNAPSHOT})",
    )
    notes.extend(
        f"GPU {', '.join(map(str, held))}: PCI device id {device} is not one rigcheck names: model not known"
        for device, held in unknown.items()
    )
    software = Software(driver_version=diag.driver)
    software.mark_unset_missing(Missing.NOT_IN_SOURCE)
    snapshot = Snapshot(
        gpus=gpus,
        software=software,
        diagnostics=[Diagnostic(source=MACHINE_MARK, message=f"the machine is made from the DCGM diagnostic {file}")],
    )
    return snapshot, notes

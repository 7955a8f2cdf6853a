"""A reading of one GPU's error counters, for the tests of the prolog's counter bracket."""

from __future__ import annotations

from rigcheck.model.telemetry import Sample


def sample(gpu: int, t: float, ecc: int, *, unc: int = 0, crc: list[int | None] | None = None) -> Sample:
    return Sample(
        t_s=t,
        gpu=gpu,
        ecc_corrected_volatile=ecc,
        ecc_uncorrected_volatile=unc,
        pcie_replays=3,
        nvlink_crc_errors=crc,
        nvlink_replay_errors=[0, 0],
        nvlink_recovery_errors=[0, 0],
    )

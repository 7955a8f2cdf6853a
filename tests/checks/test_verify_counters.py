"""The error counters read around the prolog's measurements, judged as rates (checks/verify/counters.py) and
carried into verify's document (each GPU's check `counters`)."""

from __future__ import annotations

from rigcheck.checks.verify.counters import judge_bracket
from tests.support.counters import sample


def test_an_ecc_storm_on_one_of_four_fails_it_alone() -> None:
    before = [sample(g, 0.0, 100) for g in range(4)]
    after = [sample(g, 5.0, 100 + (88_500 if g == 2 else 0)) for g in range(4)]
    got = judge_bracket(before, after, 5.0)
    assert [got[g].failed for g in range(4)] == [False, False, True, False]
    assert "corrected ECC errors at 17,700/s, the other GPUs' median 0.0/s" in got[2].text
    assert got[2].ecc_per_s == 17_700.0
    assert got[0].text == "over 5.0 s of load: no error counter rose"


def test_a_rate_every_gpu_shares_is_not_one_gpu_s_fault() -> None:
    before = [sample(g, 0.0, 0) for g in range(4)]
    after = [sample(g, 5.0, 50) for g in range(4)]  # 10/s everywhere: the peers' median is the same
    assert not any(v.failed for v in judge_bracket(before, after, 5.0).values())


def test_uncorrected_errors_and_crc_over_the_limit_fail() -> None:
    before = [sample(0, 0.0, 0, crc=[0, 0]), sample(1, 0.0, 0, crc=[0, 0])]
    after = [sample(0, 2.0, 0, unc=1, crc=[0, 0]), sample(1, 2.0, 0, crc=[10, 250])]
    got = judge_bracket(before, after, 2.0)
    assert "1 uncorrected ECC error(s)" in got[0].text
    assert got[0].failed
    assert "NVLink CRC errors at 125/s on one link" in got[1].text
    assert got[1].failed


def test_a_counter_that_went_back_is_a_reset_not_a_rise() -> None:
    got = judge_bracket([sample(0, 0.0, 500)], [sample(0, 3.0, 2)], 3.0)
    assert not got[0].failed
    assert got[0].ecc_per_s is None

"""nccl-tests' formulas against hand-worked numbers."""

from __future__ import annotations

import pytest

from rigcheck.bench.formulas import algbw_gbps, busbw_factor, busbw_gbps, matmul_tflops
from rigcheck.model.bench import Method, reasons, row_head


def test_algbw_is_bytes_over_time() -> None:
    assert algbw_gbps(1_000_000_000, 0.5) == pytest.approx(2.0)


@pytest.mark.parametrize(
    ("op", "n", "factor"),
    [
        ("allreduce", 2, 1.0),
        ("allreduce", 8, 1.75),
        ("allreduce", 1, 0.0),
        ("allgather", 4, 0.75),
        ("reducescatter", 8, 0.875),
        ("broadcast", 8, 1.0),
        ("broadcast", 2, 1.0),
        ("broadcast", 1, 0.0),
        ("allgather", 1, 0.0),
    ],
)
def test_busbw_factors(op: str, n: int, factor: float) -> None:
    assert busbw_factor(op, n) == pytest.approx(factor)  # type: ignore[arg-type]


def test_busbw_worked_example() -> None:
    # 1 GiB all-reduce over 8 ranks in 10 ms: algbw 107.37 GB/s, busbw × 1.75 = 187.9 GB/s.
    assert busbw_gbps("allreduce", 2**30, 0.010, 8) == pytest.approx(187.904819, rel=1e-6)


def test_matmul_tflops() -> None:
    # 8192^3 in 1.425 ms = 771.6 TFLOPS (the reference H100 bf16 figure).
    assert matmul_tflops(8192, 8192, 8192, 1.425e-3) == pytest.approx(771.6, rel=1e-3)


def test_bad_inputs() -> None:
    with pytest.raises(ValueError, match="positive"):
        algbw_gbps(1, 0)
    with pytest.raises(ValueError, match="world_size"):
        busbw_factor("allreduce", 0)


def test_row_median_and_spread() -> None:
    method = Method(method_version="1", warmup=2, repeats=3)
    r = row_head(name="x", unit="GB/s", samples=[3.0, 1.0, 2.0], method=method, backend="gloo", world_size=2)
    assert (r["value"], r["median"], r["min"], r["max"], r["repeats"], r["warmup"]) == (2.0, 2.0, 1.0, 3.0, 3, 2)
    assert (r["method_version"], r["sizes"]) == ("1", [])
    with pytest.raises(ValueError, match="sample"):
        row_head(name="x", unit="s", samples=[], method=method, backend="gloo", world_size=1)


def test_reasons_name_only_the_nulls() -> None:
    assert reasons("no catalogue peak", peak=None, fraction=None, gpu=0) == {
        "peak": "no catalogue peak",
        "fraction": "no catalogue peak",
    }

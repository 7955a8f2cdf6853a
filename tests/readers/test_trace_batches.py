"""`burn --analyze` fed columns (TraceStream.batches -> BurnAggregator.feed_batches, issue #13) says exactly what
the sample-at-a-time path says: the same figures, header, diagnostics and errors, on the real traces and on
variants of them (repeats, several GPUs, N/A cells, a lost GPU, bad and repeated lines, uuids, clock-only,
default limits that come late), read in blocks of every size."""

from __future__ import annotations

import random
from datetime import datetime
from pathlib import Path

import pytest

from rigcheck.checks.burn.judge import BurnAggregator, analyze_trace
from rigcheck.checks.burn.plateau import Rle
from rigcheck.errors import InputError
from rigcheck.readers.trace.stream import TraceStream, read_trace

FIXTURES = Path(__file__).parent.parent / "fixtures"
SOURCES = sorted((FIXTURES / "corpus" / "telemetry").glob("*.csv")) + sorted((FIXTURES / "traces").glob("*.csv"))
STAMP = "%Y/%m/%d %H:%M:%S.%f"


def _analysis(path: str, *, batches: bool) -> object:
    """What `burn --analyze` prints, through one path: one pass, else the trace read into memory (a pass in
    columns may be exact where one of samples is not: a GPU's state starts after its block is read, by when a
    default limit printed a few rows late is known; the trace in memory gives the same figures)."""
    stream = TraceStream(path)
    agg = BurnAggregator(stream.header.gpus)
    try:
        if batches:
            agg.feed_batches(stream.batches())
        else:
            agg.feed(stream)
    except InputError as exc:
        return type(exc).__name__, str(exc)
    result = agg.finish(stream.header.interval_s)
    trace = stream.header
    if result is None:
        trace = read_trace(path)
        result = analyze_trace(trace)
    gpus = {k: g.model_dump() for k, g in trace.gpus.items()}
    return trace.interval_s, trace.diagnostics, gpus, [a.model_dump() for a in result]


def _variant(rng: random.Random, source: Path, out: Path) -> None:
    """A trace made from a real one: copies back to back, several GPUs, and damage of every kind it can take."""
    lines = source.read_text().splitlines()
    header = [c.strip() for c in lines[0].split(",")]
    rows = [[c.strip() for c in line.split(",")] for line in lines[1:] if line.strip()]
    rows = [r for r in rows if len(r) == len(header)]
    if rng.random() < 0.6:
        stamps = [datetime.strptime(r[0], STAMP) for r in rows]
        period = stamps[-1] - stamps[0] + (stamps[1] - stamps[0])
        copies = zip([s + period * k for k in range(3) for s in stamps], rows * 3, strict=True)
        rows = [[stamp.strftime(STAMP)[:-3], *r[1:]] for stamp, r in copies]
    drop = [c for c in header if c.startswith(("utilization", "power.draw"))] if rng.random() < 0.25 else []
    drop += [c for c in header[2:] if rng.random() < 0.1]
    for col in dict.fromkeys(drop):
        i = header.index(col)
        header.pop(i)
        for r in rows:
            r.pop(i)
    if rng.random() < 0.3:
        header += ["name", "power.default_limit [W]"]
        late = rng.randrange(10)
        for n, r in enumerate(rows):
            r += ["[N/A]" if n < late else "NVIDIA H100 80GB HBM3", "[N/A]" if n < late else "700.00 W"]
    uuid = rng.random() < 0.2
    gpus = rng.choice([1, 2, 8])
    text = []
    for r in rows:
        order = list(range(gpus))
        if rng.random() < 0.03:
            rng.shuffle(order)
        for g in order:
            cells = list(r)
            cells[1] = f"GPU-{g:04x}" if uuid else str(g)
            for i in range(2, len(cells)):
                x = rng.random()
                cells[i] = "[N/A]" if x < 0.01 else "[GPU is lost]" if x < 0.0015 + 0.01 else cells[i]
                if header[i].startswith("clocks_event_reasons.active") and rng.random() < 0.05:
                    cells[i] = rng.choice(["0x4", "0x8", "0x20", "0x40", "0x84", "0x8"])  # cap, slowdown, thermal
                if header[i].startswith("power.draw") and rng.random() < 0.003:
                    cells[i] = "699.00 W"  # at the cap, now and then
            if rng.random() < 0.003:
                text.append("")
            if rng.random() < 0.002:
                text.append(", ".join(header))
            text.append(", ".join(f'"{c}"' for c in cells) if rng.random() < 0.005 else ", ".join(cells))
    if rng.random() < 0.15:  # a GPU's rows out of time order
        k = rng.randrange(len(text) - gpus - 1)
        text[k], text[k + gpus] = text[k + gpus], text[k]
    if rng.random() < 0.1:
        text[-1] = text[-1][: rng.randrange(len(text[-1]))]
    if rng.random() < 0.05:
        text.insert(rng.randrange(len(text)), "2026/11/22 18:08:32.717, 0, garbage")
    if uuid:
        header[1] = "uuid"
    out.write_text("\n".join([", ".join(header), *text]) + "\n")


@pytest.mark.parametrize("chunk", [1 << 20, 200])
@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.name)
def test_columns_equal_samples_on_the_real_traces(source: Path, chunk: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("rigcheck.inputs.CHUNK_BYTES", chunk)
    assert _analysis(str(source), batches=True) == _analysis(str(source), batches=False)


# The traces the variants are made from: "timestamp, index, ..." (the others read row by row: covered above).
BASES = [p for p in SOURCES if p.read_text().startswith("timestamp, index,")]


@pytest.mark.parametrize("seed", range(30))
def test_columns_equal_samples_on_damaged_variants(seed: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(seed)
    path = tmp_path / "variant.csv"
    _variant(rng, BASES[seed % len(BASES)], path)
    monkeypatch.setattr("rigcheck.inputs.CHUNK_BYTES", rng.choice([1 << 20, 4096, 300]))
    if seed % 3 == 0:  # the bounds on what is remembered, reached
        monkeypatch.setattr("rigcheck.readers.trace.batches.ROW_CACHE_MAX", 16)
        monkeypatch.setattr("rigcheck.checks.burn.columns._MEMO_MAX", 8)
        monkeypatch.setattr("rigcheck.checks.burn.columns._TALLY_MAX", 8)
    assert _analysis(str(path), batches=True) == _analysis(str(path), batches=False)


def test_plateau_runs_equal_single_adds() -> None:
    rng = random.Random(3)
    for _ in range(200):
        values = [float(rng.choice([40, 41, 41, 42, 60, 61])) for _ in range(rng.randrange(1, 3000))]
        one, runs = Rle(), Rle()
        for v in values:
            one.add(v)
        k = 0
        while k < len(values):
            part = values[k : k + rng.randrange(1, 300)]
            k += len(part)
            starts = [i for i in range(len(part)) if i == 0 or part[i] != part[i - 1]]
            ends = [*starts[1:], len(part)]
            runs.add_runs([part[i] for i in starts], [b - a for a, b in zip(starts, ends, strict=True)])
        assert (runs.n, runs.plateau()) == (one.n, one.plateau())


def _synthetic(path: Path, *, swap_at: int | None = None) -> None:
    """Two GPUs under load for 20 s at 10 Hz, readings that repeat: no temperature for the first 4 s, the cap
    reached only at 8 s, thermal reasons from 12 s (what the columns, not the first seconds, must get right)."""
    header = "timestamp, index, power.draw [W], power.limit [W], temperature.gpu, utilization.gpu [%], "
    lines = [header + "clocks.current.sm [MHz], clocks_event_reasons.active"]
    for k in range(200):
        when = f"2026/11/22 18:{8 + (32 + k // 10) // 60:02d}:{(32 + k // 10) % 60:02d}.{k % 10}00"
        for gpu in (0, 1):
            power = "690.00 W" if k == 80 + gpu else "300.00 W"
            temp = "[N/A]" if k < 40 else str(50 + (k // 7) % 3)
            reasons = "0x0000000000000020" if k >= 120 and k % 3 == 0 else "0x0000000000000000"
            lines.append(f"{when}, {gpu}, {power}, 700.00 W, {temp}, 100 %, {1980 - 15 * (k // 50)} MHz, {reasons}")
    if swap_at is not None:
        lines[swap_at], lines[swap_at + 2] = lines[swap_at + 2], lines[swap_at]
    path.write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize("swap_at", [None, 250])
def test_columns_after_the_first_seconds(swap_at: int | None, tmp_path: Path) -> None:
    path = tmp_path / "synthetic.csv"
    _synthetic(path, swap_at=swap_at)
    columns = _analysis(str(path), batches=True)
    assert columns == _analysis(str(path), batches=False)
    assert isinstance(columns, tuple)
    first = columns[3][0]
    assert first["time_to_power_cap_s"] == 8.0
    assert first["temp_rise_c"] is not None

"""The snapshot's pair table (model/snapshot.py PairTable): one index of the GPU pairs for the checks and the
reports, a cache that must never change what the snapshot is or says."""

from __future__ import annotations

from rigcheck.model.snapshot import GpuPair, Snapshot


def _snapshot(n: int = 4) -> Snapshot:
    pairs = [GpuPair(a=a, b=b, link="NV12" if (a + b) % 2 else "SYS") for a in range(n) for b in range(a + 1, n)]
    return Snapshot(pairs=pairs)


def test_a_pair_is_found_in_either_order() -> None:
    snap = _snapshot()
    assert snap.pair(2, 1) is snap.pair(1, 2) is snap.pairs[3]
    assert snap.pair(0, 9) is None


def test_the_table_follows_the_pairs_list() -> None:
    snap = _snapshot(3)
    assert snap.pair(0, 3) is None
    snap.pairs.append(GpuPair(a=0, b=3, link="PIX"))  # appended after the table was built: it is rebuilt
    found = snap.pair(3, 0)
    assert found is not None
    assert found.link == "PIX"


def test_a_record_changed_in_place_is_not_found_under_its_old_gpus() -> None:
    snap = _snapshot(3)
    assert snap.pair(0, 1) is not None
    snap.pairs[0].b = 2  # (0, 1) becomes a second (0, 2) record
    assert snap.pair(0, 1) is None


def test_nvlink_pairs_are_those_whose_record_says_nvlink() -> None:
    snap = _snapshot(4)
    assert snap.pair_table().nvlink == {(p.a, p.b) for p in snap.pairs if p.link == "NV12"}


def test_a_checked_snapshot_equals_the_same_snapshot_read_back() -> None:
    snap = _snapshot()
    twin = Snapshot.model_validate_json(snap.model_dump_json(by_alias=True))
    snap.pair_table()  # the cache is built on one of the two
    assert snap == twin
    assert twin == snap
    twin.gpu_absent_reason = "changed"
    assert snap != twin

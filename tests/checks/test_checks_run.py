"""run_checks as a whole: ordering, the registry, the fixtures, every id exercised, and no crash on any Snapshot."""

from __future__ import annotations

import re
import typing
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rigcheck.checks.doctor import CHECKS, FINDING_IDS, run_checks
from rigcheck.model import (
    CLOCK_EVENT_REASONS,
    Gpu,
    GpuPair,
    Missing,
    NvLink,
    P2PStatus,
    PcieHop,
    Severity,
    Snapshot,
    Software,
    System,
    snapshot_from_json,
)
from rigcheck.model.snapshot import GpuProcess
from tests.support.snapshots import (
    FIXTURE_DIR,
    FIXTURES,
    fixture_text,
    make_gpu,
    make_snapshot,
    two_3090_phb_throttling,
)

ALL_IDS = {i for ids in FINDING_IDS.values() for i in ids}
ID_RE = re.compile(r"^[a-z0-9]+\.[a-z0-9]+(-[a-z0-9]+)*$")


def test_registry_names_match_categories() -> None:
    assert set(CHECKS) == {
        "power",
        "thermal",
        "topology",
        "nvlink",
        "fabric",
        "gpus",
        "pcie",
        "p2p",
        "health",
        "software",
        "xid",
        "gpudirect",
        "storage",
    }
    assert set(FINDING_IDS) == set(CHECKS)
    for category, ids in FINDING_IDS.items():
        assert ids, category
        assert all(ID_RE.match(i) and i.split(".")[0] == category for i in ids), category
        assert len(set(ids)) == len(ids)


def test_sorted_worst_first_then_category_then_subject() -> None:
    found = run_checks(two_3090_phb_throttling())
    ranks = [f.severity.rank for f in found]
    assert ranks == sorted(ranks, reverse=True)
    assert found[0].severity is Severity.FAIL  # software thermal slowdown under load
    warn = [(f.category, f.subject) for f in found if f.severity is Severity.WARN]
    assert [c for c, _ in warn] == sorted(c for c, _ in warn)
    assert found[-1].severity is Severity.OK


def test_subjects_sort_naturally() -> None:
    snap = make_snapshot([make_gpu(i, nvlinks=None) for i in range(12)])
    oks = [f.subject for f in run_checks(snap) if f.id == "thermal.ok"]
    assert oks == [f"GPU{i}" for i in range(12)]


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_fixture_files_match_builders(name: str) -> None:
    path = FIXTURE_DIR / name
    text = path.read_text(encoding="utf-8")
    assert text == fixture_text(name), f"{name} drifted: run `python tests/support/snapshots.py`"
    assert snapshot_from_json(text, path=str(path)) == FIXTURES[name]()


EXPECTED: dict[str, dict[str, Severity]] = {
    "healthy-8x-h100.json": {"topology.nvlink": Severity.INFO, "p2p.ok": Severity.OK, "power.ok": Severity.OK},
    "2x-titan-rtx-nv2.json": {"topology.nvlink": Severity.INFO, "health.persistence-off": Severity.INFO},
    "2x-3090-phb-throttling.json": {
        "power.limit-below-default": Severity.WARN,
        "thermal.throttle-range": Severity.WARN,
        "pcie.slot-limits-width": Severity.INFO,  # its root ports are wired x8/x8: as built
        "thermal.sw-thermal-slowdown": Severity.FAIL,
        "p2p.not-supported": Severity.WARN,
    },
    "consumer-power-not-supported.json": {"power.readings-unavailable": Severity.UNKNOWN},
    "gpu-lost.json": {"health.gpu-unreadable": Severity.FAIL},
    "ecc-errors.json": {"health.ecc-uncorrected-volatile": Severity.FAIL},
    "no-gpu.json": {"health.no-gpu": Severity.FAIL},
}
WORST = {
    "healthy-8x-h100.json": Severity.INFO,
    "2x-titan-rtx-nv2.json": Severity.INFO,
    "2x-3090-phb-throttling.json": Severity.FAIL,
    "consumer-power-not-supported.json": Severity.UNKNOWN,
    "gpu-lost.json": Severity.FAIL,
    "ecc-errors.json": Severity.FAIL,
    "no-gpu.json": Severity.FAIL,
}


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_fixture_findings(name: str) -> None:
    found = run_checks(snapshot_from_json((FIXTURE_DIR / name).read_text(encoding="utf-8")))
    by_id = {f.id: f.severity for f in found}
    for finding_id, severity in EXPECTED[name].items():
        assert by_id.get(finding_id) is severity, (finding_id, by_id.get(finding_id))
    assert max(f.severity.rank for f in found) == WORST[name].rank


def test_every_finding_id_is_exercised_by_a_test() -> None:
    """Each id appears quoted in some test_checks_*.py, where its severity is asserted."""
    here = Path(__file__).parent
    text = "".join(
        p.read_text(encoding="utf-8") for p in here.glob("test_checks_*.py") if p.name != Path(__file__).name
    )
    text += Path(__file__).read_text(encoding="utf-8").split("EXPECTED:", 1)[1].split("WORST =", 1)[0]
    missing = sorted(i for i in ALL_IDS if f'"{i}"' not in text)
    assert missing == []


def test_findings_carry_message_and_source() -> None:
    for build in FIXTURES.values():
        for f in run_checks(build()):
            assert f.message, f.id
            assert f.source, f.id
            assert f.category == f.id.split(".")[0]
            assert f.id in ALL_IDS


# --- fuzz: hypothesis-generated Snapshots with random None fields and random values --------------------------

FLOATS = st.one_of(
    st.none(), st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0.0, -1.0, 75.0, 80.0, 84.0, 1e6])
)
INTS = st.one_of(st.none(), st.integers(min_value=-(2**31), max_value=2**31), st.sampled_from([0, 1, 4, 5, 8, 16]))
TEXT = st.one_of(
    st.none(),
    st.text(max_size=12),
    st.sampled_from(["P0", "P8", "P12", "Default", "Hopper", "9.0", "12.4", "550.54.14", "Ada Lovelace"]),
)
REASON_NAMES = st.sampled_from((*CLOCK_EVENT_REASONS, "bogus"))
MISSING = st.dictionaries(
    st.sampled_from(sorted(Gpu.model_fields.keys() - {"missing", "index"})), st.sampled_from(list(Missing)), max_size=4
)


def _strategy(annotation: Any) -> st.SearchStrategy[Any]:
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    inner = args[0] if args else annotation
    origin = typing.get_origin(inner)
    if inner is float:
        return FLOATS
    if inner is int:
        return INTS
    if inner is bool:
        return st.one_of(st.none(), st.booleans())
    if inner is str:
        return TEXT
    if inner is Missing:
        return st.one_of(st.none(), st.sampled_from(list(Missing)))
    if origin is list and typing.get_args(inner)[0] is str:
        return st.one_of(st.none(), st.lists(REASON_NAMES, max_size=4))
    if origin is dict:
        return st.one_of(st.none(), st.dictionaries(REASON_NAMES, FLOATS.filter(lambda v: v is not None), max_size=3))
    if origin is list and typing.get_args(inner)[0] is GpuProcess:
        proc = st.builds(GpuProcess, pid=st.integers(0, 2**22), name=TEXT, used_memory_mib=FLOATS)
        return st.one_of(st.none(), st.lists(proc, max_size=3))
    if origin is list:
        link = st.builds(NvLink, link=st.integers(0, 17), active=st.one_of(st.none(), st.booleans()))
        return st.one_of(st.none(), st.lists(link, max_size=4))
    raise AssertionError(f"no strategy for {annotation!r}")


GPU_FIELDS = {
    name: _strategy(info.annotation)
    for name, info in Gpu.model_fields.items()
    if name not in ("index", "missing", "read_error")
}


@st.composite
def gpus(draw: st.DrawFn, index: int) -> Gpu:
    values = {name: draw(strategy) for name, strategy in GPU_FIELDS.items()}
    read_error = draw(st.one_of(st.none(), st.none(), st.none(), st.sampled_from(list(Missing))))
    return Gpu(index=index, missing=draw(MISSING), read_error=read_error, **values)


STATUS = st.one_of(st.none(), st.sampled_from(list(P2PStatus)))
LINK = st.one_of(st.none(), st.sampled_from(["NV2", "NV18", "PIX", "PXB", "PHB", "NODE", "SYS", "SOC", "X", "??"]))


@st.composite
def snapshots(draw: st.DrawFn) -> Snapshot:
    n = draw(st.integers(0, 4))
    gpu_list = [draw(gpus(i)) for i in range(n)]
    pairs = []
    for a in range(n):
        for b in range(a + 1, n):
            if draw(st.booleans()):
                pairs.append(
                    GpuPair(
                        a=a, b=b, link=draw(LINK), nvlinks=draw(INTS), p2p_read=draw(STATUS), p2p_write=draw(STATUS)
                    )
                )
    paths = {}
    for g in gpu_list:
        if g.pci_bus_id is not None and draw(st.booleans()):
            hops = [PcieHop(bdf=g.pci_bus_id)] + [
                PcieHop(bdf=f"0000:{i:02x}:00.0", acs_enabled=draw(st.one_of(st.none(), st.booleans())))
                for i in range(draw(st.integers(0, 2)))
            ]
            paths[g.pci_bus_id] = hops
    software = Software(
        driver_version=draw(TEXT),
        cuda_driver_version=draw(TEXT),
        torch_cuda_version=draw(TEXT),
        torch_version=draw(TEXT),
        nccl_version=draw(TEXT),
    )
    system = System(iommu=draw(st.sampled_from(["on", "off", "unknown"])), iommu_detail=draw(TEXT), pcie_paths=paths)
    return make_snapshot(gpu_list, pairs=pairs, software=software, system=system, gpu_absent_reason=draw(TEXT))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(snapshots())
def test_no_check_crashes_on_any_snapshot(snap: Snapshot) -> None:
    for name, check in CHECKS.items():
        for f in check(snap):
            assert f.id in FINDING_IDS[name], f.id
    found = run_checks(snap)
    placeholders = {g.index for g in snap.gpus if g.read_error is not None}
    for f in found:
        if f.gpu in placeholders:
            assert f.id == "health.gpu-unreadable"
    assert [f.severity.rank for f in found] == sorted((f.severity.rank for f in found), reverse=True)


def test_every_finding_id_is_documented() -> None:
    from pathlib import Path

    from rigcheck.checks.doctor import FINDING_IDS

    doc = (Path(__file__).parent.parent.parent / "docs" / "checks.md").read_text()
    for ids in FINDING_IDS.values():
        for finding_id in ids:
            assert f"`{finding_id}`" in doc, f"{finding_id} is missing from docs/checks.md"

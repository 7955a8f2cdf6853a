"""NVLink state through NVML (rigcheck.probe.nvml.nvlink) on the fake NVML: which links exist, their state and
speed, a disabled link in the middle, an old driver, a GPU lost between links."""

from __future__ import annotations

from rigcheck.model import Missing
from rigcheck.probe.nvml import probe_nvml
from tests.support.fakenvml import SCENARIOS, FakeGpu, FakeLink, FakeNvml

A100 = "NVIDIA A100-SXM4-80GB"


def _links(lib: FakeNvml, gpu: int = 0) -> list[tuple[int, bool | None, float | None]]:
    snap = probe_nvml(lib, sysfs_root=None)
    links = snap.gpus[gpu].nvlinks
    assert links is not None, snap.gpus[gpu].missing.get("nvlinks")
    return [(link.link, link.active, link.speed_gbps) for link in links]


def test_healthy_h100_links_carry_the_speed_nvidia_smi_prints() -> None:
    snap = probe_nvml(SCENARIOS["healthy_8x_h100_nvlink"](), sysfs_root=None)
    links = snap.gpus[0].nvlinks
    assert links is not None
    assert [link.link for link in links] == list(range(18))
    assert all(link.active and link.speed_gbps == 26.562 for link in links)  # "Link 0: 26.562 GB/s"
    assert all("speed_gbps" not in link.missing for link in links)


def test_a_disabled_link_in_the_middle_does_not_hide_the_links_after_it() -> None:
    """An old driver (no link-count field): link 2 answers NotSupported, links 3-11 still exist."""
    links = [FakeLink(version=3, speed_mbps=25000) for _ in range(12)]
    links[2] = FakeLink(present=False)
    lib = FakeNvml([FakeGpu(name=A100, links=links, link_fields=False)])
    got = _links(lib)
    assert [n for n, _, _ in got] == [0, 1, *range(3, 12)]
    assert all(active for _, active, _ in got)
    # No speed field on that driver: the speed is unknown, with its reason, never made up.
    snap = probe_nvml(FakeNvml([FakeGpu(name=A100, links=links, link_fields=False)]), sysfs_root=None)
    assert snap.gpus[0].nvlinks is not None
    assert all(link.missing["speed_gbps"] is Missing.NOT_SUPPORTED for link in snap.gpus[0].nvlinks)


def test_with_the_link_count_a_link_nvml_will_not_describe_is_listed_as_unknown() -> None:
    links = [FakeLink(speed_mbps=25000) for _ in range(12)]
    links[2] = FakeLink(present=False)
    snap = probe_nvml(FakeNvml([FakeGpu(name=A100, links=links)]), sysfs_root=None)
    got = snap.gpus[0].nvlinks
    assert got is not None
    assert [link.link for link in got] == list(range(12))
    assert (got[2].active, got[2].missing["active"]) == (None, Missing.NOT_SUPPORTED)
    assert [link.speed_gbps for link in got if link.link != 2] == [25.0] * 11


def test_inactive_links_have_no_speed() -> None:
    links = [FakeLink(), FakeLink(active=False), FakeLink()]
    snap = probe_nvml(FakeNvml([FakeGpu(links=links)]), sysfs_root=None)
    got = snap.gpus[0].nvlinks
    assert got is not None
    assert [(link.active, link.speed_gbps) for link in got] == [(True, 26.562), (False, None), (True, 26.562)]
    assert got[1].missing["speed_gbps"] is Missing.NOT_SUPPORTED


def test_every_link_inactive_is_still_every_link() -> None:
    """The NVML side of "all links are inactive": each link is listed, none of them up."""
    links = [FakeLink(active=False) for _ in range(12)]
    assert _links(FakeNvml([FakeGpu(name=A100, links=links)])) == [(n, False, None) for n in range(12)]


def test_a_card_without_nvlink_has_an_empty_list() -> None:
    snap = probe_nvml(SCENARIOS["consumer_power_not_supported"](), sysfs_root=None)
    assert snap.gpus[0].nvlinks == []
    assert "nvlinks" not in snap.gpus[0].missing


def test_gpu_lost_while_reading_links_keeps_what_was_read() -> None:
    gpu = FakeGpu(links=[FakeLink() for _ in range(18)])
    lib = FakeNvml([gpu])
    gpu.lost_after = lib_calls_before_links() + 6  # lost a few calls into the link loop
    snap = probe_nvml(lib, sysfs_root=None)
    g = snap.gpus[0]
    assert g.read_error is Missing.GPU_LOST
    assert g.nvlinks is not None
    assert 0 < len(g.nvlinks) < 18
    assert g.nvlinks[0].active is True


def lib_calls_before_links() -> int:
    """How many calls on the GPU come before its first nvmlDeviceGetNvLinkState (the fake counts per GPU)."""
    lib = FakeNvml([FakeGpu(links=[FakeLink()])])
    probe_nvml(lib, sysfs_root=None)
    not_on_a_gpu = {"nvmlDeviceGetCount", "nvmlDeviceGetHandleByIndex"}
    gpu_calls = [name for name in lib.calls if name.startswith("nvmlDevice") and name not in not_on_a_gpu]
    return gpu_calls.index("nvmlDeviceGetNvLinkState")


def test_gpu_lost_at_the_first_link_leaves_the_links_unknown() -> None:
    gpu = FakeGpu(links=[FakeLink() for _ in range(4)])
    gpu.lost_after = lib_calls_before_links()  # the link count answers, the first link state does not
    g = probe_nvml(FakeNvml([gpu]), sysfs_root=None).gpus[0]
    assert (g.nvlinks, g.missing["nvlinks"]) == (None, Missing.GPU_LOST)

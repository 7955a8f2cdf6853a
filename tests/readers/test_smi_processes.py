"""Processes and the InfoROM-corrupted warning from saved nvidia-smi outputs (-q, -q -x, the table)."""

from __future__ import annotations

from pathlib import Path

from rigcheck.readers.smi.query_text import parse_query_text
from rigcheck.readers.smi.query_xml import parse_query_xml
from rigcheck.readers.smi.table import parse_table

CORPUS = Path(__file__).parent.parent / "fixtures" / "corpus"


def _read(rel: str) -> str:
    return (CORPUS / rel).read_text(encoding="utf-8")


def test_xml_compute_processes_read_graphics_left_out() -> None:
    snap = parse_query_xml(_read("smi-xml/005-2xa5000-590-v13.xml"))
    procs = [[(p.pid, p.name, p.used_memory_mib) for p in g.processes or []] for g in snap.gpus]
    assert procs == [
        [(100477, "/root/src/llama.cpp/build/bin/llama-server", 22430.0)],
        [(100477, "/root/src/llama.cpp/build/bin/llama-server", 17246.0)],
    ]
    t4 = parse_query_xml(_read("smi-xml/001-tesla-t4-515-v11.xml")).gpus[0]
    assert t4.processes is not None
    assert all(p.pid != 675 for p in t4.processes)


def test_empty_blocks_are_empty_lists() -> None:
    assert parse_query_xml(_read("h100-vm/q.xml")).gpus[0].processes == []
    assert parse_query_text(_read("h100-vm/q.txt")).gpus[0].processes == []
    assert parse_table(_read("h100-vm/nvidia-smi.txt")).gpus[0].processes == []
    assert "processes" not in parse_table(_read("h100-vm/nvidia-smi.txt")).gpus[0].missing


def test_fragment_cut_inside_processes_stays_unread() -> None:
    gpu = parse_query_text(_read("smi-q-fabric/202-laptop-ampere-q-fragment-fabric-na.txt")).gpus[0]
    assert gpu.processes is None


def test_table_process_rows() -> None:
    snap = parse_table(_read("smi-err/001-8xa40-525-gpu4-err-after-xid119.txt"))
    holding = {g.index: [(p.pid, p.used_memory_mib) for p in g.processes or []] for g in snap.gpus}
    assert holding[2] == [(2111354, 818.0)]


_TEXT = """WARNING: infoROM is corrupted at gpu 0000:3B:00.0

==============NVSMI LOG==============

Driver Version                            : 535.104.05
Attached GPUs                             : 2
GPU 00000000:3B:00.0
    Product Name                          : NVIDIA A100-SXM4-80GB
    Processes
        GPU instance ID                   : N/A
        Compute instance ID               : N/A
        Process ID                        : 1234
            Type                          : C
            Name                          : python
            Used GPU Memory               : 500 MiB
        GPU instance ID                   : N/A
        Compute instance ID               : N/A
        Process ID                        : 99
            Type                          : G
            Name                          : /usr/lib/xorg/Xorg
            Used GPU Memory               : 4 MiB

GPU 00000000:5E:00.0
    Product Name                          : NVIDIA A100-SXM4-80GB
    Processes                             : None
"""


def test_text_processes_and_inforom_warning() -> None:
    snap = parse_query_text(_TEXT)
    first, second = snap.gpus
    assert [(p.pid, p.name, p.used_memory_mib) for p in first.processes or []] == [(1234, "python", 500.0)]
    assert second.processes == []
    assert first.inforom_valid is False
    assert "inforom_valid" not in first.missing
    assert second.inforom_valid is None


def test_xml_after_inforom_warning() -> None:
    xml = _read("h100-vm/q.xml")
    bus = parse_query_xml(xml).gpus[0].pci_bus_id
    assert bus is not None
    warned = parse_query_xml(f"WARNING: infoROM is corrupted at gpu {bus[-12:]}\n{xml}").gpus[0]
    assert warned.inforom_valid is False


def test_table_old_layout_row() -> None:
    text = _read("smi/004-1xk20m-361-2016-no-cuda-version.txt").replace(
        "|  No running processes found                                                 |",
        "|    0      4321    C   /usr/bin/python                               120MiB |",
    )
    assert [(p.pid, p.used_memory_mib) for p in parse_table(text).gpus[0].processes or []] == [(4321, 120.0)]

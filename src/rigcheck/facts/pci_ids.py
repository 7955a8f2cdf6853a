"""PCI device ids of NVIDIA GPUs (vendor 10de) -> the name NVML prints for them, where an output gives the id
and no name: a `dcgmi diag` table's "GPU Device IDs Detected", the ``device_id`` of `dcgmi diag -j`'s
``entity_groups``. The names are NVML's, so ``rigcheck.facts.catalog.lookup`` finds the catalogue's entry.

Only ids with a public NVIDIA source are listed; an id that is not here is reported by its id, never guessed.
"""

from __future__ import annotations

from typing import Final

# NVIDIA's driver table of released chips (device id, subsystem -> marketing name), as the open kernel modules
# ship it: src/nvidia/generated/g_nv_name_released.h, https://github.com/NVIDIA/open-gpu-kernel-modules
NV_NAME_RELEASED: Final = (
    "NVIDIA open-gpu-kernel-modules, src/nvidia/generated/g_nv_name_released.h (sChipsReleased), "
    "https://github.com/NVIDIA/open-gpu-kernel-modules"
)
# NVIDIA's GPU admin tools, the device id -> product table: gpu/devid_names.py (0x2335: 'H200'); the PCI ID
# repository names it "GH100 [H200 SXM 141GB]" (https://pci-ids.ucw.cz/read/PC/10de/2335).
GPU_ADMIN_TOOLS: Final = "NVIDIA gpu-admin-tools, gpu/devid_names.py, https://github.com/NVIDIA/gpu-admin-tools"

# device id (lower-case hex, no 0x) -> (NVML's name, source)
DEVICE_NAMES: Final[dict[str, tuple[str, str]]] = {
    "1db1": ("Tesla V100-SXM2-16GB", NV_NAME_RELEASED),
    "1db4": ("Tesla V100-PCIE-16GB", NV_NAME_RELEASED),
    "1db5": ("Tesla V100-SXM2-32GB", NV_NAME_RELEASED),
    "1db6": ("Tesla V100-PCIE-32GB", NV_NAME_RELEASED),
    "20b0": ("NVIDIA A100-SXM4-40GB", NV_NAME_RELEASED),
    "20b2": ("NVIDIA A100-SXM4-80GB", NV_NAME_RELEASED),
    "20b5": ("NVIDIA A100 80GB PCIe", NV_NAME_RELEASED),
    "20f1": ("NVIDIA A100-PCIE-40GB", NV_NAME_RELEASED),
    "2204": ("NVIDIA GeForce RTX 3090", NV_NAME_RELEASED),
    "2230": ("NVIDIA RTX A6000", NV_NAME_RELEASED),
    "2235": ("NVIDIA A40", NV_NAME_RELEASED),
    "2236": ("NVIDIA A10", NV_NAME_RELEASED),
    "2237": ("NVIDIA A10G", NV_NAME_RELEASED),
    "2321": ("NVIDIA H100 NVL", NV_NAME_RELEASED),
    "2330": ("NVIDIA H100 80GB HBM3", NV_NAME_RELEASED),  # H100 SXM5
    "2331": ("NVIDIA H100 PCIe", NV_NAME_RELEASED),
    "2335": ("NVIDIA H200", GPU_ADMIN_TOOLS),  # H200 SXM 141GB
}


def normalize_device_id(text: str) -> str | None:
    """ "0x2330", "2330", "10de:2330", "0x233010DE" (NVML's pciDeviceId) -> "2330"; None when it is not one."""
    raw = text.strip().lower()
    if ":" in raw:
        vendor, _, raw = raw.partition(":")
        if vendor.removeprefix("0x") != "10de":
            return None
    raw = raw.removeprefix("0x")
    if len(raw) == 8 and raw.endswith("10de"):
        raw = raw[:4]
    if len(raw) != 4 or any(c not in "0123456789abcdef" for c in raw):
        return None
    return raw


def gpu_name(device_id: str) -> str | None:
    """NVML's name for an NVIDIA PCI device id, None where no source rigcheck holds names it."""
    key = normalize_device_id(device_id)
    entry = DEVICE_NAMES.get(key) if key is not None else None
    return entry[0] if entry is not None else None

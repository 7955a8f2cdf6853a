"""A catalog of GPUs people train on, with the figures rigcheck needs and the document each comes from.

Conventions
- ``board_power_w``: NVIDIA's total board power / TGP / max power of the reference or Founders Edition design
  (partner cards often differ). SXM and superchip modules: the module's maximum TDP.
- ``power_sockets``: auxiliary power sockets of the reference / Founders Edition board. SXM modules and
  superchips have none: they are powered through the baseboard. Slot-powered cards (T4, L4) have none either.
- ``memory_gib``: the capacity as NVIDIA markets it ("24 GB"); GDDR capacities are binary, HBM parts expose a
  little less than the nominal figure (H100 80GB shows 81559 MiB).
- ``memory_bandwidth_gbps``: GB/s (1e9 bytes/s).
- ``bf16_tflops`` / ``fp16_tflops`` / ``tf32_tflops``: peak DENSE tensor-core TFLOPS, FP16 with FP32
  accumulate where the document distinguishes (GeForce parts run FP32 accumulate at half the FP16-accumulate
  rate). Datasheets that quote only sparse figures are halved, and the entry says so. None where the part has
  no such tensor math (no BF16 before Ampere, no TF32 before Ampere) or where no NVIDIA document rigcheck
  could check states it. Pre-Volta parts have no tensor cores: their fp16 figure, where given, is packed FP16
  on CUDA cores and says so in ``notes``.
- ``nvlink_links`` / ``nvlink_generation``: links per GPU (0 / 0 without NVLink); ``nvlink_bridge`` is True
  where NVLink needs an external bridge between two cards (consumer and workstation parts, PCIe datacenter).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Literal

from rigcheck.facts.sources import A100_WP, GA102_WP, HOPPER_WP, PASCAL_WP, TURING_WP, VOLTA_WP

Segment = Literal["consumer", "workstation", "datacenter"]
FormFactor = Literal["pcie", "sxm", "superchip"]

# Documents ---------------------------------------------------------------------------------------------------
ADA_WP = "NVIDIA Ada GPU Architecture whitepaper, https://images.nvidia.com/aem-dam/Solutions/geforce/ada/nvidia-ada-gpu-architecture.pdf"
RTX_BLACKWELL_WP = "NVIDIA RTX Blackwell GPU Architecture whitepaper, https://images.nvidia.com/aem-dam/Solutions/geforce/blackwell/nvidia-rtx-blackwell-gpu-architecture.pdf"
GEFORCE_30 = (
    "NVIDIA GeForce RTX 30 Series specifications, https://www.nvidia.com/en-us/geforce/graphics-cards/30-series/"
)
GEFORCE_40 = (
    "NVIDIA GeForce RTX 40 Series specifications, https://www.nvidia.com/en-us/geforce/graphics-cards/40-series/"
)
GEFORCE_50 = (
    "NVIDIA GeForce RTX 50 Series specifications, https://www.nvidia.com/en-us/geforce/graphics-cards/50-series/"
)
GEFORCE_20 = (
    "NVIDIA GeForce RTX 20 Series specifications, https://www.nvidia.com/en-us/geforce/graphics-cards/rtx-2080-ti/"
)
TITAN_RTX = (
    "NVIDIA TITAN RTX product page / specifications, https://www.nvidia.com/en-us/deep-learning-ai/products/titan-rtx/"
)
TITAN_V = "NVIDIA TITAN V product page, https://www.nvidia.com/en-us/titan/titan-v/"
TITAN_XP = "NVIDIA TITAN Xp product page, https://www.nvidia.com/en-us/titan/titan-xp/"
GTX_1080TI = "NVIDIA GeForce GTX 1080 Ti specifications, https://www.nvidia.com/en-gb/geforce/graphics-cards/geforce-gtx-1080-ti/specifications/"
GTX_1070 = "NVIDIA GeForce GTX 1070 specifications, https://www.nvidia.com/en-gb/geforce/graphics-cards/geforce-gtx-1070/specifications/"
RTX_3060_FAMILY = "NVIDIA GeForce RTX 3060 family specifications, https://www.nvidia.com/en-us/geforce/graphics-cards/30-series/rtx-3060-3060ti/"
QUADRO_RTX = (
    "NVIDIA Quadro RTX 6000 / RTX 8000 datasheets, https://www.nvidia.com/en-us/design-visualization/quadro/rtx-6000/"
)
RTX_A4000 = "NVIDIA RTX A4000 datasheet, https://www.nvidia.com/en-us/design-visualization/rtx-a4000/"
RTX_A5000 = "NVIDIA RTX A5000 datasheet, https://www.nvidia.com/en-us/design-visualization/rtx-a5000/"
RTX_A6000 = "NVIDIA RTX A6000 datasheet, https://www.nvidia.com/en-us/design-visualization/rtx-a6000/"
RTX_6000_ADA = "NVIDIA RTX 6000 Ada Generation datasheet, https://www.nvidia.com/en-us/design-visualization/rtx-6000/"
RTX_PRO_6000 = "NVIDIA RTX PRO 6000 Blackwell Workstation / Max-Q datasheets, https://www.nvidia.com/en-us/products/workstations/professional-desktop-gpus/rtx-pro-6000/"
K20 = "NVIDIA Tesla K20 GPU Accelerator board specification (BD-06455-001), https://www.nvidia.com/content/PDF/kepler/Tesla-K20-Passive-BD-06455-001-v07.pdf"
P100_DS = "NVIDIA Tesla P100 datasheet, https://images.nvidia.com/content/tesla/pdf/nvidia-tesla-p100-datasheet.pdf"
P100_PCIE_PB = "NVIDIA Tesla P100 PCIe product brief (PB-08248-001)"
V100_DS = "NVIDIA Tesla V100 datasheet, https://images.nvidia.com/content/technologies/volta/pdf/tesla-volta-v100-datasheet-letter-fnl-web.pdf"
V100_PCIE_PB = "NVIDIA Tesla V100 PCIe product brief (PB-08744-001), https://images.nvidia.com/content/tesla/pdf/Tesla-V100-PCIe-Product-Brief.pdf"
V100S_DS = "NVIDIA V100S datasheet, https://images.nvidia.com/content/technologies/volta/pdf/volta-v100-datasheet-update-us-1165301-r5.pdf"
A100_DS = "NVIDIA A100 Tensor Core GPU datasheet, https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf"
A10_DS = (
    "NVIDIA A10 datasheet, https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a10/pdf/a10-datasheet.pdf"
)
A30_DS = "NVIDIA A30 datasheet, https://www.nvidia.com/content/dam/en-zz/Solutions/data-center/products/a30-gpu/pdf/a30-datasheet.pdf"
A40_DS = "NVIDIA A40 datasheet, https://images.nvidia.com/content/Solutions/data-center/a40/nvidia-a40-datasheet.pdf"
T4_DS = "NVIDIA T4 datasheet, https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/tesla-t4/t4-tensor-core-datasheet-951643.pdf"
L4_DS = "NVIDIA L4 datasheet, https://resources.nvidia.com/en-us-data-center-overview/l4-gpu-datasheet"
L40_DS = "NVIDIA L40 datasheet, https://images.nvidia.com/content/Solutions/data-center/vgpu-L40-datasheet.pdf"
L40S_DS = "NVIDIA L40S datasheet, https://resources.nvidia.com/en-us-l40s/l40s-datasheet-28413"
H100_DS = "NVIDIA H100 Tensor Core GPU datasheet, https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet"
H200_DS = "NVIDIA H200 Tensor Core GPU specifications, https://www.nvidia.com/en-us/data-center/h200/"
HGX_B200 = "NVIDIA HGX B200 specifications (8-GPU totals), https://www.nvidia.com/en-us/data-center/hgx/"
GB200_NVL72 = "NVIDIA GB200 NVL72 specifications (72-GPU totals), https://www.nvidia.com/en-us/data-center/gb200-nvl72/"
GB300_NVL72 = "NVIDIA GB300 NVL72 specifications (72-GPU totals), https://www.nvidia.com/en-us/data-center/gb300-nvl72/"


@dataclass(frozen=True)
class GpuSpec:
    name: str  # canonical
    aliases: tuple[str, ...]  # names NVML / nvidia-smi print (old drivers omit the "NVIDIA " prefix)
    architecture: str
    chip: str
    segment: Segment
    form_factor: FormFactor
    board_power_w: float | None
    power_sockets: tuple[tuple[str, int], ...]
    nvlink_links: int
    nvlink_generation: int
    nvlink_bridge: bool
    memory_gib: float
    memory_bandwidth_gbps: float | None
    bf16_tflops: float | None
    fp16_tflops: float | None
    tf32_tflops: float | None
    source: str
    notes: str = ""


def _g(  # noqa: PLR0917 - one row of the GPUS table below, positional like a table
    name: str,
    aliases: tuple[str, ...],
    arch: str,
    chip: str,
    segment: Segment,
    form: FormFactor,
    power: float | None,
    sockets: tuple[tuple[str, int], ...],
    nvl: tuple[int, int, bool],
    mem: float,
    bw: float | None,
    tensor: tuple[float | None, float | None, float | None],
    source: str,
    notes: str = "",
) -> GpuSpec:
    return GpuSpec(
        name,
        aliases,
        arch,
        chip,
        segment,
        form,
        power,
        sockets,
        nvl[0],
        nvl[1],
        nvl[2],
        mem,
        bw,
        *tensor,
        source,
        notes,
    )


_NONE: tuple[float | None, float | None, float | None] = (None, None, None)
_NO_NVL = (0, 0, False)
_PCIE: FormFactor = "pcie"
_SXM: FormFactor = "sxm"

# fmt: off
GPUS: tuple[GpuSpec, ...] = (
    # --- GeForce / TITAN ------------------------------------------------------------------------------------
    _g("GeForce GTX 1080 Ti", ("NVIDIA GeForce GTX 1080 Ti", "GeForce GTX 1080 Ti"), "Pascal", "GP102", "consumer",
       _PCIE, 250, (("8-pin", 1), ("6-pin", 1)), _NO_NVL, 11, 484, _NONE, GTX_1080TI,
       "no tensor cores; FP16 runs at 1/64 rate"),
    _g("GeForce GTX 1070", ("NVIDIA GeForce GTX 1070", "GeForce GTX 1070"), "Pascal", "GP104", "consumer", _PCIE,
       150, (("8-pin", 1),), _NO_NVL, 8, 256, _NONE, GTX_1070,
       "no tensor cores; 8 Gbps GDDR5 on 256 bits; PCI Express 3.0; Founders Edition one 8-pin"),
    _g("TITAN Xp", ("NVIDIA TITAN Xp", "TITAN Xp"), "Pascal", "GP102", "consumer", _PCIE, 250,
       (("8-pin", 1), ("6-pin", 1)), _NO_NVL, 12, 547.7, _NONE, TITAN_XP, "no tensor cores"),
    _g("TITAN V", ("NVIDIA TITAN V", "TITAN V"), "Volta", "GV100", "consumer", _PCIE, 250,
       (("8-pin", 1), ("6-pin", 1)), _NO_NVL, 12, 652.8, (None, 110, None), TITAN_V,
       "110 TFLOPS deep-learning (tensor) figure from the product page; no NVLink connector"),
    _g("TITAN RTX", ("NVIDIA TITAN RTX", "TITAN RTX"), "Turing", "TU102", "consumer", _PCIE, 280, (("8-pin", 2),),
       (2, 2, True), 24, 672, (None, 130, None), TITAN_RTX,
       "the guide's card; 130 TFLOPS tensor figure from the product page; NVLink bridge 100 GB/s total "
       "(2 links, 50 GB/s per direction, Turing whitepaper)"),
    _g("GeForce RTX 2080 Ti", ("NVIDIA GeForce RTX 2080 Ti", "GeForce RTX 2080 Ti"), "Turing", "TU102", "consumer",
       _PCIE, 250, (("8-pin", 2),), (2, 2, True), 11, 616, (None, 53.8, None), TURING_WP + "; " + GEFORCE_20,
       "reference design 250 W (Founders Edition 260 W, 56.9 TFLOPS); FP16 tensor with FP32 accumulate"),
    _g("GeForce RTX 2080 Super", ("NVIDIA GeForce RTX 2080 SUPER", "GeForce RTX 2080 SUPER"), "Turing", "TU104",
       "consumer", _PCIE, 250, (("8-pin", 1), ("6-pin", 1)), (1, 2, True), 8, 496, _NONE, GEFORCE_20,
       "tensor TFLOPS not stated in an NVIDIA document rigcheck checked; one x8 NVLink (TU104)"),
    _g("GeForce RTX 2080", ("NVIDIA GeForce RTX 2080", "GeForce RTX 2080"), "Turing", "TU104", "consumer", _PCIE,
       215, (("8-pin", 1), ("6-pin", 1)), (1, 2, True), 8, 448, (None, 40.3, None), TURING_WP,
       "reference design 215 W (Founders Edition 225 W, 42.4 TFLOPS); FP16 tensor with FP32 accumulate"),
    _g("GeForce RTX 2070", ("NVIDIA GeForce RTX 2070", "GeForce RTX 2070"), "Turing", "TU106", "consumer", _PCIE,
       175, (("8-pin", 1),), _NO_NVL, 8, 448, (None, 29.9, None), TURING_WP,
       "reference design 175 W (Founders Edition 185 W, 31.5 TFLOPS); FP16 tensor with FP32 accumulate"),
    _g("GeForce RTX 3090", ("NVIDIA GeForce RTX 3090", "GeForce RTX 3090"), "Ampere", "GA102", "consumer", _PCIE,
       350, (("12-pin", 1),), (4, 3, True), 24, 936, (71, 71, 35.6), GA102_WP + "; " + GEFORCE_30,
       "Founders Edition 12-pin (adapter from two 8-pin); partner cards use 2-3x 8-pin; NVLink bridge 4 links"),
    _g("GeForce RTX 3090 Ti", ("NVIDIA GeForce RTX 3090 Ti", "GeForce RTX 3090 Ti"), "Ampere", "GA102", "consumer",
       _PCIE, 450, (("12VHPWR", 1),), (4, 3, True), 24, 1008, _NONE, GEFORCE_30,
       "Founders Edition 16-pin 12VHPWR (adapter from three 8-pin); partner cards often 3x 8-pin; "
       "tensor TFLOPS not in the GA102 whitepaper V1"),
    _g("GeForce RTX 3080 Ti", ("NVIDIA GeForce RTX 3080 Ti", "GeForce RTX 3080 Ti"), "Ampere", "GA102", "consumer",
       _PCIE, 350, (("12-pin", 1),), _NO_NVL, 12, 912, _NONE, GEFORCE_30,
       "Founders Edition 12-pin; tensor TFLOPS not in the GA102 whitepaper V1"),
    _g("GeForce RTX 3080", ("NVIDIA GeForce RTX 3080", "GeForce RTX 3080"), "Ampere", "GA102", "consumer", _PCIE,
       320, (("12-pin", 1),), _NO_NVL, 10, 760, (59.5, 59.5, 29.8), GA102_WP + "; " + GEFORCE_30,
       "Founders Edition 12-pin (adapter from two 8-pin); 10 GB model"),
    _g("GeForce RTX 3070", ("NVIDIA GeForce RTX 3070", "GeForce RTX 3070"), "Ampere", "GA104", "consumer", _PCIE,
       220, (("12-pin", 1),), _NO_NVL, 8, 448, (40.6, 40.6, 20.3), GA102_WP + " (appendix, GA104); " + GEFORCE_30,
       "Founders Edition 12-pin (adapter from one 8-pin)"),
    _g("GeForce RTX 3060", ("NVIDIA GeForce RTX 3060", "GeForce RTX 3060"), "Ampere", "GA106", "consumer", _PCIE,
       170, (("8-pin", 1),), _NO_NVL, 12, 360, _NONE, GEFORCE_30,
       "no Founders Edition: partner reference boards use one 8-pin; tensor TFLOPS not stated"),
    _g("GeForce RTX 3060 Ti", ("NVIDIA GeForce RTX 3060 Ti", "GeForce RTX 3060 Ti"), "Ampere", "GA104", "consumer",
       _PCIE, 200, (("12-pin", 1),), _NO_NVL, 8, 448, _NONE, RTX_3060_FAMILY,
       "Founders Edition 12-pin (adapter from one 8-pin); 14 Gbps GDDR6 on 256 bits (a later GDDR6X model, 19 Gbps, "
       "prints the same name and only reads higher); PCI Express 4.0; tensor TFLOPS not stated"),
    _g("GeForce RTX 4090", ("NVIDIA GeForce RTX 4090",), "Ada Lovelace", "AD102", "consumer", _PCIE, 450,
       (("12VHPWR", 1),), _NO_NVL, 24, 1008, (165.2, 165.2, 82.6), ADA_WP + "; " + GEFORCE_40,
       "Founders Edition adapter: 3x 8-pin for 450 W (4x 8-pin allows the 600 W limit); no NVLink"),
    _g("GeForce RTX 4080", ("NVIDIA GeForce RTX 4080",), "Ada Lovelace", "AD103", "consumer", _PCIE, 320,
       (("12VHPWR", 1),), _NO_NVL, 16, 716.8, (97.5, 97.5, 48.7), ADA_WP + "; " + GEFORCE_40,
       "16 GB model; Founders Edition ships a 3x 8-pin adapter"),
    _g("GeForce RTX 5090", ("NVIDIA GeForce RTX 5090",), "Blackwell", "GB202", "consumer", _PCIE, 575,
       (("12V-2x6", 1),), _NO_NVL, 32, 1792, (209.5, 209.5, 104.8), GEFORCE_50 + "; " + RTX_BLACKWELL_WP,
       "Founders Edition adapter 4x 8-pin; tensor figures: the whitepaper's dense FP16/BF16 with FP32 accumulate "
       "(half its 419 TFLOPS FP16-accumulate figure, as on every GeForce part) and dense TF32"),
    _g("GeForce RTX 5080", ("NVIDIA GeForce RTX 5080",), "Blackwell", "GB203", "consumer", _PCIE, 360,
       (("12V-2x6", 1),), _NO_NVL, 16, 960, _NONE, GEFORCE_50 + "; " + RTX_BLACKWELL_WP,
       "dense BF16/FP16/TF32 not checked"),
    _g("GeForce RTX 5070 Ti", ("NVIDIA GeForce RTX 5070 Ti",), "Blackwell", "GB203", "consumer", _PCIE, 300,
       (("12V-2x6", 1),), _NO_NVL, 16, 896, _NONE, GEFORCE_50,
       "no Founders Edition; NVIDIA's spec lists a 16-pin (12V-2x6) connector; partner cards vary"),
    _g("GeForce RTX 5060 Ti", ("NVIDIA GeForce RTX 5060 Ti",), "Blackwell", "GB206", "consumer", _PCIE, 180,
       (("8-pin", 1),), _NO_NVL, 16, 448, _NONE, GEFORCE_50,
       "16 GB model (an 8 GB model exists); no Founders Edition, partner boards commonly one 8-pin"),
    # --- Workstation -----------------------------------------------------------------------------------------
    _g("Quadro RTX 6000", ("Quadro RTX 6000", "NVIDIA Quadro RTX 6000"), "Turing", "TU102", "workstation", _PCIE,
       295, (("8-pin", 1), ("6-pin", 1)), (2, 2, True), 24, 672, (None, 130.5, None), QUADRO_RTX,
       "NVLink bridge 100 GB/s total"),
    _g("Quadro RTX 8000", ("Quadro RTX 8000", "NVIDIA Quadro RTX 8000"), "Turing", "TU102", "workstation", _PCIE,
       295, (("8-pin", 1), ("6-pin", 1)), (2, 2, True), 48, 672, (None, 130.5, None), QUADRO_RTX,
       "NVLink bridge 100 GB/s total"),
    _g("RTX A4000", ("NVIDIA RTX A4000",), "Ampere", "GA104", "workstation", _PCIE, 140, (("6-pin", 1),), _NO_NVL,
       16, 448, (76.7, 76.7, None), RTX_A4000, "datasheet gives 153.4 tensor TFLOPS with sparsity; halved"),
    _g("RTX A5000", ("NVIDIA RTX A5000",), "Ampere", "GA102", "workstation", _PCIE, 230, (("8-pin", 1),),
       (4, 3, True), 24, 768, (111.1, 111.1, None), RTX_A5000,
       "datasheet gives 222.2 tensor TFLOPS with sparsity; halved; NVLink bridge 112.5 GB/s total"),
    _g("RTX A6000", ("NVIDIA RTX A6000",), "Ampere", "GA102", "workstation", _PCIE, 300, (("8-pin CPU", 1),),
       (4, 3, True), 48, 768, (154.8, 154.8, None), RTX_A6000,
       "one 8-pin CPU (EPS12V) power connector, not PCIe 8-pin; datasheet gives 309.7 tensor TFLOPS with "
       "sparsity, halved; NVLink bridge 112.5 GB/s total"),
    _g("RTX 6000 Ada Generation", ("NVIDIA RTX 6000 Ada Generation",), "Ada Lovelace", "AD102", "workstation", _PCIE,
       300, (("12VHPWR", 1),), _NO_NVL, 48, 960, (182.1, 182.1, 91.1), ADA_WP + "; " + RTX_6000_ADA,
       "16-pin PCIe CEM5 connector; no NVLink"),
    _g("RTX PRO 6000 Blackwell Workstation Edition", ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition",),
       "Blackwell", "GB202", "workstation", _PCIE, 600, (("12V-2x6", 1),), _NO_NVL, 96, 1792, _NONE, RTX_PRO_6000,
       "dense BF16/FP16/TF32 not checked (datasheet leads with FP4 AI TOPS)"),
    _g("RTX PRO 6000 Blackwell Max-Q Workstation Edition",
       ("NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition",), "Blackwell", "GB202", "workstation", _PCIE, 300,
       (("12V-2x6", 1),), _NO_NVL, 96, 1792, _NONE, RTX_PRO_6000, "dense BF16/FP16/TF32 not checked"),
    # --- Datacenter ------------------------------------------------------------------------------------------
    _g("Tesla K20m", ("Tesla K20m",), "Kepler", "GK110", "datacenter", _PCIE, 225, (("8-pin", 1), ("6-pin", 1)),
       _NO_NVL, 5, 208, _NONE, K20, "no tensor cores, no FP16 math"),
    _g("Tesla P100 PCIe 16GB", ("Tesla P100-PCIE-16GB",), "Pascal", "GP100", "datacenter", _PCIE, 250,
       (("8-pin CPU", 1),), _NO_NVL, 16, 732, (None, 18.7, None), P100_DS + "; " + P100_PCIE_PB,
       "no tensor cores: 18.7 TFLOPS is packed FP16 on CUDA cores; 8-pin CPU power connector"),
    _g("Tesla P100 SXM2 16GB", ("Tesla P100-SXM2-16GB",), "Pascal", "GP100", "datacenter", _SXM, 300, (),
       (4, 1, False), 16, 732, (None, 21.2, None), P100_DS + "; " + PASCAL_WP,
       "no tensor cores: 21.2 TFLOPS is packed FP16 on CUDA cores; SXM2: powered by the baseboard"),
    _g("Tesla V100 PCIe 16GB", ("Tesla V100-PCIE-16GB",), "Volta", "GV100", "datacenter", _PCIE, 250,
       (("8-pin CPU", 1),), _NO_NVL, 16, 900, (None, 112, None), V100_DS + "; " + V100_PCIE_PB),
    _g("Tesla V100 PCIe 32GB", ("Tesla V100-PCIE-32GB",), "Volta", "GV100", "datacenter", _PCIE, 250,
       (("8-pin CPU", 1),), _NO_NVL, 32, 900, (None, 112, None), V100_DS + "; " + V100_PCIE_PB),
    _g("Tesla V100S PCIe 32GB", ("Tesla V100S-PCIE-32GB",), "Volta", "GV100", "datacenter", _PCIE, 250,
       (("8-pin CPU", 1),), _NO_NVL, 32, 1134, (None, 130, None), V100S_DS),
    _g("Tesla V100 SXM2 16GB", ("Tesla V100-SXM2-16GB",), "Volta", "GV100", "datacenter", _SXM, 300, (),
       (6, 2, False), 16, 900, (None, 125, None), V100_DS + "; " + VOLTA_WP, "SXM2: powered by the baseboard"),
    _g("Tesla V100 SXM2 32GB", ("Tesla V100-SXM2-32GB",), "Volta", "GV100", "datacenter", _SXM, 300, (),
       (6, 2, False), 32, 900, (None, 125, None), V100_DS + "; " + VOLTA_WP, "SXM2: powered by the baseboard"),
    _g("A100 PCIe 40GB", ("NVIDIA A100-PCIE-40GB",), "Ampere", "GA100", "datacenter", _PCIE, 250,
       (("8-pin CPU", 1),), (12, 3, True), 40, 1555, (312, 312, 156), A100_DS + "; " + A100_WP,
       "NVLink bridge for two cards, 600 GB/s total"),
    _g("A100 PCIe 80GB", ("NVIDIA A100 80GB PCIe",), "Ampere", "GA100", "datacenter", _PCIE, 300,
       (("8-pin CPU", 1),), (12, 3, True), 80, 1935, (312, 312, 156), A100_DS,
       "NVLink bridge for two cards, 600 GB/s total"),
    _g("A100 SXM4 40GB", ("NVIDIA A100-SXM4-40GB",), "Ampere", "GA100", "datacenter", _SXM, 400, (), (12, 3, False),
       40, 1555, (312, 312, 156), A100_DS + "; " + A100_WP, "SXM4: powered by the baseboard"),
    _g("A100 SXM4 80GB", ("NVIDIA A100-SXM4-80GB",), "Ampere", "GA100", "datacenter", _SXM, 400, (), (12, 3, False),
       80, 2039, (312, 312, 156), A100_DS, "SXM4: powered by the baseboard"),
    _g("A10", ("NVIDIA A10",), "Ampere", "GA102", "datacenter", _PCIE, 150, (("8-pin CPU", 1),), _NO_NVL, 24, 600,
       (125, 125, 62.5), A10_DS, "datasheet's dense figures (sparse figures are twice these)"),
    _g("A30", ("NVIDIA A30",), "Ampere", "GA100", "datacenter", _PCIE, 165, (("8-pin CPU", 1),), (4, 3, True), 24,
       933, (165, 165, 82), A30_DS, "NVLink bridge 200 GB/s total (4 links x 50 GB/s, derived)"),
    _g("A40", ("NVIDIA A40",), "Ampere", "GA102", "datacenter", _PCIE, 300, (("8-pin CPU", 1),), (4, 3, True), 48,
       696, (149.7, 149.7, 74.8), A40_DS, "NVLink bridge 112.5 GB/s total"),
    _g("Tesla T4", ("Tesla T4", "NVIDIA T4"), "Turing", "TU104", "datacenter", _PCIE, 70, (), _NO_NVL, 16, 320,
       (None, 65, None), T4_DS, "slot-powered (70 W, no auxiliary connector); 65 TFLOPS mixed FP16/FP32"),
    _g("L4", ("NVIDIA L4",), "Ada Lovelace", "AD104", "datacenter", _PCIE, 72, (), _NO_NVL, 24, 300, (121, 121, 60),
       L4_DS, "slot-powered (72 W); datasheet figures with sparsity (242 / 120) halved"),
    _g("L40", ("NVIDIA L40",), "Ada Lovelace", "AD102", "datacenter", _PCIE, 300, (("12VHPWR", 1),), _NO_NVL, 48,
       864, (181.05, 181.05, 90.5), L40_DS, "16-pin PCIe CEM5 connector; sparse figures are twice these"),
    _g("L40S", ("NVIDIA L40S",), "Ada Lovelace", "AD102", "datacenter", _PCIE, 350, (("12VHPWR", 1),), _NO_NVL, 48,
       864, (362.05, 362.05, 183), L40S_DS, "16-pin PCIe CEM5 connector; sparse figures are twice these"),
    _g("H100 PCIe", ("NVIDIA H100 PCIe",), "Hopper", "GH100", "datacenter", _PCIE, 350, (("12VHPWR", 1),),
       (12, 4, True), 80, 2000, (756.5, 756.5, 378), H100_DS + "; " + HOPPER_WP,
       "board power 300-350 W; 16-pin PCIe CEM5 connector; NVLink bridge 600 GB/s total; datasheet sparse "
       "figures halved"),
    _g("H100 SXM5", ("NVIDIA H100 80GB HBM3", "H100 SXM"), "Hopper", "GH100", "datacenter", _SXM, 700, (),
       (18, 4, False), 80, 3350, (989.4, 989.4, 494.7), H100_DS + "; " + HOPPER_WP,
       "SXM5: powered by the baseboard; NVML prints 'NVIDIA H100 80GB HBM3'"),
    _g("H100 NVL", ("NVIDIA H100 NVL",), "Hopper", "GH100", "datacenter", _PCIE, 400, (("12VHPWR", 1),),
       (12, 4, True), 94, 3900, (835.5, 835.5, 417.5), H100_DS,
       "board power 350-400 W; NVLink bridge 600 GB/s total; datasheet sparse figures halved"),
    _g("H200 SXM", ("NVIDIA H200",), "Hopper", "GH100", "datacenter", _SXM, 700, (), (18, 4, False), 141, 4800,
       (989.5, 989.5, 494.5), H200_DS, "SXM: powered by the baseboard; datasheet sparse figures halved"),
    _g("H200 NVL", ("NVIDIA H200 NVL",), "Hopper", "GH100", "datacenter", _PCIE, 600, (("12V-2x6", 1),),
       (18, 4, True), 141, 4800, (835.5, 835.5, 417.5), H200_DS,
       "max TDP up to 600 W; NVLink bridge (2- or 4-way) 900 GB/s per GPU; datasheet sparse figures halved"),
    _g("B200", ("NVIDIA B200",), "Blackwell", "GB100", "datacenter", _SXM, 1000, (), (18, 5, False), 180, 8000,
       (2250, 2250, 1125), HGX_B200,
       "HGX baseboard, powered by it; per GPU = 8-GPU HGX B200 totals / 8, sparse figures halved"),
    _g("GB200", ("NVIDIA GB200", "HGX GB200"), "Blackwell", "GB100", "datacenter", "superchip", None, (),
       (18, 5, False), 186, 8000, (2500, 2500, 1250), GB200_NVL72,
       "per GPU = GB200 NVL72 totals / 72, sparse figures halved; board power per GPU not published "
       "separately (the superchip is powered by the rack); some drivers print 'NVIDIA Graphics Device', "
       "multinode nvbandwidth on OCI's GB200 nodes prints 'HGX GB200'"),
    _g("GB300", ("NVIDIA GB300",), "Blackwell", "B300", "datacenter", "superchip", None, (), (18, 5, False), 288,
       8000, (2500, 2500, 1250), GB300_NVL72,
       "Blackwell Ultra; per GPU = GB300 NVL72 totals / 72 (576 TB/s; FP16/BF16 360 and TF32 180 PFLOPS with "
       "sparsity, halved), 288 GB HBM3e as NVIDIA markets it; board power per GPU not published separately; "
       "joined to its Grace CPU by NVLink-C2C, not a PCIe slot"),
)
# fmt: on

# --- lookup ------------------------------------------------------------------------------------------------
_PREFIXES = ("nvidia ", "geforce ", "tesla ")
_TRUNC_RE = re.compile(r"(\.\.\.|…)\s*$")


def normalize(name: str) -> str:
    """Lower-case, collapse spaces, drop the "NVIDIA " / "GeForce " / "Tesla " prefixes."""
    s = " ".join(name.strip().lower().split())
    changed = True
    while changed:
        changed = False
        for p in _PREFIXES:
            if s.startswith(p):
                s = s[len(p) :]
                changed = True
    return s


def _keys(spec: GpuSpec) -> set[str]:
    return {normalize(spec.name), *(normalize(a) for a in spec.aliases)}


_INDEX: dict[str, GpuSpec] = {}
for _spec in GPUS:
    for _k in _keys(_spec):
        if _k in _INDEX and _INDEX[_k] is not _spec:
            raise RuntimeError(f"catalog key {_k!r} names two GPUs")
        _INDEX[_k] = _spec


def is_truncated(name: str) -> bool:
    """True for names nvidia-smi cut to fit its table ("NVIDIA RTX 6000 Ada Gene...")."""
    return _TRUNC_RE.search(name) is not None


def _prefix_matches(stem: str) -> list[GpuSpec]:
    found: list[GpuSpec] = []
    for key, spec in _INDEX.items():
        if key.startswith(stem) and spec not in found:
            found.append(spec)
    return found


def lookup(name: str) -> GpuSpec | None:
    """The catalog entry for a GPU name as NVML or nvidia-smi prints it; None when unknown or ambiguous.

    Case and the "NVIDIA " / "GeForce " / "Tesla " prefixes are ignored. A name that nvidia-smi truncated with
    "..." matches when exactly one GPU starts with what is left. Other names must match a name or alias
    exactly: "RTX 6000" alone is ambiguous (Quadro RTX 6000, RTX 6000 Ada, RTX PRO 6000) and gives None, as
    does "RTX 5060" (not the 5060 Ti).
    """
    if is_truncated(name):
        stem = normalize(_TRUNC_RE.sub("", name))
        if not stem:
            return None
        matches = _prefix_matches(stem)
        return matches[0] if len(matches) == 1 else None
    return _INDEX.get(normalize(name))


def candidates(name: str, limit: int = 5) -> list[str]:
    """Canonical names close to ``name``, best first: what the user may have meant (for error messages)."""
    stem = normalize(_TRUNC_RE.sub("", name))
    out: list[str] = [spec.name for spec in _prefix_matches(stem)] if stem else []
    # "RTX 6000" also means the Quadro RTX 6000 and the RTX PRO 6000: every word of the query in the name.
    words = stem.split()
    for spec in GPUS:
        if words and all(w in normalize(spec.name).split() for w in words) and spec.name not in out:
            out.append(spec.name)
    for key in difflib.get_close_matches(stem, list(_INDEX), n=limit * 2, cutoff=0.6):
        if _INDEX[key].name not in out:
            out.append(_INDEX[key].name)
    return out[:limit]


def all_names() -> list[str]:
    return [g.name for g in GPUS]

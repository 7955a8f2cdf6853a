"""Architecture whitepapers and specifications that more than one fact module cites (the GPU catalog and the
NVLink generations): defined once here, so neither module has to import the other for a citation."""

PASCAL_WP = "NVIDIA Tesla P100 whitepaper (WP-08019-001), https://images.nvidia.com/content/pdf/tesla/whitepaper/pascal-architecture-whitepaper.pdf"
VOLTA_WP = "NVIDIA Tesla V100 GPU Architecture whitepaper (WP-08608-001), https://images.nvidia.com/content/volta-architecture/pdf/volta-architecture-whitepaper.pdf"
TURING_WP = "NVIDIA Turing GPU Architecture whitepaper (WP-09183-001), https://images.nvidia.com/aem-dam/en-zz/Solutions/design-visualization/technologies/turing-architecture/NVIDIA-Turing-Architecture-Whitepaper.pdf"
A100_WP = "NVIDIA A100 Tensor Core GPU Architecture whitepaper, https://images.nvidia.com/aem-dam/en-zz/Solutions/data-center/nvidia-ampere-architecture-whitepaper.pdf"
GA102_WP = "NVIDIA Ampere GA102 GPU Architecture whitepaper V1, https://www.nvidia.com/content/dam/en-zz/Solutions/geforce/ampere/pdf/NVIDIA-ampere-GA102-GPU-Architecture-Whitepaper-V1.pdf"
HOPPER_WP = "NVIDIA H100 Tensor Core GPU Architecture whitepaper, https://resources.nvidia.com/en-us-tensor-core/gtc22-whitepaper-hopper"

# How NCCL lays its collectives on an NVLink mesh (DGX-1's hybrid cube mesh): rings as concurrent channels over
# the NVLink links, and GPUs that cannot close an NVLink ring falling back to PCIe or shared memory.
NCCL_RINGS = "NVIDIA/nccl issues #299 and #301 (maintainers' answers); NCCL GTC 2019 talk S9656"
# Where GPUDirect RDMA pays off: the GPU and the NIC under PCIe switches, not across the CPU sockets.
GPUDIRECT_RDMA = (
    "NCCL docs, Environment Variables: NCCL_NET_GDR_LEVEL (GPU Direct RDMA by GPU-NIC distance: PIX, PXB, PHB, "
    "SYS); NVIDIA GPUDirect RDMA documentation, Supported Systems: a path of PCIe switches only is optimal, one "
    "CPU/IOH works with less bandwidth, a path across the CPU-socket interconnect (QPI/HT) is the worst"
)

# rigcheck's own reference measurements, cited by what they are (the card, its driver, the date, the tool) rather
# than by where the files lie: one NVIDIA H100 80GB HBM3 (SXM5 board, 700 W cap, in a VM), torch 2.11.0+cu130.
H100_REFERENCE_RUN = "rigcheck's reference run: NVIDIA H100 80GB HBM3 SXM5, driver 580.159.04, CUDA 13.0, 2026-11-22"
# The fractions' one-line citation: the run and every tool it used (tests/calibration/manifest.json cites each
# figure of the run with its own tool, in the same words).
H100_REF_TOOLS = f"{H100_REFERENCE_RUN} (mamf-finder.py, nvbandwidth v0.8, torch 2.11)"

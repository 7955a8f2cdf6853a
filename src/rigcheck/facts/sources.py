"""Architecture whitepapers and specifications that more than one fact module cites (the GPU catalog and the
NVLink generations): defined once here, so neither module has to import the other for a citation."""

PASCAL_WP = "NVIDIA Tesla P100 whitepaper (WP-08019-001), https://images.nvidia.com/content/pdf/tesla/whitepaper/pascal-architecture-whitepaper.pdf"
VOLTA_WP = "NVIDIA Tesla V100 GPU Architecture whitepaper (WP-08608-001), https://images.nvidia.com/content/volta-architecture/pdf/volta-architecture-whitepaper.pdf"
TURING_WP = "NVIDIA Turing GPU Architecture whitepaper (WP-09183-001), https://images.nvidia.com/aem-dam/en-zz/Solutions/design-visualization/technologies/turing-architecture/NVIDIA-Turing-Architecture-Whitepaper.pdf"
A100_WP = "NVIDIA A100 Tensor Core GPU Architecture whitepaper, https://images.nvidia.com/aem-dam/en-zz/Solutions/data-center/nvidia-ampere-architecture-whitepaper.pdf"
GA102_WP = "NVIDIA Ampere GA102 GPU Architecture whitepaper V1, https://www.nvidia.com/content/dam/en-zz/Solutions/geforce/ampere/pdf/NVIDIA-ampere-GA102-GPU-Architecture-Whitepaper-V1.pdf"
HOPPER_WP = "NVIDIA H100 Tensor Core GPU Architecture whitepaper, https://resources.nvidia.com/en-us-tensor-core/gtc22-whitepaper-hopper"

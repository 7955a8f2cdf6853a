"""What is true of hardware and software, each number with its source: the GPU catalog, connectors, NVLink, PCIe
(``pcie.gpu_pcie_link``: one function for a GPU's link), software minimums, Xid meanings, what any card can
plausibly report, PCI device ids, the legend, the published figures and the bands verify and `bench --from`
judge against (``bands.py``, ``allreduce_bands.py``, ``collective_bands.py``).

Rules: data and pure functions over it; imports only the leaves (errors, cpulist); no I/O."""

"""Other tools' saved outputs: nccl-tests (``nccl_tests.py`` -> a collective document, ``nccl_tests_doc.py``),
nvbandwidth and p2pBandwidthLatencyTest (``nvbandwidth.py``, ``p2p_latency_test.py``, ``reference_import.py``:
which tool, which document), bandwidthTest, mamf-finder, gpu-burn and `dcgmi diag` (``dcgm_diag.py`` with
``-j``, ``dcgm_diag_text.py`` without; ``dcgm_machine.py``: the GPUs it ran on). Rules as readers/."""

"""A pasted `nvidia-smi -q` fragment is read by the block it holds: the health blocks (Remapped Rows, Retired
Pages, ECC Errors) are recognised as -q as the clock-reason and power blocks are."""

from __future__ import annotations

from pathlib import Path

from rigcheck.readers.from_file import detect_kind, load_text

# leptonai/gpud pull request #80 (https://github.com/leptonai/gpud/pull/80): the Remapped Rows block of a GPU that
# needs a reset, as its description quotes it; kept as an incident in tests/incidents.
REMAPPED = Path(__file__).parent.parent / "incidents" / "row-remap-pending-gpud" / "q-remapped-rows.txt"


def test_a_remapped_rows_block_alone_is_read_as_q_with_its_pending_remap() -> None:
    text = REMAPPED.read_text(encoding="utf-8")
    assert detect_kind(text) == "nvidia-smi-q"
    [gpu] = load_text(text, str(REMAPPED)).gpus
    assert (gpu.remapped_rows_correctable, gpu.remapped_rows_uncorrectable) == (0, 4)
    assert gpu.remapped_rows_pending is True


RETIRED = (
    "    Retired Pages\n        Single Bit ECC                    : 0\n        Double Bit ECC                    : 2\n"
    "        Pending Page Blacklist            : Yes\n"
)
# The ECC block of the H100 `nvidia-smi -q` in tests/fixtures/corpus/h100-vm/q.txt (its lines 146-158).
ECC = Path(__file__).parent.parent / "fixtures" / "corpus" / "h100-vm" / "q.txt"


def test_a_retired_pages_block_alone_is_read_with_its_pending_retirement() -> None:
    assert detect_kind(RETIRED) == "nvidia-smi-q"
    [gpu] = load_text(RETIRED, "retired.txt").gpus
    assert (gpu.retired_pages_sbe, gpu.retired_pages_dbe, gpu.retired_pages_pending) == (0, 2, True)


def test_an_ecc_errors_block_alone_is_read_with_its_counters() -> None:
    block = "\n".join(ECC.read_text(encoding="utf-8").splitlines()[145:158]) + "\n"
    assert block.startswith("    ECC Errors")
    assert detect_kind(block) == "nvidia-smi-q"
    [gpu] = load_text(block, "ecc.txt").gpus
    assert (gpu.ecc_corrected_volatile, gpu.ecc_uncorrected_volatile, gpu.ecc_uncorrected_aggregate) == (0, 0, 0)


def test_a_word_of_prose_is_not_a_block() -> None:
    assert detect_kind("the remapped rows of the GPU are pending a reset\n") is None

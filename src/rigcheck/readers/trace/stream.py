"""Telemetry traces on disk: read any of four formats into a :class:`Trace`.

Formats (told apart by their first line):

- **nvidia-smi CSV**, as ``nvidia-smi --query-gpu=timestamp,index,power.draw,... --format=csv[,nounits]
  -lms 100`` writes it, parsed by smi_csv.py. Columns are found by their header names, in any order and any subset;
  units in the header (``power.draw [W]``) and in the values (``127.87 W``) are stripped; ``[N/A]``, ``N/A``,
  ``[Not Supported]`` become ``None``; ``[GPU is lost]`` marks the GPU lost at that sample. Clock-event
  reasons come from the hex bit mask (``clocks_event_reasons.active``, or the older
  ``clocks_throttle_reasons.active``), decoded with nvml.h's bit order (bit i = CLOCK_EVENT_REASONS[i]),
  or from the per-reason columns (``clocks_event_reasons.sw_power_cap`` = ``Active`` / ``Not Active``).
  Timestamps (``2026/11/22 18:08:32.717``) become seconds since the first sample. Several GPUs
  interleave, told apart by ``index`` (else ``uuid`` / ``pci.bus_id``). Columns rigcheck does not use
  are ignored, and named in the trace's diagnostics.
- **nvidia-smi dmon** output (``# gpu pwr gtemp ...`` or ``#Date Time gpu ...`` on line 1), read by
  rigcheck.readers.trace.dmon.
- **rigcheck JSONL** and **rigcheck CSV** (``rigcheck.trace/2``, ``/1`` read too): rigcheck's own file format,
  read and written by rigcheck.model.trace. A CSV trace (``t_s,gpu,...`` on line 1) has its header in the sidecar
  ``FILE.meta.json``, read here when it is there; without it the samples still read (a diagnostic says what is
  unknown). An older CSV trace, with its header on line 1 (``# rigcheck.trace/1 {...}``), needs none.

A last line cut short (the writer crashed mid-line) is skipped with a diagnostic; anything else that
does not parse is a :class:`ParseError` naming the file and line. TraceStream.batches hands an nvidia-smi CSV
over as per-GPU columns instead (batches.py), for `burn --analyze`. Both read the file's lines through
lines.py.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import BinaryIO

from rigcheck.errors import InputError, ParseError
from rigcheck.inputs import input_limits, open_input, read_input_text
from rigcheck.model.telemetry import Sample, SampleBatch, Trace
from rigcheck.model.trace import (
    CSV_COMMENT,
    is_rigcheck_csv_columns,
    read_rigcheck_csv,
    read_rigcheck_jsonl,
    sidecar_path,
)
from rigcheck.readers.trace.batches import smi_batches
from rigcheck.readers.trace.dmon import DmonReader, header_names
from rigcheck.readers.trace.lines import numbered, text_blocks
from rigcheck.readers.trace.smi_csv import SmiCsvReader

# --- reading ------------------------------------------------------------------------------------

EXPECTED = "a telemetry trace (nvidia-smi --query-gpu CSV, nvidia-smi dmon output, or rigcheck CSV/JSONL)"


class TraceStream:
    """A trace file read in one pass as it is iterated: memory does not grow with the file's length.

    ``header`` is a :class:`Trace` without samples: its source, GPUs, interval, start and diagnostics are
    filled in as the file is read (the header before the first sample; an nvidia-smi CSV's interval, names
    and default limits as rows arrive, final once the iteration ends). Iterating yields each :class:`Sample`
    in file order; errors are InputError / ParseError naming the file and line.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self.header = Trace(source="nvidia-smi-csv", path=path)

    def __iter__(self) -> Iterator[Sample]:
        # A CSV field over 128 KiB, JSON nested past the stack, a 5,000-digit number: a damaged file, one line.
        with input_limits(self.path):
            yield from self._samples()

    def _samples(self, lines: Iterator[tuple[int, str]] | None = None) -> Iterator[Sample]:
        lines = numbered_lines(self.path, EXPECTED) if lines is None else lines
        first_no, first = next(lines)
        lines = itertools.chain([(first_no, first)], lines)
        head = first.strip()
        if header_names(head) is not None:  # before the CSV comment: both start with "# "
            samples = DmonReader(self.path, self.header).read(lines)
        elif head.startswith(CSV_COMMENT.strip()):
            samples = read_rigcheck_csv(lines, self.path, self.header)
        elif head.startswith("{"):
            samples = read_rigcheck_jsonl(lines, self.path, self.header)
        elif is_rigcheck_csv_columns(head):
            samples = read_rigcheck_csv(lines, self.path, self.header, meta=read_sidecar(self.path))
        else:
            samples = SmiCsvReader(self.path, self.header).read(lines)
        first_sample = next(samples, None)
        if first_sample is None:
            raise ParseError("no samples in the trace", path=self.path)
        yield first_sample
        yield from samples  # delegated in C: no Python frame of this generator per sample

    def batches(self) -> Iterator[Sample | SampleBatch]:
        """What iterating yields, but an nvidia-smi CSV with its timestamp first comes as SampleBatch es: per GPU,
        a block of the file at a time (each GPU's in time order), one Reading object for every row that prints
        the same (so a consumer judges each distinct row once). Other traces come as Samples."""
        with input_limits(self.path):
            yield from self._batches()

    def _batches(self) -> Iterator[Sample | SampleBatch]:
        with open_input(self.path) as fh:
            blocks = text_blocks(fh, self.path, EXPECTED)
            number, lines = _first_text(blocks, self.path)
            head = lines[0].strip()
            if head.startswith(("#", "{")) or is_rigcheck_csv_columns(head):  # not an nvidia-smi CSV
                yield from self._samples(numbered(itertools.chain([(number - 1, lines)], blocks)))
                return
            rest = itertools.chain([(number, lines[1:])], blocks)
            header_line = lines[0]
            del lines
            any_sample = False
            for item in smi_batches(SmiCsvReader(self.path, self.header), number, header_line, rest):
                any_sample = True
                yield item
            if not any_sample:
                raise ParseError("no samples in the trace", path=self.path)


def _first_text(blocks: Iterator[tuple[int, list[str]]], path: str) -> tuple[int, list[str]]:
    """The number of the first line that is not blank, and its block's lines from it on."""
    for base, lines in blocks:
        for k, line in enumerate(lines):
            if line.strip():
                return base + k + 1, lines[k:]
    raise InputError(f"empty file: expected {EXPECTED}", path=path)


def read_sidecar(path: str) -> tuple[str, str] | None:
    """A CSV trace's sidecar (its path and text) where there is one beside it (none for standard input)."""
    if path == "-":
        return None
    meta = sidecar_path(path)
    if not meta.is_file():
        return None
    return str(meta), read_input_text(str(meta), "the rigcheck.trace header of a CSV trace (JSON)")


def read_trace(path: str) -> Trace:
    """Read a whole trace file ("-" for stdin) in any of the three formats into memory."""
    stream = TraceStream(path)
    samples = list(stream)
    trace = stream.header
    trace.samples = samples
    return trace


def numbered_lines(path: str, expected: str = EXPECTED) -> Iterator[tuple[int, str]]:
    """The non-empty lines of a text file ("-" is stdin), numbered from 1, read a chunk at a time.

    No cap on the file's length (a 24 h trace is hundreds of MiB), but input that cannot be a text output
    ends in one line of InputError at once: a NUL or other binary byte, a line over STREAM_MAX_LINE bytes
    (/dev/zero, a binary file without newlines), or more than STREAM_MAX_BYTES in all (an endless pipe).
    """
    with open_input(path) as fh:
        yield from _chunked_lines(fh, path, expected)


def _chunked_lines(fh: BinaryIO, path: str, expected: str) -> Iterator[tuple[int, str]]:
    any_text = False
    for base, lines in text_blocks(fh, path, expected):
        for number, line_text in enumerate(lines, base + 1):
            if line_text.strip():
                any_text = True
                yield number, line_text
    if not any_text:
        raise InputError(f"empty file: expected {expected}", path=path)

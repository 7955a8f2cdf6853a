"""Read the boxed table `dcgmi diag` prints without ``-j`` into the same :class:`DcgmDiag` the JSON reader gives.

The table is DCGM's ``| Diagnostic | Result |`` box (dcgmi/Diag.cpp, NVIDIA/DCGM): a name cell of 26 characters,
a result cell of 45, category rules (``|-----  Deployment  ----+---|``, ``+-----  Hardware  ---+---+``: Metadata,
Deployment, Integration, Hardware, Stress, and Performance/Training in older releases), and these rows:

- DCGM 1.x-3.x: a deployment test and its word (``| Persistence Mode | Fail |``), a plugin and its GPUs
  (``Pass - All``, ``Fail - GPU: 0``, ``Pass - GPUs: 1, 2, 3``, one row per status, the name on the first only);
- DCGM 4.x: a test (lower-case plugin names: ``software``, ``memory``, ``pcie``) with its overall word, then one
  row per GPU, ``GPU0: Pass``;
- a message under its test: ``Warning``, ``Error`` or ``Info`` in the name cell, the text in 45-character pieces on
  the rows below (DCGM cuts it mid-word: the pieces are joined as printed);
- Metadata (3.3 on): ``DCGM Version``, ``Driver Version Detected``, ``GPU Device IDs Detected``.

A plugin's "All" names every GPU of the run: those the table names elsewhere, else the GPUs the judge knows
(``ALL_GPUS``, resolved by rigcheck.checks.verify.dcgm). Excerpts are read as far as they go: lines outside the box
are not the table; a row the text ends inside (no closing ``|``) is kept as printed, with a note; an Error row with
no test row above it is a failed result (DCGM prints Error rows under failed tests only), of the GPU its message
names first, else of the node; a Warning or Info row alone is kept as a result of unknown status (judged
incomplete), never dropped. A text that holds no
row this reader can tell the status of is refused with how to save the JSON instead (``RUN_JSON``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Final

from rigcheck.errors import InputError
from rigcheck.model.dcgm import ALL_GPUS, DcgmDevice, DcgmDiag, DcgmMessage, DcgmResult, DcgmStatus, DcgmTest
from rigcheck.readers.smi.ansi import strip_ansi

RUN_JSON: Final = "run `dcgmi diag -r 3 -j > diag.json`"
_PIECE: Final = 45  # DATA_INFO_TAG_LEN in dcgmi/Diag.cpp: a message is printed in pieces of this many characters
_CATEGORY = re.compile(r"^[|+]-{3,}\s+([A-Za-z][A-Za-z ]*?)\s+-+\+-+[|+]\s*$")
_HEADER = re.compile(r"^\|\s*Diagnostic\s*\|\s*Result\s*\|\s*$")
_RULE = re.compile(r"^\+[-=]+\+[-=]+\+\s*$")
_WORD: Final[dict[str, DcgmStatus]] = {"pass": "pass", "fail": "fail", "skip": "skip", "warn": "warn"}
# 3.x: "Pass - All", "Fail - GPU: 0", "Pass - GPUs: 1, 2, 3"; 1.x-3.x deployment and 4.x overall: "Pass".
_STATUS = re.compile(r"^(Pass|Fail|Skip|Warn)(?:\s+-\s+(All|GPUs?:\s*[\d,\s]+))?\s*$", re.IGNORECASE)
_PER_GPU = re.compile(r"^GPU\s*(\d+)\s*:\s*(Pass|Fail|Skip|Warn)\s*$", re.IGNORECASE)  # 4.x: "GPU0: Pass"
_MESSAGE_NAMES: Final = ("warning", "error", "info")
_NAMES_GPU = re.compile(r"^\s*GPU\s*(\d+)\b")  # "GPU 0 Thermal violations ...", "GPU0: ..."
_METADATA: Final = "metadata"


def looks_like_dcgm_text(text: str) -> bool:
    """Whether ``text`` holds a `dcgmi diag` table: its header or a category rule, or (an excerpt of rows) a plugin
    row only dcgmi writes ("Fail - GPU: 0", "Pass - All", "GPU0: Pass"); a bare "| name | Pass |" row of some
    other table is not enough."""
    rows = [line.strip() for line in strip_ansi(text).splitlines()]
    if any(_HEADER.match(r) or _CATEGORY.match(r) for r in rows):
        return True
    for row in rows:
        cells = _cells(row)
        if cells is None:
            continue
        status = _status_of(cells[1])
        if (status is not None and status[1] is not None) or (not cells[0] and _PER_GPU.match(cells[1].strip())):
            return True
    return False


@dataclass
class _Open:
    """The test being read, its 4.x overall word (until its GPU rows replace it), and the message whose pieces are
    still coming."""

    test: DcgmTest
    overall: DcgmResult | None = None
    message: list[str] | None = None
    kind: str = ""
    subject: int | None = None


@dataclass
class _Reader:
    path: str | None
    tests: list[DcgmTest] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    version: str | None = None
    driver: str | None = None
    device_ids: list[str] = field(default_factory=list)  # the Metadata's "GPU Device IDs Detected", in order
    category: str | None = None
    current: _Open | None = None
    explicit: set[int] = field(default_factory=set)  # GPUs some row names by number

    def close_message(self) -> None:
        cur = self.current
        if cur is None or cur.message is None:
            return
        text = " ".join("".join(cur.message).split())
        cur.message = None
        if text:
            _attach(cur.test, cur.kind, text, cur.subject)

    def close_test(self) -> None:
        """The test above is complete: its overall word speaks for the node where no GPU row does, or where it
        fails and no GPU row says so (as the JSON reader treats a 4.x test_summary)."""
        self.close_message()
        cur = self.current
        self.current = None
        if cur is None or cur.overall is None:
            return
        results = cur.test.results
        if not results or (cur.overall.status == "fail" and all(r.status != "fail" for r in results)):
            results.append(cur.overall)

    def open_test(self, name: str) -> DcgmTest:
        self.close_test()
        test = DcgmTest(name=name, category=self.category, results=[])
        self.tests.append(test)
        self.current = _Open(test)
        return test


def parse_dcgm_diag_table(text: str, *, path: str | None = None) -> DcgmDiag:
    """The diagnostic a `dcgmi diag` table holds; InputError saying how to get the JSON when none can be read."""
    reader = _Reader(path)
    lines = strip_ansi(text).splitlines()
    last_row = max((i for i, line in enumerate(lines) if line.strip().startswith("|")), default=-1)
    for number, raw in enumerate(lines, start=1):
        line = raw.strip()
        category = _CATEGORY.match(line)
        if category is not None:
            reader.close_test()
            reader.category = category.group(1).strip()
            continue
        if not line.startswith("|") or _HEADER.match(line) or _RULE.match(line):
            continue
        cells = _cells(line)
        if cells is None:  # no closing bar: the text ends inside this row, or the paste lost the bar
            cells = _open_cells(line)
            if number - 1 == last_row:
                reader.notes.append(f"the table ends inside its line {number} ({line!r}): read as printed")
        _row(reader, cells, number)
    reader.close_test()
    _resolve_all(reader)
    if not any(t.results for t in reader.tests):
        raise InputError(
            f"a `dcgmi diag` table with no test result rigcheck can read: {RUN_JSON} and give that file",
            path=path,
        )
    return DcgmDiag(
        # DCGM 4.x names its tests by plugin, in lower case (software, memory, pcie), and prints a row per GPU.
        layout="4.x" if any(t.name.islower() for t in reader.tests) else "3.x",
        version=reader.version,
        driver=reader.driver,
        runtime_error=None,
        tests=reader.tests,
        source="text",
        gpu_count=len(reader.device_ids) or None,
        notes=reader.notes,
        devices=[DcgmDevice(gpu=None, device_id=d) for d in reader.device_ids],
    )


def _cells(line: str) -> tuple[str, str] | None:
    """(name, result) of a whole ``| name | result |`` row, the result as printed (its pieces keep their spaces);
    None when the row has no closing bar."""
    stripped = line.rstrip()
    if len(stripped) < 3 or not stripped.startswith("|") or not stripped.endswith("|") or "|" not in stripped[1:-1]:
        return None
    name, result = stripped[1:-1].split("|", 1)
    return name.strip(), _piece(result)


def _open_cells(line: str) -> tuple[str, str]:
    """(name, result) of a row without its closing bar: the name alone where no bar follows it."""
    body = line[1:]
    if "|" not in body:
        return body.strip(), ""
    name, result = body.split("|", 1)
    return name.strip(), _piece(result)


def _piece(cell: str) -> str:
    """A result cell's text: after the one space DCGM pads it with, the 45 characters a message piece fills (a
    piece may end in a space that belongs to the message: "... cuCtxCreate Check " + "DCGM and ..."), else, where
    a paste lost the padding, the text as it stands."""
    body = cell[1:] if cell.startswith(" ") else cell
    return body[:_PIECE] if len(body) >= _PIECE else body.rstrip()


def _status_of(cell: str) -> tuple[DcgmStatus, str | None] | None:
    m = _STATUS.match(cell.strip())
    return (_WORD[m.group(1).lower()], m.group(2)) if m is not None else None


def _row(reader: _Reader, cells: tuple[str, str], number: int) -> None:
    name, result = cells
    if (reader.category or "").lower() == _METADATA and name:
        _metadata(reader, name, result.strip())
        return
    kind = name.split(":")[0].strip().lower()
    if kind in _MESSAGE_NAMES:
        _message(reader, kind, name, result)
        return
    if not name:
        cur = reader.current
        is_status = _PER_GPU.match(result.strip()) is not None or _status_of(result) is not None
        if cur is not None and cur.message is not None and not is_status:
            cur.message.append(result)  # the next piece of the message above
            return
        _continuation(reader, result, number)
        return
    test = reader.open_test(name)
    status = _status_of(result)
    if status is not None:
        _add_status(reader, status, result.strip(), first=True)
    elif result.strip():
        test.results.append(_result(None, "unknown", result.strip()))
    else:
        reader.notes.append(f"DCGM test {name!r} (line {number}): no result printed: not judged")


def _message(reader: _Reader, kind: str, name: str, first_piece: str) -> None:
    """A Warning/Error/Info row: the first piece of a message of the test above."""
    reader.close_message()
    if reader.current is None:  # no test row above it (an excerpt, a deployment check that stopped the run)
        test = reader.open_test(reader.category or "DCGM")
        named_gpu = _NAMES_GPU.match(first_piece)
        # DCGM prints an Error row under a test that failed, never under one that passed: the test failed, on the
        # GPU the message names where it names one. A Warning or an Info row alone says no result: not judged.
        status: DcgmStatus = "fail" if kind == "error" else "unknown"
        gpu = int(named_gpu.group(1)) if named_gpu and kind == "error" else None
        if gpu is not None:
            reader.explicit.add(gpu)
        test.results.append(_result(gpu, status, f"{name} row without its test's result"))
    assert reader.current is not None
    named = _NAMES_GPU.search(name.split(":", 1)[1]) if ":" in name else None
    reader.current.message, reader.current.kind = [first_piece], kind
    reader.current.subject = int(named.group(1)) if named else None


def _continuation(reader: _Reader, result: str, number: int) -> None:
    """A row with an empty name: another status of the test above (3.x), or one GPU's result (4.x)."""
    cur = reader.current
    text = result.strip()
    if not text:
        return
    if cur is None:
        reader.notes.append(f"line {number} ({text!r}) follows no test row: not read")
        return
    reader.close_message()
    per_gpu = _PER_GPU.match(text)
    if per_gpu is not None:
        gpu = int(per_gpu.group(1))
        reader.explicit.add(gpu)
        cur.test.results.append(_result(gpu, _WORD[per_gpu.group(2).lower()], text))
        return
    status = _status_of(text)
    if status is not None:
        _add_status(reader, status, text, first=False)
        return
    reader.notes.append(f"DCGM test {cur.test.name!r}: line {number} ({text!r}) is not a status rigcheck reads")


def _result(gpu: int | None, status: DcgmStatus, text: str, entity: str | None = None) -> DcgmResult:
    return DcgmResult(gpu=gpu, entity=entity, status=status, status_text=text, warnings=[], info=[])


def _add_status(reader: _Reader, status: tuple[DcgmStatus, str | None], text: str, *, first: bool) -> None:
    cur = reader.current
    assert cur is not None
    word, who = status
    if who is None:
        if first and cur.test.name.islower():  # 4.x: the test's overall word, until its GPU rows come
            cur.overall = _result(None, word, text)
        else:  # a deployment test's word: of the node
            cur.test.results.append(_result(None, word, text))
    elif who.lower() == "all":
        cur.test.results.append(_result(None, word, text, ALL_GPUS))
    else:
        for gpu in (int(n) for n in re.findall(r"\d+", who)):
            reader.explicit.add(gpu)
            cur.test.results.append(_result(gpu, word, text))


def _attach(test: DcgmTest, kind: str, text: str, subject: int | None) -> None:
    """A Warning/Error/Info message on the result of the GPU it names, else on the test's results that did not
    pass (where none did not pass, on all of them)."""
    named = _NAMES_GPU.match(text)
    gpu = subject if subject is not None else int(named.group(1)) if named else None
    targets = [i for i, r in enumerate(test.results) if gpu is not None and r.gpu == gpu]
    if not targets:
        targets = [i for i, r in enumerate(test.results) if r.status != "pass"] or list(range(len(test.results)))
    for i in targets:
        r = test.results[i]
        if kind == "info":
            test.results[i] = r.model_copy(update={"info": [*r.info, text]})
        else:
            test.results[i] = r.model_copy(update={"warnings": [*r.warnings, DcgmMessage(text=text, error_id=None)]})


def _metadata(reader: _Reader, name: str, value: str) -> None:
    key = name.lower()
    if key == "dcgm version":
        reader.version = value or None
    elif key == "driver version detected":
        reader.driver = value or None
    elif key == "gpu device ids detected":
        reader.device_ids = [v for v in re.split(r"[,\s]+", value) if v]


def _resolve_all(reader: _Reader) -> None:
    """ "All" is every GPU the table names elsewhere, where it names some (each keeping the messages that name it
    or no GPU); else it stays ALL_GPUS."""
    if not reader.explicit:
        return
    for test in reader.tests:
        resolved: list[DcgmResult] = []
        for r in test.results:
            if r.entity != ALL_GPUS:
                resolved.append(r)
                continue
            for gpu in sorted(reader.explicit):
                warnings = [w for w in r.warnings if _names(w.text) in (None, gpu)]
                info = [i for i in r.info if _names(i) in (None, gpu)]
                resolved.append(r.model_copy(update={"gpu": gpu, "entity": None, "warnings": warnings, "info": info}))
        test.results[:] = resolved


def _names(message: str) -> int | None:
    m = _NAMES_GPU.match(message)
    return int(m.group(1)) if m else None

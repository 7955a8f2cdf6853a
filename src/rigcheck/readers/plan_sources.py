"""What `rigcheck plan --from FILE` reads: a saved `rigcheck bench ... --json` result, or anything the other `--from`
readers take as a snapshot (a snapshot, `nvidia-smi topo -m` ...). plan/ judges what they hold; it reads nothing."""

from __future__ import annotations

import json
from typing import Any

from rigcheck.errors import InputError
from rigcheck.inputs import read_input_text
from rigcheck.model.snapshot import Snapshot

WHAT = "a bench result, a snapshot or a topo -m file"


def read_bench_document(path: str) -> dict[str, Any] | None:
    """The file's ``rigcheck.bench/*`` document, or None when it holds anything else (not JSON, hostile JSON,
    another document). A file that cannot be read is an InputError."""
    text = read_input_text(path, WHAT)
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):  # not JSON, or hostile JSON: read_plan_snapshot says which in one line
        return None
    return data if isinstance(data, dict) and str(data.get("schema", "")).startswith("rigcheck.bench/") else None


def read_plan_snapshot(path: str) -> Snapshot:
    """A --from file that is no bench result, read as a snapshot; one line naming both when it is neither."""
    from rigcheck.readers.from_file import load_file

    try:
        return load_file(path)
    except InputError as exc:
        raise InputError(
            f"neither a rigcheck.bench/1 result nor a snapshot/topology: {exc.detail}", path=path
        ) from None

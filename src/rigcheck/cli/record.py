"""`--ledger FILE` on verify, doctor and fleet (the option is cli/common.RecordOption; this module is loaded only
when it is given): the document a command just printed, recorded in the ledger
(`rigcheck history`). Recording is a side effect: a ledger that cannot take it (busy past its timeout, not a
ledger, unwritable) is one line on stderr, and the command's exit code stays its verdict's."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

    from rigcheck.model.document import Document


def record(doc: Document, ledger: Path | None, command: str) -> None:
    """Add ``doc`` to ``ledger`` (nothing without one); a failure is said on stderr, never raised."""
    if ledger is None:
        return
    from rigcheck.cli.history import refresh_trends
    from rigcheck.cli.streams import note
    from rigcheck.errors import RigcheckError
    from rigcheck.ledger.ingest import add_document
    from rigcheck.ledger.store import open_ledger
    from rigcheck.report.render import json_text

    try:
        with open_ledger(ledger) as conn:
            if add_document(conn, json_text(doc).encode(), f"rigcheck {command}").new:
                refresh_trends(conn)
    except (RigcheckError, OSError) as exc:
        note(f"rigcheck: {command}: not recorded in the ledger: {' '.join(str(exc).split())}")

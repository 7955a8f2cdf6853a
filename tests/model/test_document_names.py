"""One suffix for document classes: every class that is a whole JSON document (a subclass of
rigcheck.model.document.Document) is named ``...Document``, so a reader tells a document from its parts by its name.

The snapshot is the one input document and keeps its name (docs/design.md says why)."""

from __future__ import annotations

import importlib

from rigcheck.model.document import Document
from rigcheck.model.schema import GENERATED


def _subclasses(cls: type) -> list[type]:
    found: list[type] = []
    for sub in cls.__subclasses__():
        found += [sub, *_subclasses(sub)]
    return found


def test_every_document_class_ends_in_document() -> None:
    for _, target, _ in GENERATED.values():
        importlib.import_module(target.partition(":")[0])  # every document's module, so its classes exist
    names = sorted({cls.__name__ for cls in _subclasses(Document)})
    assert len(names) >= len(GENERATED)
    assert [name for name in names if not name.endswith("Document")] == []

"""Regenerate src/rigcheck/schemas/*.json from the model. Run after changing the model; a test checks it."""

from rigcheck.model.schema import SCHEMA_DIR, schema_files

for name, text in schema_files().items():
    (SCHEMA_DIR / name).write_text(text)
    print(f"wrote {SCHEMA_DIR / name}")

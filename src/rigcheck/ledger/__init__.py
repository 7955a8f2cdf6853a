"""The ledger: rigcheck's memory across runs, one SQLite file (stdlib sqlite3, no server, no daemon).

``store.py`` opens it (WAL, a busy timeout, the schema version and its migrations; a file that is not a ledger is
refused and never written), ``ingest.py`` adds documents to it (idempotent by content hash), ``query.py`` reads
the rows :mod:`rigcheck.checks.history` judges.

Rules: the layer between plan and readers (tests/contracts/test_layers.py): it reads files and writes its
database, so it is not in checks/, which stays pure; it never reads the environment (the CLI resolves the path).
"""

"""Judgements over time: the ledger's rows (rigcheck.model.history's RunRow, SightingRow, NodeCount) in, the
``rigcheck.history/1`` document out. Pure, as every check: the ledger (rigcheck.ledger) reads the database."""

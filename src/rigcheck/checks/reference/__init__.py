"""rigcheck.checks.reference"""

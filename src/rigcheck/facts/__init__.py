"""rigcheck.facts"""

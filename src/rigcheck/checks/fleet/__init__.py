"""rigcheck.checks.fleet.judge"""

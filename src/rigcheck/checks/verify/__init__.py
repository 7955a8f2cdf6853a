"""rigcheck.checks.verify.judge"""

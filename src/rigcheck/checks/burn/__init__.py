"""rigcheck.checks.burn.judge"""

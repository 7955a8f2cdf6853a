"""rigcheck.checks"""

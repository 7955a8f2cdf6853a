"""rigcheck.cli"""

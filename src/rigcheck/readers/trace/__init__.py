"""rigcheck.readers.trace"""

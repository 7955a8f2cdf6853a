"""rigcheck.readers.reference"""

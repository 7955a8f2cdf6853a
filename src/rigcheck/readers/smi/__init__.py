"""rigcheck.readers.smi"""

"""rigcheck.readers"""

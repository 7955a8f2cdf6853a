"""rigcheck.probe"""

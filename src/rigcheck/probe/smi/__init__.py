"""rigcheck.probe.smi"""

"""rigcheck.plan"""

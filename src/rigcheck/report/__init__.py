"""rigcheck.report"""

"""rigcheck.report.bench.render"""

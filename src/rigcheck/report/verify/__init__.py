"""rigcheck.report.verify.render"""

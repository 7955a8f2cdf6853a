"""rigcheck.report.burn.render"""

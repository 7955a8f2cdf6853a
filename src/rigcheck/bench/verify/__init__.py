"""rigcheck.bench.verify.run"""

"""rigcheck.bench.fleet.run"""

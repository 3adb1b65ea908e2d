"""The bound every rate keeps: the highest rate, in $ per million tokens, a price file or the rates cache may give.

Both the price table (`replay.model.costs`, checking a price file) and the on-disk rates cache
(`replay.model.rates_cache`, checking an entry read back) hold rates to it; it sits below both.
"""

# The highest rate a price file may give, $ per million tokens ($1 a token; the dearest public model,
# o1-pro, bills $600 of output): with usage counts below 2^40 (`replay.ingest.checks.MAX_COUNT`)
# no request costs more than about $6e12, and no sum of them overflows to infinity.
MAX_RATE = 1e6

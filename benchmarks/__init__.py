"""Performance scripts (never run as tests): ``python -m benchmarks.run``."""

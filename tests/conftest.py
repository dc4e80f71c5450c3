"""Shared test set-up: hypothesis profiles and the headless matplotlib backend.

Profiles: ``ci`` (default, fast, derandomised) and ``thorough`` (long runs):
``pytest --hypothesis-profile thorough -m "slow or not slow"``.
"""

import os
import sys
from pathlib import Path

import matplotlib
from hypothesis import HealthCheck, settings

matplotlib.use("Agg")
sys.path.insert(0, str(Path(__file__).parent))

settings.register_profile("ci", max_examples=20, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("thorough", max_examples=500, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

"""Shared test set-up: hypothesis profiles and the headless matplotlib backend.

Profiles: ``ci`` (default, fast, derandomised) and ``thorough`` (long runs):
``pytest --hypothesis-profile thorough -m "slow or not slow"``.
"""

import contextlib
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


@contextlib.contextmanager
def procedural_environment(tmp_path_factory, **env: str):
    """For agent tests: procedural background videos (generated into a temporary cache unless the
    cache in use holds them), no DAVIS from the environment, one torch thread, and the variables
    ``env`` set (jobs that inherit the environment get them too); everything restored after.
    Yields the procedural video folder."""
    import torch

    from agents import videos as V

    saved = {k: os.environ.get(k) for k in (V.CACHE_ENV, V.DAVIS_ENV, *env)}
    threads = torch.get_num_threads()
    if not (V.cache_dir() / f"procedural-v{V.PROCEDURAL_VERSION}-seed0" / V.MANIFEST).is_file():
        os.environ[V.CACHE_ENV] = str(tmp_path_factory.mktemp("cache"))
    os.environ.pop(V.DAVIS_ENV, None)
    os.environ.update(env)
    torch.set_num_threads(1)
    try:
        yield V.ensure_procedural()
    finally:
        torch.set_num_threads(threads)
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value

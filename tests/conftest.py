"""Shared test set-up: hypothesis profiles, the headless matplotlib backend, and the one-node
SLURM of ``agents/sweep/local_slurm.sh`` (fixture ``slurm``, for the sweeps and ``verify --executor slurm``).

Profiles: ``ci`` (default, fast, derandomised) and ``thorough`` (long runs):
``pytest --hypothesis-profile thorough -m "slow or not slow"``.
"""

import contextlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import matplotlib
import pytest
from hypothesis import HealthCheck, settings

matplotlib.use("Agg")
sys.path.insert(0, str(Path(__file__).parent))

settings.register_profile(
    "ci",
    max_examples=20,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "thorough",
    max_examples=500,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
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


SCRIPT = Path(__file__).resolve().parents[1] / "agents" / "sweep" / "local_slurm.sh"


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    """A one-node SLURM from agents/sweep/local_slurm.sh in its own folder and port; always stopped (its jobs
    cancelled first) in the finalizer. Skipped, with the reason, when slurm-wlm / munge are not installed."""
    missing = [tool for tool in ("slurmctld", "slurmd", "munged", "sbatch", "sinfo") if shutil.which(tool) is None]
    if missing:
        pytest.skip(
            f"SLURM tests skipped: {', '.join(missing)} not installed "
            f"(apt-get install -y slurm-wlm munge; .ci/run does it when it can)"
        )
    if os.geteuid() != 0:
        pytest.skip("SLURM tests skipped: the local cluster runs its daemons as root (SlurmUser=root)")
    folder = tmp_path_factory.mktemp("slurm")
    env = {**os.environ, "BISIMKIT_SLURM_DIR": str(folder), "BISIMKIT_SLURM_PORT": str(7100 + os.getpid() % 800)}
    saved = os.environ.get("SLURM_CONF")
    try:
        start = subprocess.run(["bash", str(SCRIPT), "start"], env=env, capture_output=True, text=True, timeout=120)
        assert start.returncode == 0, f"local SLURM did not start:\n{start.stdout}\n{start.stderr}"
        again = subprocess.run(["bash", str(SCRIPT), "start"], env=env, capture_output=True, text=True, timeout=60)
        assert again.returncode == 0 and "already running" in again.stdout  # idempotent
        os.environ["SLURM_CONF"] = str(folder / "slurm.conf")
        yield folder
    finally:
        if (folder / "slurm.conf").is_file():
            jobs = subprocess.run(
                ["squeue", "-h", "-o", "%A"],
                capture_output=True,
                text=True,
                timeout=30,
                env={**os.environ, "SLURM_CONF": str(folder / "slurm.conf")},
            ).stdout.split()
            if jobs:
                subprocess.run(
                    ["scancel", *jobs], timeout=30, env={**os.environ, "SLURM_CONF": str(folder / "slurm.conf")}
                )
        stop = subprocess.run(["bash", str(SCRIPT), "stop"], env=env, capture_output=True, text=True, timeout=60)
        if saved is None:
            os.environ.pop("SLURM_CONF", None)
        else:
            os.environ["SLURM_CONF"] = saved
        assert stop.returncode == 0, stop.stderr


def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist (``-n 2 --dist loadgroup``), every test of the one-node SLURM runs in one worker, so
    two clusters never start side by side on one host."""
    for item in items:
        if "slurm" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.xdist_group("slurm"))

"""The environment benchmark's timing loop on a scripted environment: blocks of steps, resets at episode ends,
and the record of the medians."""

import os

import pytest

os.environ.setdefault("MUJOCO_GL", "egl")

from benchmarks.bench_env import Runner, pin  # noqa: E402


class Counting:
    """An agent-step environment whose episodes last three steps."""

    def __init__(self):
        self.resets, self.steps, self.t = 0, 0, 0

    def reset(self):
        self.resets, self.t = self.resets + 1, 0

    def step(self, action):
        self.steps, self.t = self.steps + 1, self.t + 1
        assert action.shape == (2,) and (abs(action) <= 1).all()
        return None, 0.0, self.t == 3, {}


def test_blocks_count_control_steps_and_reset_at_episode_ends():
    env = Counting()
    runner = Runner("ours", env, "agent", (2,), seed=0, repeat=4)
    runner.block(7)
    runner.block(2)
    assert env.steps == 9 and env.resets == 1 + 3  # the first reset, then after steps 3, 6 and 9
    record = runner.record()
    assert record["action_repeat"] == 4 and len(record["blocks_wall"]) == 2
    assert record["control_steps_per_s"] > 0 and record["first_reset_s"] >= 0


def test_pin_keeps_this_process_on_one_core(monkeypatch):
    if not hasattr(os, "sched_setaffinity"):
        pytest.skip("no CPU affinity on this system")
    before = os.sched_getaffinity(0)
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        monkeypatch.delenv(var, raising=False)
    core = min(before)
    try:
        pin(core)
        assert os.sched_getaffinity(0) == {core} and os.environ["OMP_NUM_THREADS"] == "1"
    finally:
        os.sched_setaffinity(0, before)

"""The DCS environment layer end to end: every task with and without distractions, determinism, the held-out
split, fidelity to the package."""

import os

os.environ.setdefault("MUJOCO_GL", "egl")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from agents import videos as V  # noqa: E402
from agents.dcs import TASKS, make_env  # noqa: E402


@pytest.fixture(scope="session", autouse=True)
def video_cache(tmp_path_factory):
    """Procedural videos generated once into a temporary cache; no DAVIS from the environment."""
    saved = {k: os.environ.get(k) for k in (V.CACHE_ENV, V.DAVIS_ENV)}
    os.environ[V.CACHE_ENV] = str(tmp_path_factory.mktemp("cache"))
    os.environ.pop(V.DAVIS_ENV, None)
    yield V.ensure_procedural()
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


def _actions(env, n, seed=0):
    return np.random.default_rng(seed).uniform(-1, 1, (n,) + env.action_spec.shape)


# --------------------------------------------------------------------------- environments


@pytest.mark.parametrize("distractions", [True, False], ids=["distracted", "plain"])
@pytest.mark.parametrize("task", list(TASKS))
def test_smoke_every_task(task, distractions):
    env = make_env(task, background=distractions, camera=distractions, seed=1)
    obs = env.reset()
    assert obs.shape == env.observation_shape == (9, 84, 84) and obs.dtype == np.uint8
    assert np.array_equal(obs[:3], obs[3:6]) and np.array_equal(obs[3:6], obs[6:])
    assert env.action_repeat == TASKS[task].action_repeat
    assert env.max_episode_steps == 1000 // env.action_repeat
    assert np.all(env.action_spec.minimum == -1) and np.all(env.action_spec.maximum == 1)
    previous = obs
    for action in _actions(env, 3):
        obs, reward, done, info = env.step(action)
        assert obs.shape == (9, 84, 84) and obs.dtype == np.uint8
        assert np.isfinite(reward) and 0.0 <= reward <= env.action_repeat
        assert not done and not info["truncated"] and info["discount"] == 1.0
        assert np.array_equal(obs[:6], previous[3:])  # the stack shifts by one frame
        previous = obs
    if distractions:
        assert env.background_video in V.TRAIN_VIDEOS
    else:
        assert env.background_video is None and env.background_source == "no background distraction"
    env.close()


def test_same_seed_same_observations_other_seed_others():
    def run(seed):
        env = make_env("walker-walk", seed=seed)
        out = [env.reset()] + [env.step(a)[0] for a in _actions(env, 4)]
        env.close()
        return np.stack(out)

    a, b, c = run(3), run(3), run(4)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)


def test_distractions_change_the_pixels_only():
    env_plain = make_env("finger-spin", background=False, camera=False, seed=2)
    env_bg = make_env("finger-spin", background=True, camera=False, seed=2)
    env_cam = make_env("finger-spin", background=False, camera=True, seed=2)
    rewards = []
    for env in (env_plain, env_bg, env_cam):
        env.reset()
        rewards.append([env.step(a)[1] for a in _actions(env, 5)])
    assert rewards[0] == rewards[1] == rewards[2]  # same physics under the same seed
    frames = [env._frame() for env in (env_plain, env_bg, env_cam)]
    assert np.abs(frames[0].astype(int) - frames[1]).mean() > 5
    assert np.abs(frames[0].astype(int) - frames[2]).mean() > 5


def test_eval_split_plays_held_out_videos():
    env = make_env("reacher-easy", split="eval", seed=0)
    seen = set()
    for _ in range(3):
        env.reset()
        seen.add(env.background_video)
        first = env._background.current_frame.copy()
        env.step(np.zeros(env.action_spec.shape))
        assert not np.array_equal(first, env._background.current_frame)  # dynamic: the frame moves on
    assert seen <= set(V.EVAL_VIDEOS)
    env.close()


def test_matches_the_shipped_package_frame_for_frame(video_cache):
    """With dm_control's visuals and an 800x800 texture ours renders what the package renders."""
    from benchmarks.bench_env import shipped_env

    shipped = shipped_env("cheetah-run", video_cache, seed=5)
    ours = make_env("cheetah-run", seed=5, action_repeat=1, frame_stack=1, fast_render=False, texture_size=800)
    fast = make_env("cheetah-run", seed=5, action_repeat=1, frame_stack=1)
    a = [shipped.reset().observation["pixels"]]
    b, c = [ours.reset()], [fast.reset()]
    for action in _actions(ours, 6):
        a.append(shipped.step(action).observation["pixels"])
        b.append(ours.step(action)[0])
        c.append(fast.step(action)[0])
    a = np.stack(a).astype(int)
    b = np.stack(b).transpose(0, 2, 3, 1)
    c = np.stack(c).transpose(0, 2, 3, 1)
    assert np.abs(a - b).mean() < 0.5  # only resize interpolation differs
    assert np.abs(a - c).mean() < 6.0  # no shadows, coarser meshes, small texture: close, not equal

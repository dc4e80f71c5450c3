"""The DCS tasks as Gymnasium environments (``agents.gym_env``): the API checker, and the
same frames as ``agents.dcs.make_env``'s."""

import os

os.environ.setdefault("MUJOCO_GL", "egl")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

gymnasium = pytest.importorskip("gymnasium", reason="the 'gym' extra (gymnasium) is not installed")
pytest.importorskip("dm_control", reason="the 'agents' extra is not installed")

from agents import videos as V  # noqa: E402
from agents.dcs import make_env  # noqa: E402
from agents.gym_env import env_id, register_envs  # noqa: E402

#: Tiny frames and short episodes: the checks are about the API, not the pictures.
SMALL = {"background": True, "camera": True, "split": "train", "image_size": 16, "episode_steps": 8, "texture_size": 16}


@pytest.fixture(scope="module", autouse=True)
def video_cache(tmp_path_factory):
    """Procedural videos in a temporary cache; no DAVIS from the environment."""
    saved = {k: os.environ.get(k) for k in (V.CACHE_ENV, V.DAVIS_ENV)}
    os.environ[V.CACHE_ENV] = str(tmp_path_factory.mktemp("cache"))
    os.environ.pop(V.DAVIS_ENV, None)
    yield
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


def test_ids_are_registered():
    ids = register_envs()
    assert "bisimkit/DCS-walker-walk-v0" in ids and len(ids) == 8
    assert all(i in gymnasium.envs.registry for i in ids)


def test_passes_the_gymnasium_checker():
    from gymnasium.utils.env_checker import check_env

    env = gymnasium.make(env_id("walker-walk"), render_mode="rgb_array", **SMALL)
    assert env.observation_space == gymnasium.spaces.Box(0, 255, (9, 16, 16), np.uint8)
    assert env.action_space.shape == (6,) and env.action_space.dtype == np.float32
    check_env(env.unwrapped)
    env.close()


def test_same_frames_as_make_env_and_seeded_resets():
    settings = {**SMALL, "episode_steps": 32}  # cartpole repeats each action 8 times: 4 agent steps
    env = gymnasium.make("agents.gym_env:" + env_id("cartpole-swingup"), render_mode="rgb_array", **settings)
    actions = np.random.default_rng(0).uniform(-1, 1, (4, 1)).astype(np.float32)
    runs = []
    for _ in range(2):  # reset(seed=...) twice: the same episode
        obs, info = env.reset(seed=7)
        frames, rewards, ends = [obs], [], []
        for a in actions:
            obs, reward, terminated, truncated, _ = env.step(a)
            frames.append(obs)
            rewards.append(reward)
            ends.append((terminated, truncated))
        runs.append((frames, rewards, ends))
        assert np.array_equal(env.render(), obs[-3:].transpose(1, 2, 0))
    assert all(np.array_equal(a, b) for a, b in zip(runs[0][0], runs[1][0])) and runs[0][1] == runs[1][1]
    assert runs[0][2] == [(False, False)] * 3 + [(False, True)]  # the time limit truncates
    other, _ = env.reset(seed=8)
    env.close()
    # the environment of make_env, stepped with the same actions: the same frames and rewards
    ours = make_env("cartpole-swingup", **settings)
    frames = [ours.reset(seed=7)]
    for a in actions:
        obs, reward, done, info = ours.step(a)
        frames.append(obs)
        assert reward == runs[0][1][len(frames) - 2]
    ours.close()
    assert all(np.array_equal(a, b) for a, b in zip(frames, runs[0][0]))
    assert done and info["truncated"]
    assert not np.array_equal(other, runs[0][0][0])  # another seed, another episode (backgrounds, start)

"""The DCS tasks: the paper's action repeats, the time limit, and one-line errors for bad arguments."""

import os

os.environ.setdefault("MUJOCO_GL", "egl")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from conftest import procedural_environment  # noqa: E402

from agents import videos as V  # noqa: E402
from agents.dcs import EXTRA_TASKS, PAPER_TASKS, TASKS, make_env  # noqa: E402
from bisimkit.errors import InputError  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def video_cache(tmp_path_factory):
    """Procedural videos (generated into a temporary cache unless the cache in use holds them); no DAVIS from
    the environment."""
    with procedural_environment(tmp_path_factory) as folder:
        yield folder


def _davis_tree(root, names=("bear", "bmx-bumps")):
    import cv2

    frames = root / "DAVIS" / "JPEGImages" / "480p"
    for name in names:
        (frames / name).mkdir(parents=True)
        cv2.imwrite(str(frames / name / "00000.jpg"), np.full((48, 64, 3), 90, np.uint8))
    return frames


def test_paper_tasks_and_action_repeats():
    assert {name: t.action_repeat for name, t in PAPER_TASKS.items()} == {
        "ball_in_cup-catch": 4,
        "cartpole-swingup": 8,
        "cheetah-run": 4,
        "finger-spin": 2,
        "reacher-easy": 4,
        "walker-walk": 2,
    }
    # the extra (non-paper) tasks keep their domain's repeat
    assert {name: t.action_repeat for name, t in EXTRA_TASKS.items()} == {"cartpole-balance": 8, "walker-stand": 2}
    assert set(TASKS) == set(PAPER_TASKS) | set(EXTRA_TASKS)


def test_make_env_uses_a_given_davis_folder(tmp_path):
    _davis_tree(tmp_path)
    env = make_env("cartpole-swingup", camera=False, davis=tmp_path, seed=0)
    env.reset()
    assert "DAVIS-2017" in env.background_source and env.background_video in V.TRAIN_VIDEOS
    with pytest.raises(InputError, match="^davis: video 'bike-packing' not found"):
        make_env("cartpole-swingup", split="eval", davis=tmp_path)


def test_time_limit_ends_the_episode():
    env = make_env("ball_in_cup-catch", seed=0, episode_steps=8)
    assert env.max_episode_steps == 2
    env.reset()
    _, _, done, info = env.step(np.zeros(2))
    assert not done
    _, _, done, info = env.step(np.zeros(2))
    assert done and info["truncated"] and info["discount"] == 1.0 and info["steps"] == 2
    with pytest.raises(RuntimeError, match="call reset"):
        env.step(np.zeros(2))
    env.reset()
    assert not env.step(np.zeros(2))[2]


def test_bad_arguments_give_one_line_errors():
    with pytest.raises(InputError, match="^task: 'walker-run' is not one of"):
        make_env("walker-run")
    with pytest.raises(InputError, match="^split: 'val' is not one of"):
        make_env("walker-walk", split="val")
    with pytest.raises(InputError, match="^frame_stack: 0 is not a positive integer"):
        make_env("walker-walk", frame_stack=0)
    with pytest.raises(InputError, match=r"^texture_size: 900 is not in \[8, 800\]"):
        make_env("walker-walk", texture_size=900)
    env = make_env("walker-walk", background=False, camera=False)
    env.reset()
    with pytest.raises(InputError, match=r"^action: shape \(2,\) is not \(6,\)"):
        env.step(np.zeros(2))
    with pytest.raises(InputError, match="^action: holds a non-finite value"):
        env.step(np.full(6, np.nan))

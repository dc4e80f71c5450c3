"""The DCS environment layer: videos, DAVIS checks, the six tasks, determinism, fidelity to the package."""

import os

os.environ.setdefault("MUJOCO_GL", "egl")

import cv2  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from agents import videos as V  # noqa: E402
from agents.dcs import EXTRA_TASKS, PAPER_TASKS, TASKS, make_env  # noqa: E402
from bisimkit.errors import InputError  # noqa: E402


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


# --------------------------------------------------------------------------- videos and splits

def test_paper_tasks_and_action_repeats():
    assert {name: t.action_repeat for name, t in PAPER_TASKS.items()} == {
        "ball_in_cup-catch": 4, "cartpole-swingup": 8, "cheetah-run": 4,
        "finger-spin": 2, "reacher-easy": 4, "walker-walk": 2}
    # the extra (non-paper) tasks keep their domain's repeat
    assert {name: t.action_repeat for name, t in EXTRA_TASKS.items()} == {"cartpole-balance": 8, "walker-stand": 2}
    assert set(TASKS) == set(PAPER_TASKS) | set(EXTRA_TASKS)


def test_splits_are_disjoint_and_match_distracting_control():
    from agents.compat import distracting_control
    background = distracting_control().background
    train, held_out = V.split_videos("train"), V.split_videos("eval")
    assert len(train) == 2 and len(held_out) == 30 and not set(train) & set(held_out)
    assert list(train) == background.DAVIS17_TRAINING_VIDEOS[:2]
    assert list(held_out) == background.DAVIS17_VALIDATION_VIDEOS
    with pytest.raises(InputError, match="^split: 'test' is not one of"):
        V.split_videos("test")


def test_procedural_video_is_deterministic_by_seed():
    a, b, c = V.procedural_video(5, frames=6), V.procedural_video(5, frames=6), V.procedural_video(6, frames=6)
    assert a.shape == (6, 108, 192, 3) and a.dtype == np.uint8
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    assert np.abs(np.diff(a.astype(int), axis=0)).mean() > 0.5  # it moves
    assert 40 <= len(V.procedural_video(7)) <= 70


def test_procedural_folder_has_davis_layout(video_cache):
    import json
    manifest = json.loads((video_cache / V.MANIFEST).read_text())
    assert manifest["videos"] == list(V.TRAIN_VIDEOS + V.EVAL_VIDEOS)
    for name in V.TRAIN_VIDEOS + V.EVAL_VIDEOS:
        frames = sorted((video_cache / name).iterdir())
        assert frames[0].name == "00000.jpg" and all(f.suffix == ".jpg" for f in frames)
        assert [f.name for f in frames] == [f"{i:05d}.jpg" for i in range(len(frames))]
    assert cv2.imread(str(video_cache / "bear" / "00000.jpg")).shape == (108, 192, 3)
    assert V.ensure_procedural() == video_cache  # cached: no regeneration
    source = V.resolve_videos()
    assert source.kind == "procedural" and "procedural backgrounds" in source.describe()


def test_cache_folder_without_manifest_is_refused(tmp_path):
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "x.txt").write_text("x")
    with pytest.raises(InputError, match="^videos: .* holds no bisimkit-procedural.json"):
        V.ensure_procedural(tmp_path / "junk")


def _davis_tree(root, names=("bear", "bmx-bumps")):
    frames = root / "DAVIS" / "JPEGImages" / "480p"
    for name in names:
        (frames / name).mkdir(parents=True)
        cv2.imwrite(str(frames / name / "00000.jpg"), np.full((48, 64, 3), 90, np.uint8))
    return frames


def test_davis_path_validation(tmp_path, monkeypatch):
    frames = _davis_tree(tmp_path)
    source = V.resolve_videos(tmp_path)  # the DAVIS root resolves to JPEGImages/480p
    assert source.root == frames and source.kind == "davis" and "DAVIS-2017" in source.describe()
    assert [p.name for p in source.videos("train")] == ["bear", "bmx-bumps"]
    with pytest.raises(InputError, match="^davis: video 'bike-packing' not found in"):
        source.videos("eval")
    with pytest.raises(InputError, match="^davis: video 'nope' not found in"):
        source.videos(["bear", "nope"])
    (frames / "empty").mkdir()
    with pytest.raises(InputError, match="^davis: video 'empty' in .* holds no .jpg frames"):
        source.videos(["empty"])
    with pytest.raises(InputError, match="^davis: .*missing does not exist"):
        V.resolve_videos(tmp_path / "missing")
    (tmp_path / "file.txt").write_text("x")
    with pytest.raises(InputError, match="^davis: .* is not a folder"):
        V.resolve_videos(tmp_path / "file.txt")
    (tmp_path / "nothing").mkdir()
    with pytest.raises(InputError, match="^davis: no <video>/\\*.jpg folders under"):
        V.resolve_videos(tmp_path / "nothing")
    monkeypatch.setenv(V.DAVIS_ENV, str(tmp_path / "gone"))
    with pytest.raises(InputError, match="^BISIMKIT_DAVIS: .*gone does not exist"):
        V.resolve_videos()
    monkeypatch.setenv(V.DAVIS_ENV, str(tmp_path))
    assert V.resolve_videos().origin == "$BISIMKIT_DAVIS"


def test_make_env_uses_a_given_davis_folder(tmp_path):
    _davis_tree(tmp_path)
    env = make_env("cartpole-swingup", camera=False, davis=tmp_path, seed=0)
    env.reset()
    assert "DAVIS-2017" in env.background_source and env.background_video in V.TRAIN_VIDEOS
    with pytest.raises(InputError, match="^davis: video 'bike-packing' not found"):
        make_env("cartpole-swingup", split="eval", davis=tmp_path)


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

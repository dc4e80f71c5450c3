"""TensorBoard logging of a training run, read back with TensorBoard's own reader
(``tensorboard.backend.event_processing.event_accumulator``): the rows' scalars equal the CSV rows, the
learned-metric losses have their own group, the frames are the agent's observations with their
distracting backgrounds, and the run's first line says whether TensorBoard is on."""

import csv
import io
import os
import sys

os.environ.setdefault("MUJOCO_GL", "egl")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from conftest import procedural_environment  # noqa: E402

pytest.importorskip("torch", reason="the 'torch' extra is not installed")
pytest.importorskip("dm_control", reason="the 'agents' extra is not installed")
pytest.importorskip("tensorboard", reason="the 'tensorboard' extra is not installed")

from tensorboard.backend.event_processing import event_accumulator as ea  # noqa: E402

from agents import train as train_module  # noqa: E402
from agents.config import TrainConfig  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def environment(tmp_path_factory):
    """Procedural videos, no DAVIS, one torch thread (conftest's :func:`procedural_environment`)."""
    with procedural_environment(tmp_path_factory):
        yield


def tiny(**changes) -> TrainConfig:
    """eps-r on reacher-easy (action repeat 4): 8 agent steps in episodes of 2, evaluations every 8 env steps."""
    fields = dict(
        task="reacher-easy",
        method="eps-r",
        env_steps=32,
        episode_steps=8,
        batch_size=4,
        seed_steps=2,
        eval_every=16,
        eval_episodes=1,
        capacity="low",
        image_size=32,
        checkpoint_every=16,
        device="cpu",
    )
    return TrainConfig(**{**fields, **changes})


def read_events(folder) -> ea.EventAccumulator:
    acc = ea.EventAccumulator(str(folder), size_guidance={ea.SCALARS: 0, ea.IMAGES: 0})
    acc.Reload()
    return acc


def rows(path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("tb") / "run"
    import contextlib

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        train_module.train(tiny(), out, progress=True)
    return out, err.getvalue()


def test_first_line_says_tensorboard_is_on(run):
    out, err = run
    first = err.splitlines()[0]
    assert first.startswith("[eps-r reacher-easy seed 0]") and first.endswith(f"TensorBoard on ({out / 'tb'})")


def test_scalars_read_back_equal_the_csv_rows(run):
    out, _ = run
    acc = read_events(out / "tb")
    tags = set(acc.Tags()["scalars"])
    train, evals = rows(out / "train.csv"), rows(out / "eval.csv")
    assert len(train) == 4 and len(evals) == 3
    for name in ("episode_return", "critic_loss", "bisim_loss", "transition_loss", "reward_loss", "inverse_loss"):
        events = acc.Scalars(f"train/{name}")
        logged = [(e.step, e.value) for e in events]
        expected = [(int(r["env_step"]), float(r[name])) for r in train if r[name] != ""]
        assert [s for s, _ in logged] == [s for s, _ in expected] and expected
        np.testing.assert_allclose([v for _, v in logged], [v for _, v in expected], rtol=1e-5)
    events = acc.Scalars("eval/mean_return")
    assert [(e.step, pytest.approx(e.value, rel=1e-5)) for e in events] == [
        (int(r["env_step"]), float(r["mean_return"])) for r in evals
    ]
    # the learned-metric group: eps-r's losses, against the same steps as the training rows that have them
    metric = {t for t in tags if t.startswith("metric/")}
    assert metric == {"metric/bisim_loss", "metric/transition_loss", "metric/reward_loss", "metric/inverse_loss"}
    assert [e.value for e in acc.Scalars("metric/bisim_loss")] == [e.value for e in acc.Scalars("train/bisim_loss")]


def test_frames_are_the_agents_observations_with_their_backgrounds(run):
    """frames/train: the stacked first observation of episode 0 and of the first episode after each
    evaluation, side by side; equal to the environment's observation, and unlike the same episode without
    backgrounds (the distraction is visible)."""
    import cv2

    from agents.rollout import episode_seed, make_run_env

    out, _ = run
    images = read_events(out / "tb").Images("frames/train")
    assert [im.step for im in images] == [0, 16, 32][: len(images)] and len(images) >= 2
    decoded = cv2.imdecode(np.frombuffer(images[0].encoded_image_string, np.uint8), cv2.IMREAD_COLOR)[..., ::-1]
    assert decoded.shape == (32, 96, 3)
    cfg = tiny().resolved()
    env = make_run_env(cfg, "train")
    plain = make_run_env(TrainConfig(**{**cfg.to_dict(), "background": False}).resolved(), "train")
    try:
        obs = env.reset(seed=episode_seed(cfg.seed, 0))
        without = plain.reset(seed=episode_seed(cfg.seed, 0))
    finally:
        env.close()
        plain.close()
    strip = np.concatenate([obs[3 * k : 3 * k + 3].transpose(1, 2, 0) for k in range(3)], axis=1)
    np.testing.assert_array_equal(decoded, strip)
    bare = np.concatenate([without[3 * k : 3 * k + 3].transpose(1, 2, 0) for k in range(3)], axis=1)
    assert np.abs(decoded.astype(int) - bare).mean() > 10  # grey levels: the video background shows


def test_off_is_said_in_the_first_line(tmp_path, capsys, monkeypatch):
    train_module.train(
        tiny(env_steps=16, eval_every=16, method="drq"), tmp_path / "off", progress=True, tensorboard=False
    )
    assert capsys.readouterr().err.splitlines()[0].endswith("TensorBoard off (--no-tensorboard)")
    assert not (tmp_path / "off" / "tb").exists()
    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", None)  # the package missing
    train_module.train(tiny(env_steps=16, eval_every=16, method="drq"), tmp_path / "missing", progress=True)
    assert (
        capsys.readouterr()
        .err.splitlines()[0]
        .endswith("TensorBoard off (the tensorboard package is not installed: pip install -e '.[tensorboard]')")
    )
    assert not (tmp_path / "missing" / "tb").exists()

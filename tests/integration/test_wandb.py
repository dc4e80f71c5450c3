"""``python -m agents.train --wandb PROJECT``: the TensorBoard scalars, also to W&B, with a fake
``wandb`` module (no network, no account); no ``import wandb`` unless asked."""

import os
import sys
import types
from pathlib import Path

os.environ.setdefault("MUJOCO_GL", "egl")

import pytest  # noqa: E402
from conftest import procedural_environment  # noqa: E402

pytest.importorskip("torch", reason="the 'torch' extra is not installed")
pytest.importorskip("dm_control", reason="the 'agents' extra is not installed")


from agents import train as train_module  # noqa: E402
from agents.config import TrainConfig  # noqa: E402


class FakeRun:
    def __init__(self, **kwargs):
        self.init, self.logged, self.metrics, self.finished = kwargs, [], [], False

    def define_metric(self, name, step_metric=None):
        self.metrics.append((name, step_metric))

    def log(self, data):
        self.logged.append(dict(data))

    def finish(self):
        self.finished = True


@pytest.fixture
def fake_wandb(monkeypatch):
    module = types.ModuleType("wandb")
    module.runs = []

    def init(**kwargs):
        module.runs.append(FakeRun(**kwargs))
        return module.runs[-1]

    module.init = init
    monkeypatch.setitem(sys.modules, "wandb", module)
    return module


@pytest.fixture(scope="module", autouse=True)
def environment(tmp_path_factory):
    """Procedural videos, no DAVIS, one torch thread (conftest's :func:`procedural_environment`)."""
    with procedural_environment(tmp_path_factory):
        yield


def tiny(**changes) -> TrainConfig:
    """Reacher (action repeat 4): 4 agent steps in episodes of 2, tiny frames."""
    return TrainConfig(
        task="reacher-easy",
        method="drq",
        env_steps=16,
        episode_steps=8,
        batch_size=4,
        seed_steps=2,
        eval_every=8,
        eval_episodes=1,
        capacity="low",
        image_size=32,
        checkpoint_every=8,
        device="cpu",
        **changes,
    )


def test_wandb_gets_the_tensorboard_scalars(tmp_path, fake_wandb, monkeypatch):
    board = []
    monkeypatch.setattr(
        train_module.TensorBoard, "add", lambda self, prefix, row, step: board.append((prefix, dict(row), step))
    )
    train_module.train(tiny(), tmp_path / "run", progress=False, tensorboard=False, wandb="my-project")
    (run,) = fake_wandb.runs
    assert run.init["project"] == "my-project" and run.init["dir"] == str(tmp_path / "run")
    assert "mode" not in run.init  # WANDB_MODE (offline) is wandb's to read
    assert run.init["config"]["task"] == "reacher-easy" and run.finished
    assert ("*", "env_step") in run.metrics
    expected = [
        {**{f"{p}/{k}": v for k, v in row.items() if isinstance(v, (int, float)) and k != "env_step"}, "env_step": step}
        for p, row, step in board
    ]
    assert run.logged == expected and len(expected) >= 3  # evaluations and training episodes
    assert {"train/episode_return", "train/critic_loss", "eval/mean_return"} <= set().union(*run.logged)
    assert (tmp_path / "run" / "wandb_run_id").read_text() == run.init["id"]


def test_no_wandb_unless_asked(tmp_path, fake_wandb):
    train_module.train(tiny(), tmp_path / "run", progress=False, tensorboard=False)
    assert fake_wandb.runs == []
    assert "--wandb" in train_module.build_parser().format_help()


def test_wandb_not_imported_by_the_training_modules():
    import subprocess

    code = (
        "import sys, agents.train, agents.config, agents.gym_env; "
        "print('wandb' in sys.modules, 'gymnasium' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert out.stdout.split() == ["False", "False"], out.stderr

"""The learning-check diagnosis: its state probe, its collapse measures, its gradient shares, bad input."""

import json

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("dm_control")

from run_folders import train_tiny_run  # noqa: E402

from benchmarks import learning_check_diagnosis as diagnosis  # noqa: E402


def test_ridge_r2_reads_a_linear_state_and_not_noise():
    rng = np.random.default_rng(0)
    latents = rng.normal(size=(600, 8))
    targets = np.c_[latents @ rng.normal(size=8), rng.normal(size=600), np.full(600, 3.0)]
    fit = np.arange(600) < 400
    r2 = diagnosis.ridge_r2(latents, targets, fit, ridge=1e-6)
    assert r2[0] == pytest.approx(1.0, abs=1e-9)  # a linear function of the latent
    assert -0.1 < r2[1] < 0.05  # independent noise: no better than its mean
    assert np.isnan(r2[2])  # a constant coordinate has no R²


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """A real eps-r run on walker-walk: 24 env steps, 32x32 pixels, batch 4 (a few seconds)."""
    return train_tiny_run(tmp_path_factory.mktemp("runs") / "eps-r")


def test_the_record_of_a_real_run(tiny_run, tmp_path, capsys):
    out = tmp_path / "diagnosis.json"
    assert diagnosis.main([str(tiny_run), "--episodes", "3", "--batches", "2", "--out", str(out)]) == 0

    record = json.loads(out.read_text())
    assert record["groups"] == ["orientations", "height", "velocity"]
    assert len(record["coordinates"]) == 14 + 1 + 9 and record["transitions"] == 3 * 6
    fresh, run = record["runs"]
    assert fresh["run"] == "fresh weights" and "gradient_norms" not in fresh
    assert run["method"] == "eps-r" and run["env_steps"] == 24 and run["beta"] == 0.5
    assert set(run["gradient_norms"]) == {"critic", "transition", "reward", "inverse", "bisim"}
    assert all(np.isfinite(v) and v >= 0 for v in run["gradient_norms"].values())
    assert sum(run["gradient_shares"].values()) == pytest.approx(1.0)
    for entry in (fresh, run):
        assert entry["latent_spread"] > 0 and 0 <= entry["inverse_alive"] <= 1
        assert set(entry["r2_groups"]) == set(record["groups"])
    table = capsys.readouterr().out
    assert "| fresh weights |" in table and "R² height" in table and "∇ bisim (share)" in table


def test_task_state_follows_the_episode():
    from agents.dcs import make_env

    env = make_env("walker-walk", background=False, camera=False, image_size=16, episode_steps=4)
    try:
        with pytest.raises(RuntimeError, match="reset"):
            env.task_state
        env.reset(seed=0)
        first, names = env.task_state, env.task_state_names
        assert len(first) == len(names) == 24 and names[14] == "height"
        env.step(np.ones(env.action_spec.shape))
        assert not np.array_equal(first, env.task_state)
    finally:
        env.close()


@pytest.mark.parametrize(
    "args, message",
    [
        (["/no/such/run"], "checkpoint: no such file or folder"),
        (["RUN", "--episodes", "1"], "episodes:"),
        (["RUN", "--ridge", "0"], "ridge:"),
        (["RUN", "--batches", "many"], "batches"),
    ],
)
def test_bad_input_is_one_line_and_writes_nothing(tiny_run, tmp_path, capsys, args, message):
    out = tmp_path / "d.json"
    args = [str(tiny_run) if a == "RUN" else a for a in args]
    assert diagnosis.main([*args, "--out", str(out)]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], lines
    assert not out.exists()


@pytest.mark.parametrize("model_grad", [True, False])
def test_gradient_norms_of_terms_that_skip_the_encoder_are_zero(model_grad):
    import torch

    from agents.agent import Agent
    from agents.config import make_config

    torch.manual_seed(0)
    cfg = make_config(
        "paper",
        method="eps-r",
        capacity="low",
        image_size=32,
        batch_size=8,
        device="cpu",
        fast=False,
        model_grad=model_grad,
    )
    agent = Agent((9, 32, 32), 2, cfg, "cpu")
    rng = np.random.default_rng(0)
    data = {
        "obs": rng.integers(0, 256, (16, 9, 32, 32), dtype=np.uint8),
        "next_obs": rng.integers(0, 256, (16, 9, 32, 32), dtype=np.uint8),
        "action": rng.uniform(-1, 1, (16, 2)).astype(np.float32),
        "reward": rng.uniform(0, 1, 16).astype(np.float32),
        "discount": np.ones(16, np.float32),
    }
    norms = diagnosis.gradient_norms(agent, data, batches=2, rows=8, seed=0)
    assert set(norms) == {"critic", "transition", "reward", "inverse", "bisim"}
    for name in ("transition", "reward"):
        assert (norms[name] > 0) == model_grad, (name, norms[name])
    assert norms["critic"] > 0 and norms["inverse"] > 0 and norms["bisim"] > 0

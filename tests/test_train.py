"""Training smoke tests on CPU: every method on every task, kill-and-resume, bad input.

Runs are tiny (32x32 pixels, 2-4 agent steps per episode, batches of 4) and
use one torch thread: on a shared 2-core machine torch's default of 2 threads
makes the orthogonal initialisation alone take seconds per agent.
"""

import csv
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

os.environ.setdefault("MUJOCO_GL", "egl")

import pytest  # noqa: E402
import torch  # noqa: E402
from conftest import procedural_environment  # noqa: E402

from agents import (
    train as train_module,  # noqa: E402
    videos as V,  # noqa: E402
)
from agents.checkpoint import CHECKPOINT, load_checkpoint  # noqa: E402
from agents.config import METHODS, TrainConfig  # noqa: E402
from agents.dcs import EXTRA_TASKS, PAPER_TASKS, TASKS  # noqa: E402
from agents.replay import ReplayBuffer  # noqa: E402
from agents.train import main, train  # noqa: E402
from bisimkit.errors import InputError  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
BISIM_METHODS = {"drq+dbc", "eps-r", "drq+pse", "eps-pi"}
WORLD_MODEL_COLUMNS = ("transition_loss", "reward_loss", "inverse_loss")
SAC_COLUMNS = ("critic_loss", "actor_loss", "alpha", "entropy", "q")
TIMING = {"train.csv": {"steps_per_s", "elapsed_s"}, "eval.csv": {"elapsed_s"}}


@pytest.fixture(scope="module", autouse=True)
def environment(tmp_path_factory):
    """Procedural videos, no DAVIS, one torch thread here and in subprocesses (conftest's
    :func:`procedural_environment`)."""
    with procedural_environment(tmp_path_factory, OMP_NUM_THREADS="1"):
        yield


def read_csv(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def without_timing(rows: list[dict], name: str) -> list[dict]:
    return [{k: v for k, v in row.items() if k not in TIMING[name]} for row in rows]


def tiny(task: str, method: str, agent_steps: int, episode_agent_steps: int, **changes) -> TrainConfig:
    """A CPU config of ``agent_steps`` agent steps in episodes of ``episode_agent_steps``."""
    repeat = TASKS[task].action_repeat
    cfg = TrainConfig(
        task=task,
        method=method,
        env_steps=agent_steps * repeat,
        episode_steps=episode_agent_steps * repeat,
        batch_size=4,
        seed_steps=2,
        eval_every=episode_agent_steps * repeat,
        eval_episodes=1,
        capacity="low",
        image_size=32,
        checkpoint_every=episode_agent_steps * repeat,
        device="cpu",
    )
    return replace(cfg, **changes)


# ------------------------------------------------------------------ every method on every task
@pytest.mark.parametrize("task", list(PAPER_TASKS))
@pytest.mark.parametrize("method", list(METHODS))
def test_every_method_runs_on_every_task(tmp_path, method, task):
    """Two episodes of two agent steps with backgrounds and camera distraction: the first episode
    is all seed steps (no update), the second updates twice (the actor on the second update)."""
    cfg = tiny(task, method, agent_steps=4, episode_agent_steps=2)
    assert cfg.background and cfg.camera  # the paper's distracting setting is the default
    repeat = TASKS[task].action_repeat
    summary = train(cfg, tmp_path, progress=False, tensorboard=False)
    assert summary["env_steps"] == 4 * repeat and summary["device"] == "cpu"
    assert math.isfinite(summary["final_eval"])

    rows = read_csv(tmp_path / "train.csv")
    assert [(r["episode"], r["env_step"], r["episode_steps"]) for r in rows] == [
        ("0", str(2 * repeat), str(2 * repeat)),
        ("1", str(4 * repeat), str(2 * repeat)),
    ]
    for row in rows:
        assert math.isfinite(float(row["episode_return"])) and float(row["steps_per_s"]) > 0
    seeding, learning = rows
    assert all(seeding[k] == "" for k in SAC_COLUMNS + WORLD_MODEL_COLUMNS + ("bisim_loss",))
    for key in SAC_COLUMNS:
        assert math.isfinite(float(learning[key])), key
    has_bisim = method in BISIM_METHODS
    for key in WORLD_MODEL_COLUMNS + ("bisim_loss",):
        if has_bisim:
            assert math.isfinite(float(learning[key])), key
        else:
            assert learning[key] == "", key

    evals = read_csv(tmp_path / "eval.csv")
    assert [r["env_step"] for r in evals] == [str(k * repeat) for k in (0, 2, 4)]
    for row in evals:
        assert math.isfinite(float(row["mean_return"])) and row["episodes"] == "1" and row["split"] == "eval"

    info = json.loads((tmp_path / "config.json").read_text())
    assert info["config"]["method"] == method and info["config"]["task"] == task
    cache = str(V.cache_dir())
    for key in ("backgrounds", "eval_backgrounds"):
        assert info[key].startswith("procedural backgrounds from ") and cache in info[key], info[key]
    assert info["action_repeat"] == repeat and info["agent_steps"] == 4

    checkpoint = load_checkpoint(tmp_path / CHECKPOINT)
    assert checkpoint.complete and checkpoint.t == 4 and checkpoint.buffer_total == 4
    assert checkpoint.agent["updates"] == 2


def test_stacked_frames_flag_trains_and_restores(tmp_path):
    """--stacked-frames (DrQ's encoder) reaches the agent, the config file and a restored agent."""
    out = tmp_path / "run"
    cfg = tiny("cartpole-swingup", "eps-r", agent_steps=4, episode_agent_steps=2)
    assert main(cli_args(cfg) + ["--stacked-frames", "--out", str(out), "--quiet"]) == 0
    info = json.loads((out / "config.json").read_text())
    assert info["config"]["stacked_frames"] is True
    from agents.restore import restore_agent

    restored = restore_agent(out, device="cpu")
    restored.env.close()
    assert restored.agent.encoder.stacked and restored.agent.latent_dim == 50
    with pytest.raises(InputError, match=r"^stacked_frames: 'yes' is not true or false"):
        replace(cfg, stacked_frames="yes").validated()


@pytest.mark.parametrize("task", list(EXTRA_TASKS))
def test_extra_tasks_train(tmp_path, task):
    """The easier non-paper tasks (the learning check's walker-stand) train like the paper's."""
    cfg = tiny(task, "drq", agent_steps=4, episode_agent_steps=2)
    summary = train(cfg, tmp_path, progress=False, tensorboard=False)
    assert summary["env_steps"] == 4 * TASKS[task].action_repeat and math.isfinite(summary["final_eval"])
    assert json.loads((tmp_path / "config.json").read_text())["config"]["task"] == task


# ------------------------------------------------------------------ resume reproduces the run
# 16 episodes of 4 agent steps (cartpole: action repeat 8), a checkpoint every episode, an
# evaluation every 4 episodes
RESUME = dict(task="cartpole-swingup", method="eps-r", agent_steps=64, episode_agent_steps=4)


def resume_config(**changes) -> TrainConfig:
    return tiny(**{**RESUME, "eval_every": 128, **changes})


def cli_args(cfg: TrainConfig) -> list[str]:
    return [
        "--task",
        cfg.task,
        "--method",
        cfg.method,
        "--env-steps",
        str(cfg.env_steps),
        "--episode-steps",
        str(cfg.episode_steps),
        "--batch-size",
        str(cfg.batch_size),
        "--seed-steps",
        str(cfg.seed_steps),
        "--eval-every",
        str(cfg.eval_every),
        "--eval-episodes",
        str(cfg.eval_episodes),
        "--capacity",
        cfg.capacity,
        "--image-size",
        str(cfg.image_size),
        "--checkpoint-every",
        str(cfg.checkpoint_every),
        "--device",
        cfg.device,
        "--quiet",
        "--no-tensorboard",
    ]


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The uninterrupted run every resumed run is compared with."""
    out = tmp_path_factory.mktemp("reference")
    train(resume_config(), out, progress=False, tensorboard=False)
    return out


def _tensors_equal(a, b, where: str) -> None:
    if isinstance(a, torch.Tensor):
        assert isinstance(b, torch.Tensor) and a.dtype == b.dtype and torch.equal(a, b), where
    elif isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), where
        for key in a:
            _tensors_equal(a[key], b[key], f"{where}.{key}")
    elif isinstance(a, (list, tuple)):
        assert isinstance(b, (list, tuple)) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _tensors_equal(x, y, f"{where}[{i}]")
    else:
        assert a == b, where


def assert_same_run(run: Path, reference: Path) -> None:
    """Same CSV rows (timing columns aside), bitwise the same networks, optimiser states, random
    generators and replay contents."""
    for name in ("train.csv", "eval.csv"):
        got, want = read_csv(run / name), read_csv(reference / name)
        assert len(got) == len(want), name
        assert without_timing(got, name) == without_timing(want, name), name
    got, want = load_checkpoint(run / CHECKPOINT), load_checkpoint(reference / CHECKPOINT)
    for key in (
        "t",
        "episode",
        "buffer_total",
        "csv_rows",
        "last_eval_step",
        "complete",
        "recent_returns",
        "numpy_rng",
    ):
        assert getattr(got, key) == getattr(want, key), key
    assert got.complete
    networks, expected = got.agent["networks"], want.agent["networks"]
    assert networks.keys() == expected.keys()
    for name, tensor in expected.items():
        assert torch.equal(networks[name], tensor), name
    _tensors_equal(got.agent, want.agent, "agent")
    _tensors_equal(got.torch_rng, want.torch_rng, "torch_rng")
    n, buffers = got.buffer_total, []
    for folder in (run, reference):  # cartpole: 1 action, 3 frames of 32x32
        buffer = ReplayBuffer(1000, (9, 32, 32), 1)
        buffer.load_chunks(folder / "buffer", n)
        buffers.append(buffer)
    for name in ("obs", "next_frame", "action", "reward", "discount"):
        assert (getattr(buffers[0], name)[:n] == getattr(buffers[1], name)[:n]).all(), name


def test_reference_run_is_what_the_resume_tests_assume(reference):
    rows = read_csv(reference / "train.csv")
    assert len(rows) == 16 and rows[-1]["env_step"] == "512"
    assert [r["env_step"] for r in read_csv(reference / "eval.csv")] == ["0", "128", "256", "384", "512"]


def test_kill_and_resume_matches_the_uninterrupted_run(tmp_path, reference):
    """A real process is SIGKILLed once a checkpoint exists and two episodes are logged, then
    ``--resume``d to the end in a new process."""
    cfg, out = resume_config(), tmp_path / "run"
    command = [sys.executable, "-m", "agents.train", *cli_args(cfg), "--out", str(out)]
    with open(tmp_path / "stderr.txt", "w") as err:
        proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=err)
        try:
            deadline = time.monotonic() + 300
            while True:
                if proc.poll() is not None:
                    pytest.fail(
                        f"the run ended (status {proc.returncode}) before it could be killed: "
                        f"{(tmp_path / 'stderr.txt').read_text()}"
                    )
                rows = len(read_csv(out / "train.csv")) if (out / "train.csv").exists() else 0
                if (out / CHECKPOINT).exists() and rows >= 2:
                    break
                assert time.monotonic() < deadline, "no checkpoint after 300 s"
                time.sleep(0.01)
            proc.send_signal(signal.SIGKILL)
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
    assert proc.returncode == -signal.SIGKILL
    killed = load_checkpoint(out / CHECKPOINT)
    assert not killed.complete and killed.t < 64
    done = subprocess.run(command + ["--resume"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert '"env_steps": 512' in done.stdout
    assert_same_run(out, reference)


class Killed(BaseException):
    """Stands for SIGKILL inside the process: nothing catches it."""


def test_crash_between_chunk_and_checkpoint_resumes_exactly(tmp_path, reference, monkeypatch):
    """The worst moment to die: the episode's row, an evaluation row and the replay chunk are
    written but the checkpoint is not. The resumed run drops the extra rows and the stale chunk
    and still reproduces the uninterrupted run."""
    cfg, out = resume_config(), tmp_path / "run"
    real_save, calls = train_module.save_checkpoint, []

    def dying_save(path, state):
        calls.append(state.t)
        if len(calls) == 4:  # end of episode 4 (agent step 16, env step 128: also an evaluation)
            raise Killed
        real_save(path, state)

    monkeypatch.setattr(train_module, "save_checkpoint", dying_save)
    with pytest.raises(Killed):
        train(cfg, out, progress=False, tensorboard=False)
    monkeypatch.setattr(train_module, "save_checkpoint", real_save)
    checkpoint = load_checkpoint(out / CHECKPOINT)
    assert checkpoint.t == 12 and checkpoint.csv_rows["train.csv"] == 3 and checkpoint.csv_rows["eval.csv"] == 1
    assert len(read_csv(out / "train.csv")) == 4 and len(read_csv(out / "eval.csv")) == 2
    assert (out / "buffer" / "chunk-0000000012-0000000016.npz").exists()
    train(cfg, out, resume=True, progress=False, tensorboard=False)
    assert_same_run(out, reference)


def test_resume_with_more_env_steps_matches_a_longer_run(tmp_path, reference):
    """Run half the steps (ending on an episode end and an evaluation), resume the finished run
    with ``env_steps`` doubled: the same as the straight run to the larger count."""
    out = tmp_path / "run"
    half = resume_config(env_steps=256)
    train(half, out, progress=False, tensorboard=False)
    assert load_checkpoint(out / CHECKPOINT).complete
    before = {name: (out / name).read_text() for name in ("train.csv", "eval.csv")}
    train(half, out, resume=True, progress=False, tensorboard=False)  # already complete: nothing to do
    assert {name: (out / name).read_text() for name in before} == before
    train(resume_config(), out, resume=True, progress=False, tensorboard=False)
    assert_same_run(out, reference)


# ------------------------------------------------------------------ bad input
def _one_error_line(stderr: str, field: str) -> None:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith(f"error: {field}"), lines[0]
    assert "Traceback" not in stderr


@pytest.mark.parametrize(
    "args, field",
    [
        (["--task", "walker-run"], "task: 'walker-run' is not one of"),
        (["--method", "dbc"], "method: 'dbc' is not one of"),
        (["--beta", "-1"], "beta: -1.0 is not a non-negative"),
        (["--batch-size", "8", "--buffer-size", "4"], "batch_size: 8 exceeds buffer_size 4"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(tmp_path, args, field):
    proc = subprocess.run(
        [sys.executable, "-m", "agents.train", *args, "--out", str(tmp_path / "run")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2 and proc.stdout == ""
    _one_error_line(proc.stderr, field)
    assert not (tmp_path / "run").exists()


def test_out_folder_holding_a_run_needs_resume(tmp_path, capsys):
    out = tmp_path / "run"
    out.mkdir()
    (out / "train.csv").write_text("episode\n0\n")
    assert main(cli_args(resume_config()) + ["--out", str(out)]) == 2
    err = capsys.readouterr().err
    _one_error_line(err, "out: ")
    assert "already holds a run; pass --resume" in err
    assert (out / "train.csv").read_text() == "episode\n0\n"


def test_resume_with_another_method_is_refused(tmp_path, reference, capsys):
    out = tmp_path / "run"
    out.mkdir()
    shutil.copy(reference / CHECKPOINT, out / CHECKPOINT)
    assert main(cli_args(resume_config(method="drq")) + ["--out", str(out), "--resume"]) == 2
    err = capsys.readouterr().err
    _one_error_line(err, "resume: method is 'drq' but the checkpointed run used 'eps-r'")
    assert sorted(p.name for p in out.iterdir()) == [CHECKPOINT]


def test_cli_resume_reads_the_runs_own_configuration(tmp_path, reference, capsys):
    """``--resume --out RUN --env-steps N``: no other flag is needed (the run's config.json/checkpoint
    holds them), a different value of any other field is refused, and the result is the longer run."""
    out = tmp_path / "run"
    train(resume_config(env_steps=256), out, progress=False, tensorboard=False)
    assert main(["--resume", "--out", str(out), "--capacity", "high", "--quiet"]) == 2
    _one_error_line(capsys.readouterr().err, "resume: capacity is 'high' but the checkpointed run used 'low'")
    assert main(["--resume", "--out", str(out), "--env-steps", "512", "--quiet", "--no-tensorboard"]) == 0
    assert_same_run(out, reference)

"""Train a pixel agent on a DCS task: ``python -m agents.train --task cartpole-swingup --method eps-r``.

The loop below reads top to bottom: act (uniformly at random for the first
``seed_steps`` agent steps, then from the policy), store the transition,
update once per agent step, evaluate every ``eval_every`` environment steps on
the held-out backgrounds, and at episode ends append a row to ``train.csv``
and, every ``checkpoint_every`` environment steps, write a checkpoint.

A run folder holds::

    config.json      the TrainConfig and which backgrounds / device were used
    train.csv        one row per training episode (returns, losses, speed)
    eval.csv         one row per evaluation (mean and std return over episodes)
    checkpoint.pt    the latest checkpoint (written to a temporary file, then renamed)
    buffer/          replay chunks, append-only (see agents.replay)
    tb/              TensorBoard scalars, when tensorboard is installed

Reproducibility: training episode k is seeded with (seed, k), evaluation
episode j with (seed, eval, j), the replay sampler and the random seed actions
draw from one numpy generator and the networks from torch's generator, all of
which the checkpoint stores. ``--resume`` continues from the last checkpoint
(taken at an episode end) and, on the same device, reproduces the
uninterrupted run: the same CSV rows and the same final weights.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import shutil
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from bisimkit.errors import InputError
from bisimkit.files import atomic_write, atomic_write_json, atomic_write_text

from .config import CAPACITIES, METHODS, TrainConfig
from .dcs import TASKS

TRAIN_FIELDS = ["episode", "env_step", "episode_return", "episode_steps", "steps_per_s", "elapsed_s",
                "critic_loss", "actor_loss", "alpha", "entropy", "q", "bisim_loss", "transition_loss",
                "reward_loss", "inverse_loss"]
EVAL_FIELDS = ["env_step", "mean_return", "std_return", "episodes", "split", "elapsed_s"]
CHECKPOINT = "checkpoint.pt"
RESUMABLE_CHANGES = {"env_steps", "eval_every", "checkpoint_every", "device"}


def episode_seed(seed: int, episode: int, stream: int = 0) -> int:
    """The seed of training episode ``episode`` (stream 0) or evaluation episode (stream 1) of a run."""
    return int(np.random.SeedSequence([seed, stream, episode]).generate_state(1)[0])


# ------------------------------------------------------------------ files
class CsvLog:
    """An append-only CSV file that a resumed run truncates back to its checkpointed row count."""

    def __init__(self, path: Path, fields: list[str]):
        self.path, self.fields, self.rows = path, fields, 0
        if path.exists():
            with open(path, newline="") as f:
                self.rows = max(0, sum(1 for _ in f) - 1)

    def truncate(self, rows: int) -> None:
        """Keep the header and the first ``rows`` rows."""
        lines = self.path.read_text().splitlines(keepends=True) if self.path.exists() else []
        if len(lines) < rows + 1:
            raise InputError(f"{self.path.name}: holds {max(0, len(lines) - 1)} rows, the checkpoint expects {rows}")
        atomic_write_text(self.path, "".join(lines[:rows + 1]))
        self.rows = rows

    def append(self, row: dict) -> None:
        """Write one row (the header first if the file is new)."""
        new = not self.path.exists() or self.path.stat().st_size == 0
        with open(self.path, "a", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=self.fields, extrasaction="ignore")
            if new:
                writer.writeheader()
            writer.writerow({k: _fmt(row.get(k, "")) for k in self.fields})
        self.rows += 1


def _fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def save_checkpoint(path: Path, state: dict) -> None:
    """``torch.save`` to a temporary file, then rename: a crash never leaves half a checkpoint."""
    import torch

    atomic_write(path, lambda fh: torch.save(state, fh))


def load_checkpoint(path: Path, device="cpu") -> dict:
    """Read a checkpoint written by :func:`save_checkpoint`."""
    import torch

    try:
        return torch.load(path, map_location=device, weights_only=False)
    except Exception as exc:  # noqa: BLE001  (a truncated or foreign file)
        raise InputError(f"checkpoint: cannot read {path}: {exc}") from None


class TensorBoard:
    """Scalars to ``tb/`` when the tensorboard package is installed; silently nothing otherwise."""

    def __init__(self, folder: Path, enabled: bool):
        self.writer = None
        if enabled:
            try:
                from torch.utils.tensorboard import SummaryWriter
                self.writer = SummaryWriter(str(folder))
            except Exception:  # noqa: BLE001  (tensorboard missing or broken)
                self.writer = None

    def add(self, prefix: str, row: dict, step: int) -> None:
        if self.writer is not None:
            for key, value in row.items():
                if isinstance(value, (int, float)) and key != "env_step":
                    self.writer.add_scalar(f"{prefix}/{key}", value, step)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


# --------------------------------------------------------------- progress
class Progress:
    """One status line on stderr: steps, steps/s, recent and evaluation returns, ETA."""

    def __init__(self, total: int, label: str, enabled: bool):
        self.total, self.label, self.enabled = total, label, enabled
        self.tty = enabled and sys.stderr.isatty()
        self.last_print = 0.0
        self.last_fraction = -1.0

    def show(self, done: int, speed: float, recent: float | None, evaluation: float | None,
             force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        fraction = done / max(1, self.total)
        # on a terminal redraw at most twice a second; in a log write a line every 5%
        if not force and ((self.tty and now - self.last_print < 0.5) or
                          (not self.tty and fraction - self.last_fraction < 0.05)):
            return
        self.last_print, self.last_fraction = now, fraction
        eta = (self.total - done) / speed if speed > 0 else float("nan")
        parts = [f"{self.label} {done}/{self.total} env steps ({100 * fraction:.0f}%)", f"{speed:.1f} steps/s"]
        if recent is not None:
            parts.append(f"return {recent:.1f}")
        if evaluation is not None:
            parts.append(f"eval {evaluation:.1f}")
        if math.isfinite(eta):
            parts.append(f"ETA {eta / 60:.1f} min")
        line = " | ".join(parts)
        sys.stderr.write(("\r" + line.ljust(110)) if self.tty else line + "\n")
        sys.stderr.flush()

    def close(self) -> None:
        if self.enabled and self.tty:
            sys.stderr.write("\n")


# ----------------------------------------------------------------- helpers
def make_train_env(cfg: TrainConfig, split: str = "train"):
    """The run's environment (``split='eval'``: held-out videos when backgrounds are on)."""
    from .dcs import make_env

    return make_env(cfg.task, background=cfg.background, camera=cfg.camera, split=split, davis=cfg.davis,
                    seed=cfg.seed, image_size=cfg.image_size, frame_stack=cfg.frame_stack,
                    episode_steps=cfg.episode_steps, texture_size=cfg.texture_size)


def rollout(agent, env, episodes: int, seed: int) -> tuple[list[float], list[str | None]]:
    """Returns and background videos of ``episodes`` deterministic (``act(obs, explore=False)``)
    episodes, episode j seeded with (seed, eval, j)."""
    returns, videos = [], []
    for j in range(episodes):
        obs, done, total = env.reset(seed=episode_seed(seed, j, stream=1)), False, 0.0
        videos.append(env.background_video)
        while not done:
            obs, reward, done, _ = env.step(agent.act(obs, explore=False))
            total += reward
        returns.append(float(total))
    return returns, videos


def evaluate_policy(agent, env, episodes: int, seed: int) -> list[float]:
    """The returns of :func:`rollout`."""
    return rollout(agent, env, episodes, seed)[0]


def _rng_state() -> dict:
    import torch

    state = {"torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def _set_rng_state(state: dict) -> None:
    import torch

    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def _check_resumable(saved: dict, cfg: TrainConfig) -> None:
    for key, value in cfg.to_dict().items():
        if key not in RESUMABLE_CHANGES and saved.get(key) != value:
            raise InputError(f"resume: {key} is {value!r} but the checkpointed run used {saved.get(key)!r}")


# -------------------------------------------------------------------- train
def train(cfg: TrainConfig, out: str | os.PathLike, resume: bool = False, progress: bool = True,
          tensorboard: bool = True) -> dict:
    """Run (or resume) training into folder ``out``; returns a summary (final eval, seconds, paths)."""
    import torch

    from .agent import Agent, fast_cuda_math, pick_device
    from .replay import ReplayBuffer

    cfg = cfg.validated()
    out = Path(out)
    ckpt_path = out / CHECKPOINT
    if out.exists() and any(out.iterdir()) and not resume:
        raise InputError(f"out: {out} already holds a run; pass --resume to continue it or choose another folder")
    checkpoint = None
    if resume and ckpt_path.exists():
        checkpoint = load_checkpoint(ckpt_path)
        _check_resumable(checkpoint["config"], cfg)
    out.mkdir(parents=True, exist_ok=True)

    device = pick_device(cfg.device)
    if device.type == "cuda":
        fast_cuda_math()
    env, eval_env = make_train_env(cfg, "train"), make_train_env(cfg, "eval")
    repeat = env.action_repeat
    total_steps = math.ceil(cfg.env_steps / repeat)          # agent steps
    action_dim = int(env.action_spec.shape[0])
    torch.manual_seed(cfg.seed)
    rng = np.random.default_rng(cfg.seed)
    agent = Agent(env.observation_shape, action_dim, cfg, device)
    buffer = ReplayBuffer(cfg.buffer_size, env.observation_shape, action_dim,
                          mirror_device=str(device) if device.type == "cuda" else None)
    train_log, eval_log = CsvLog(out / "train.csv", TRAIN_FIELDS), CsvLog(out / "eval.csv", EVAL_FIELDS)
    t = episode = last_checkpoint = 0
    elapsed_before, last_eval_step, recent = 0.0, -1, []
    if checkpoint is not None:
        agent.load_training_state(checkpoint["agent"])
        buffer.load_chunks(out / "buffer", checkpoint["buffer_total"])
        rng.bit_generator.state = checkpoint["numpy_rng"]
        _set_rng_state(checkpoint["torch_rng"])
        t, episode = checkpoint["t"], checkpoint["episode"]
        last_checkpoint, last_eval_step = checkpoint["last_checkpoint"], checkpoint["last_eval_step"]
        elapsed_before, recent = checkpoint["elapsed_s"], list(checkpoint["recent_returns"])
        train_log.truncate(checkpoint["train_rows"])
        eval_log.truncate(checkpoint["eval_rows"])
    else:  # a fresh start: no stale rows or replay chunks of an earlier, uncheckpointed attempt
        shutil.rmtree(out / "buffer", ignore_errors=True)
        for log in (train_log, eval_log):
            if log.path.exists():
                log.path.unlink()
            log.rows = 0
    run_info = {"config": cfg.to_dict(), "device": str(device), "torch": torch.__version__,
                "backgrounds": env.background_source, "eval_backgrounds": eval_env.background_source,
                "action_repeat": repeat, "agent_steps": total_steps}
    atomic_write_json(out / "config.json", run_info)
    label = f"[{cfg.method} {cfg.task} seed {cfg.seed}]"
    if progress:
        print(f"{label} device {device}; backgrounds: {env.background_source}; "
              f"evaluation: {eval_env.background_source}", file=sys.stderr)
    board = TensorBoard(out / "tb", tensorboard)
    bar = Progress(total_steps * repeat, label, progress)
    start = time.monotonic()
    speed_mark = (start, t)
    last_eval = None
    last_speed = 0.0
    stats: dict = {}

    def evaluate_now() -> None:
        nonlocal last_eval, last_eval_step
        returns = evaluate_policy(agent, eval_env, cfg.eval_episodes, cfg.seed)
        row = {"env_step": t * repeat, "mean_return": float(np.mean(returns)), "std_return": float(np.std(returns)),
               "episodes": len(returns), "split": eval_env.split or "train-settings",
               "elapsed_s": elapsed_before + time.monotonic() - start}
        eval_log.append(row)
        board.add("eval", row, t * repeat)
        last_eval, last_eval_step = row["mean_return"], t * repeat

    def checkpoint_now() -> None:
        nonlocal last_checkpoint
        buffer.save_chunk(out / "buffer")
        save_checkpoint(ckpt_path, {
            "config": cfg.to_dict(), "t": t, "episode": episode, "agent": agent.training_state(),
            "buffer_total": buffer.total, "numpy_rng": rng.bit_generator.state, "torch_rng": _rng_state(),
            "last_checkpoint": t * repeat, "last_eval_step": last_eval_step,
            "elapsed_s": elapsed_before + time.monotonic() - start, "recent_returns": recent,
            "train_rows": train_log.rows, "eval_rows": eval_log.rows, "complete": t >= total_steps})
        last_checkpoint = t * repeat

    obs = env.reset(seed=episode_seed(cfg.seed, episode))
    episode_return, episode_steps = 0.0, 0
    if t == 0 and last_eval_step < 0:
        evaluate_now()  # the untrained policy: the curve's starting point
    try:
        while t < total_steps:
            if t < cfg.seed_steps:
                action = rng.uniform(-1.0, 1.0, action_dim).astype(np.float32)
            else:
                action = agent.act(obs, explore=True)
            next_obs, reward, done, info = env.step(action)
            discount = 0.0 if done and not info["truncated"] else 1.0
            buffer.add(obs, action, reward, discount, next_obs)
            if t >= cfg.seed_steps:
                stats = agent.update(buffer.sample(cfg.batch_size, rng))
            obs, t = next_obs, t + 1
            episode_return += reward
            episode_steps += 1
            if (t * repeat) // cfg.eval_every > max(last_eval_step, 0) // cfg.eval_every:
                evaluate_now()
            if done:
                now = time.monotonic()
                speed = (t - speed_mark[1]) * repeat / max(now - speed_mark[0], 1e-9)
                recent = (recent + [episode_return])[-5:]
                row = {"episode": episode, "env_step": t * repeat, "episode_return": episode_return,
                       "episode_steps": episode_steps * repeat, "steps_per_s": speed,
                       "elapsed_s": elapsed_before + now - start}
                agent.flush_checks()
                row.update({k: float(v) for k, v in stats.items()})
                train_log.append(row)
                speed_mark, last_speed = (now, t), speed
                board.add("train", row, t * repeat)
                episode += 1
                if t * repeat - last_checkpoint >= cfg.checkpoint_every or t >= total_steps:
                    if t >= total_steps and last_eval_step != t * repeat:
                        evaluate_now()
                    checkpoint_now()
                obs = env.reset(seed=episode_seed(cfg.seed, episode))
                episode_return, episode_steps = 0.0, 0
            if t > speed_mark[1]:
                last_speed = (t - speed_mark[1]) * repeat / max(time.monotonic() - speed_mark[0], 1e-9)
            bar.show(t * repeat, last_speed, float(np.mean(recent)) if recent else None, last_eval)
        if last_eval_step != t * repeat:  # the run ended mid-episode
            evaluate_now()
            checkpoint_now()
    finally:
        bar.close()
        board.close()
        env.close()
        eval_env.close()
    return {"out": str(out), "env_steps": t * repeat, "final_eval": last_eval,
            "seconds": elapsed_before + time.monotonic() - start, "device": str(device)}


# --------------------------------------------------------------------- CLI
def build_parser() -> argparse.ArgumentParser:
    d = TrainConfig()
    p = argparse.ArgumentParser(prog="python -m agents.train", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--task", default=d.task, help=f"one of {', '.join(TASKS)}")
    p.add_argument("--method", default=d.method, help=f"one of {', '.join(METHODS)}")
    p.add_argument("--seed", type=int, default=d.seed)
    p.add_argument("--env-steps", type=int, default=d.env_steps, help="environment steps (action repeat included)")
    p.add_argument("--beta", type=float, default=d.beta, help="weight of the bisimulation loss")
    p.add_argument("--capacity", default=d.capacity, help=f"MLP width: {', '.join(f'{k}={v}' for k, v in CAPACITIES.items())}")
    p.add_argument("--no-background", dest="background", action="store_false", help="no video backgrounds")
    p.add_argument("--no-camera", dest="camera", action="store_false", help="no camera distraction")
    p.add_argument("--davis", default=None, help="DAVIS-2017 JPEGImages/480p folder (else $BISIMKIT_DAVIS, "
                                                 "else bundled procedural videos)")
    p.add_argument("--aux", dest="aux", action="store_true", default=None,
                   help="train the world-model heads (default: only for the bisimulation methods)")
    p.add_argument("--no-aux", dest="aux", action="store_false")
    p.add_argument("--stacked-frames", action="store_true",
                   help="DrQ's encoder: the frame stack as one 3F-channel image (default: the paper's frame-wise encoder)")
    for name in ("batch_size", "buffer_size", "seed_steps", "eval_every", "eval_episodes", "checkpoint_every",
                 "episode_steps", "bisim_samples", "image_size", "frame_stack"):
        p.add_argument("--" + name.replace("_", "-"), type=int, default=getattr(d, name))
    p.add_argument("--device", default=d.device, help="auto (CUDA when present), cpu, cuda, cuda:N")
    p.add_argument("--out", default=None, help="run folder (default runs/TASK/METHOD/seedN)")
    p.add_argument("--resume", action="store_true", help="continue the run in --out from its checkpoint")
    p.add_argument("--no-tensorboard", dest="tensorboard", action="store_false")
    p.add_argument("--quiet", action="store_true", help="no progress line")
    return p


def config_from_args(args: argparse.Namespace) -> TrainConfig:
    """The :class:`TrainConfig` of parsed CLI arguments."""
    fields = {k: getattr(args, k) for k in ("task", "method", "seed", "env_steps", "beta", "capacity", "background",
                                            "camera", "davis", "aux", "stacked_frames", "batch_size",
                                            "buffer_size", "seed_steps",
                                            "eval_every", "eval_episodes", "checkpoint_every", "episode_steps",
                                            "bisim_samples", "image_size", "frame_stack", "device")}
    return replace(TrainConfig(), **fields).validated()


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        cfg = config_from_args(args)
        out = args.out or os.path.join("runs", cfg.task, cfg.method, f"seed{cfg.seed}")
        summary = train(cfg, out, resume=args.resume, progress=not args.quiet, tensorboard=args.tensorboard)
    except (InputError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted: resume with --resume (from the last checkpoint)", file=sys.stderr)
        return 130
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Train a pixel agent on a DCS task: ``python -m agents.train --task cartpole-swingup --method eps-r``.

:class:`Trainer` sets a run up and :meth:`Trainer.run` loops, one agent step
at a time, over named steps: :meth:`~Trainer.collect` (act: uniformly at random
for the first ``seed_steps`` agent steps, then from the policy; store the
transition), :meth:`~Trainer.learn` (one update per agent step once seeding is
over), :meth:`~Trainer.evaluate` (every ``eval_every`` environment steps, on
the held-out videos and, with ``eval_train_videos``, on the training ones) and
:meth:`~Trainer.end_episode` (a ``train.csv`` row; a :meth:`~Trainer.checkpoint`
every ``checkpoint_every`` environment steps).

A run folder holds::

    config.json      the resolved TrainConfig and which backgrounds / device were used
    train.csv        one row per training episode (returns, losses, speed)
    eval.csv         one row per evaluation on the held-out videos (mean and std return)
    eval_train.csv   the same on the training videos (runs with backgrounds and eval_train_videos)
    checkpoint.pt    the latest checkpoint (agents.checkpoint; written to a temporary file, then renamed)
    buffer/          replay chunks, append-only (see agents.replay)
    tb/              TensorBoard events (extra tensorboard): the rows' scalars, the learned-metric losses
                     and observation frames (agents.logging_backends); the first line says whether it is on
    wandb/           with --wandb PROJECT: the same scalars in a Weights & Biases run (wandb_run_id: its id)

Reproducibility: training episode k is seeded with (seed, k), evaluation
episode j with (seed, eval, j), the replay sampler and the random seed actions
draw from one numpy generator and the networks from torch's generator, all of
which the checkpoint stores. ``--resume`` continues from the last checkpoint
(taken at an episode end) with the run's own configuration; it may extend
``--env-steps``. On the same device it reproduces the uninterrupted run: the
same CSV rows and the same final weights.
"""

from __future__ import annotations

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
from bisimkit.files import atomic_write_json, atomic_write_text, check_output
from bisimkit.progress import Progress
from bisimkit_runs.files import CONFIG_FILE, EVAL_FIELDS, EVAL_FILES, TRAIN_FIELDS, TRAIN_FILE

from .checkpoint import CHECKPOINT, Checkpoint, Counters
from .config import (
    PRESETS,
    RESUMABLE_CHANGES,
    ConfigParser,
    TrainConfig,
    add_config_arguments,
    explicit_fields,
    make_config,
)
from .entry import run_command
from .logging_backends import Scalars, TensorBoard, WandB, metric_row
from .rollout import episode_seed, evaluate_policy, make_run_env


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
        if len(lines) < rows + 1 and rows > 0:
            raise InputError(f"{self.path.name}: holds {max(0, len(lines) - 1)} rows, the checkpoint expects {rows}")
        if lines:
            atomic_write_text(self.path, "".join(lines[: rows + 1]))
        self.rows = rows

    def clear(self) -> None:
        """Remove the file (a fresh start)."""
        self.path.unlink(missing_ok=True)
        self.rows = 0

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


# ------------------------------------------------------------ random state
def _rng_state() -> dict:
    import torch  # torch, the agents' extra: --help and bad input need none

    state = {"torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def _set_rng_state(state: dict) -> None:
    import torch  # torch, the agents' extra: --help and bad input need none

    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def resume_config(saved: dict, explicit: dict) -> TrainConfig:
    """The config of a resumed run: the checkpointed one, with the ``explicit`` fields that may change
    (:data:`~agents.config.RESUMABLE_CHANGES`); any other field given with a different value is an error."""
    cfg = TrainConfig.from_dict(saved)
    for key, value in explicit.items():
        if key not in RESUMABLE_CHANGES and getattr(cfg, key) != value:
            raise InputError(
                f"resume: {key} is {value!r} but the checkpointed run used {getattr(cfg, key)!r} "
                f"(a resumed run keeps its configuration; only "
                f"{', '.join(sorted(RESUMABLE_CHANGES))} may change)"
            )
    return replace(cfg, **{k: v for k, v in explicit.items() if k in RESUMABLE_CHANGES}).resolved()


# -------------------------------------------------------------------- train
class Trainer:
    """One training run (see the module doc): ``Trainer(cfg, out).run()``."""

    def __init__(
        self,
        cfg: TrainConfig | None,
        out: str | os.PathLike,
        resume: bool = False,
        progress: bool = True,
        tensorboard: bool = True,
        explicit: dict | None = None,
        wandb: str | None = None,
    ):
        """Set up: check the folder, read the checkpoint of a resumed run, build environments,
        agent, replay and logs, and restore the checkpointed state (or clear a stale attempt).
        ``cfg`` may be None when resuming from a checkpoint (its configuration is used);
        ``wandb``: a W&B project to log the scalars to as well (:class:`WandB`)."""
        import torch  # torch, the agents' extra: --help and bad input need none

        if wandb:
            import wandb as _  # noqa: F401  (missing: fail before anything is built or written)

        from .agent import Agent, fast_cuda_math, pick_device  # torch: --help and bad input need none
        from .replay import ReplayBuffer  # with the agent: the buffer is built once the config is checked

        self.out = Path(out)
        ckpt_path = self.out / CHECKPOINT
        checkpoint = None
        if resume and ckpt_path.exists():
            checkpoint = Checkpoint.load(ckpt_path)
            if explicit is None:
                explicit = {} if cfg is None else cfg.resolved().to_dict()
            cfg = resume_config(checkpoint.config, explicit)
        elif cfg is None:
            raise InputError(f"out: {ckpt_path} does not exist: nothing to resume")
        else:
            cfg = cfg.resolved()
            if self.out.exists() and any(self.out.iterdir()) and not resume:
                raise InputError(
                    f"out: {self.out} already holds a run; pass --resume to continue it or choose another folder"
                )
        self.cfg = cfg
        self.device = pick_device(cfg.device)
        if cfg.graphs and self.device.type != "cuda":
            raise InputError(f"graphs: CUDA graphs need a CUDA device; this run's device is {self.device}")
        if self.device.type == "cuda":
            fast_cuda_math()

        self.env = make_run_env(cfg, "train")
        # an environment with shared_eval (carla-highway: one server, one world) is evaluated on itself,
        # at training episode ends only (see run)
        self.shared_eval = bool(getattr(self.env, "shared_eval", False))
        self.eval_envs = {"eval": self.env if self.shared_eval else make_run_env(cfg, "eval")}
        if cfg.background and cfg.eval_train_videos:
            self.eval_envs["train"] = make_run_env(cfg, "train")
        self.out.mkdir(parents=True, exist_ok=True)  # only once the simulator is there
        self.repeat = self.env.action_repeat
        self.total_steps = math.ceil(cfg.env_steps / self.repeat)  # agent steps
        self.action_dim = int(self.env.action_spec.shape[0])
        torch.manual_seed(cfg.seed)
        self.rng = np.random.default_rng(cfg.seed)
        self.agent = Agent(self.env.observation_shape, self.action_dim, cfg, self.device)
        self.buffer = ReplayBuffer(
            cfg.buffer_size,
            self.env.observation_shape,
            self.action_dim,
            mirror_device=str(self.device) if self.device.type == "cuda" else None,
        )
        self.train_log = CsvLog(self.out / TRAIN_FILE, TRAIN_FIELDS)
        self.eval_logs = {split: CsvLog(self.out / EVAL_FILES[split], EVAL_FIELDS) for split in self.eval_envs}
        self.logs = [self.train_log, *self.eval_logs.values()]
        self.counters = Counters()
        self.restore(checkpoint)
        atomic_write_json(
            self.out / CONFIG_FILE,
            {
                "config": cfg.to_dict(),
                "device": str(self.device),
                "fast": self.agent.fast,
                "graphs": self.agent.graphs,
                "torch": torch.__version__,
                "backgrounds": self.env.background_source,
                "eval_backgrounds": self.eval_envs["eval"].background_source,
                "action_repeat": self.repeat,
                "agent_steps": self.total_steps,
            },
        )
        self.label = f"[{cfg.method} {cfg.task} seed {cfg.seed}]"
        self.show_progress = progress
        self.tensorboard = TensorBoard(self.out / "tb", tensorboard)
        self.board = Scalars(self.tensorboard, WandB(wandb, self.out, cfg.to_dict(), self.label))
        self.frames_at: int | None = None  # the evaluation step after which frames were last logged
        self.bar = Progress(
            self.total_steps * self.repeat,
            self.label,
            unit="env steps",
            enabled=progress,
            initial=self.env_step,
            rate_label="steps/s",
        )
        self.start = time.monotonic()
        self.speed_mark = (self.start, self.counters.t)
        self.last_eval: float | None = None
        self.stats: dict = {}
        self.obs = None
        self.episode_return, self.episode_steps = 0.0, 0

    def restore(self, checkpoint: Checkpoint | None) -> None:
        """Put back the checkpointed state (a fresh start: clear the stale rows and replay chunks of an
        earlier, uncheckpointed attempt)."""
        if checkpoint is None:
            shutil.rmtree(self.out / "buffer", ignore_errors=True)
            for log in self.logs:
                log.clear()
            return
        self.agent.load_training_state(checkpoint.agent)
        self.buffer.load_chunks(self.out / "buffer", checkpoint.buffer_total)
        self.rng.bit_generator.state = checkpoint.numpy_rng
        _set_rng_state(checkpoint.torch_rng)
        self.counters = Counters.of(checkpoint)
        for log in self.logs:
            log.truncate(checkpoint.csv_rows.get(log.path.name, 0))

    # ----------------------------------------------------------- helpers
    @property
    def env_step(self) -> int:
        """Environment steps done."""
        return self.counters.t * self.repeat

    def elapsed(self) -> float:
        """Training seconds, earlier processes of a resumed run included."""
        return self.counters.elapsed_before + time.monotonic() - self.start

    def reset_episode(self) -> None:
        """Start training episode ``counters.episode``, seeded with (seed, episode); its first observation
        goes to TensorBoard as ``frames/train`` when it is the first since the last evaluation."""
        self.obs = self.env.reset(seed=episode_seed(self.cfg.seed, self.counters.episode))
        self.episode_return, self.episode_steps = 0.0, 0
        if self.frames_at != self.counters.last_eval_step:
            self.board.add_frames("frames/train", self.obs, self.env_step)
            self.frames_at = self.counters.last_eval_step

    # ------------------------------------------------------- named steps
    def collect(self) -> bool:
        """Act (at random while seeding), step the environment and store the transition; True at an episode end."""
        cfg, c = self.cfg, self.counters
        if c.t < cfg.seed_steps:
            action = self.rng.uniform(-1.0, 1.0, self.action_dim).astype(np.float32)
        else:
            action = self.agent.act(self.obs, explore=True)
        next_obs, reward, done, info = self.env.step(action)
        discount = 0.0 if done and not info["truncated"] else 1.0
        self.buffer.add(self.obs, action, reward, discount, next_obs)
        self.obs, c.t = next_obs, c.t + 1
        self.episode_return += reward
        self.episode_steps += 1
        return done

    def learn(self) -> None:
        """One gradient update on a replay batch after each agent step past the seed steps."""
        if self.counters.t > self.cfg.seed_steps:
            # the actor's losses are logged from the last update that stepped the actor
            self.stats = {**self.stats, **self.agent.update(self.buffer.sample(self.cfg.batch_size, self.rng))}

    def evaluation_due(self) -> bool:
        """Whether an ``eval_every`` boundary was crossed since the last evaluation."""
        every = self.cfg.eval_every
        return self.env_step // every > max(self.counters.last_eval_step, 0) // every

    def evaluate(self) -> None:
        """Deterministic episodes on each evaluation split; one row per split."""
        for split, env in self.eval_envs.items():
            returns = evaluate_policy(self.agent, env, self.cfg.eval_episodes, self.cfg.seed)
            row = {
                "env_step": self.env_step,
                "mean_return": float(np.mean(returns)),
                "std_return": float(np.std(returns)),
                "episodes": len(returns),
                "split": env.split or "train-settings",
                "elapsed_s": self.elapsed(),
            }
            self.eval_logs[split].append(row)
            self.board.add("eval" if split == "eval" else "eval_train", row, self.env_step)
            if split == "eval":
                self.last_eval = row["mean_return"]
        self.counters.last_eval_step = self.env_step

    def end_episode(self) -> None:
        """Log the episode; checkpoint when due (evaluating first at the end of the run); reset."""
        c, now = self.counters, time.monotonic()
        speed = (c.t - self.speed_mark[1]) * self.repeat / max(now - self.speed_mark[0], 1e-9)
        c.recent = (c.recent + [self.episode_return])[-5:]
        row = {
            "episode": c.episode,
            "env_step": self.env_step,
            "episode_return": self.episode_return,
            "episode_steps": self.episode_steps * self.repeat,
            "steps_per_s": speed,
            "elapsed_s": self.elapsed(),
        }
        self.agent.flush_checks()
        row.update({k: float(v) for k, v in self.stats.items()})
        self.train_log.append(row)
        self.board.add("train", row, self.env_step)
        if metric_row(row):
            self.board.add("metric", metric_row(row), self.env_step)
        self.speed_mark = (now, c.t)
        c.episode += 1
        finished = c.t >= self.total_steps
        if self.env_step - c.last_checkpoint >= self.cfg.checkpoint_every or finished:
            if finished and c.last_eval_step != self.env_step:
                self.evaluate()
            self.checkpoint()
        self.reset_episode()

    def checkpoint(self) -> None:
        """Write the new replay chunk, then the checkpoint (atomically)."""
        c = self.counters
        self.buffer.save_chunk(self.out / "buffer")
        save_checkpoint(
            self.out / CHECKPOINT,
            Checkpoint(
                config=self.cfg.to_dict(),
                agent=self.agent.training_state(),
                t=c.t,
                episode=c.episode,
                buffer_total=self.buffer.total,
                numpy_rng=self.rng.bit_generator.state,
                torch_rng=_rng_state(),
                last_checkpoint=self.env_step,
                last_eval_step=c.last_eval_step,
                elapsed_s=self.elapsed(),
                recent_returns=list(c.recent),
                csv_rows={log.path.name: log.rows for log in self.logs},
                complete=c.t >= self.total_steps,
            ),
        )
        c.last_checkpoint = self.env_step

    def show(self) -> None:
        """Redraw the progress line (steps/s and ETA: the progress line's windowed rate, pauses for
        evaluation excluded; ``bisimkit.progress``)."""
        recent = self.counters.recent
        self.bar.show(self.env_step, {"return": float(np.mean(recent)) if recent else None, "eval": self.last_eval})

    # ---------------------------------------------------------------- run
    def run(self) -> dict:
        """Train to ``env_steps`` (or finish a resumed run); returns a summary (final eval, seconds, paths)."""
        c = self.counters
        if self.show_progress:
            print(
                f"{self.label} device {self.device} ({'fast' if self.agent.fast else 'plain'} updates); "
                f"backgrounds: {self.env.background_source}; evaluation: "
                f"{self.eval_envs['eval'].background_source}; {self.tensorboard.describe()}",
                file=sys.stderr,
            )
        try:
            if c.t == 0 and c.last_eval_step < 0:
                self.evaluate()  # the untrained policy: the curve's starting point
            self.reset_episode()  # after it: a shared evaluation environment resets the episode
            while c.t < self.total_steps:
                done = self.collect()
                self.learn()
                if self.evaluation_due() and (done or not self.shared_eval):
                    self.evaluate()
                if done:
                    self.end_episode()
                self.show()
            if c.last_eval_step != self.env_step:  # the run ended mid-episode, between evaluations
                self.evaluate()
            if c.last_checkpoint != self.env_step:  # ... or right on an evaluation boundary
                self.checkpoint()
        finally:
            self.close()
        return {
            "out": str(self.out),
            "env_steps": self.env_step,
            "final_eval": self.last_eval,
            "seconds": self.elapsed(),
            "device": str(self.device),
        }

    def close(self) -> None:
        """Close the progress line, TensorBoard and every environment."""
        self.bar.close()
        self.board.close()
        for env in {id(env): env for env in [self.env, *self.eval_envs.values()]}.values():
            env.close()


def save_checkpoint(path: Path, checkpoint: Checkpoint) -> None:
    """:meth:`Checkpoint.save` (a module-level hook the crash tests replace)."""
    checkpoint.save(path)


def train(
    cfg: TrainConfig | None,
    out: str | os.PathLike,
    resume: bool = False,
    progress: bool = True,
    tensorboard: bool = True,
    explicit: dict | None = None,
    wandb: str | None = None,
) -> dict:
    """Run (or resume) training into folder ``out``; returns a summary (final eval, seconds, paths).

    ``explicit``: with ``resume``, the fields the user gave (by default every field of ``cfg``
    must match the checkpointed run, except those that may change); ``wandb``: a W&B project."""
    return Trainer(
        cfg, out, resume=resume, progress=progress, tensorboard=tensorboard, explicit=explicit, wandb=wandb
    ).run()


# --------------------------------------------------------------------- CLI
def build_parser() -> ConfigParser:
    """``python -m agents.train``: one flag per TrainConfig field, plus the run options."""
    p = ConfigParser(
        prog="python -m agents.train",
        description=__doc__.split("\n\n")[0],
        epilog="presets: " + "; ".join(f"{name}: {preset.about}" for name, preset in PRESETS.items()),
    )
    run = p.add_argument_group("run")
    run.add_argument("--out", default=None, help="run folder (default runs/TASK/METHOD/seedN)")
    run.add_argument(
        "--resume",
        action="store_true",
        help="continue the run in --out from its checkpoint, with its own configuration "
        f"(only {', '.join('--' + f.replace('_', '-') for f in sorted(RESUMABLE_CHANGES))} "
        "may change)",
    )
    run.add_argument(
        "--no-tensorboard",
        dest="tensorboard",
        action="store_false",
        help="no tb/ events (on when the tensorboard extra is installed)",
    )
    run.add_argument(
        "--wandb",
        default=None,
        metavar="PROJECT",
        help="also log the scalars to this Weights & Biases project (needs wandb; WANDB_MODE=offline is honoured)",
    )
    run.add_argument("--quiet", action="store_true", help="no progress line")
    add_config_arguments(p.add_argument_group("configuration (every TrainConfig field)"))
    return p


def config_from_args(args) -> tuple[TrainConfig, dict]:
    """The :class:`TrainConfig` of parsed CLI arguments (its preset, then the flags given), and those flags."""
    explicit = explicit_fields(args)
    fields = {k: v for k, v in explicit.items() if k != "preset"}
    return make_config(explicit.get("preset", "paper"), **fields), explicit


def default_out(explicit: dict) -> str:
    """``runs/TASK/METHOD/seedN`` of the flags given (the preset's values for those not given)."""
    fields = {**PRESETS.get(explicit.get("preset", "paper"), PRESETS["paper"]).values, **explicit}
    base = TrainConfig()
    return os.path.join(
        "runs",
        str(fields.get("task", base.task)),
        str(fields.get("method", base.method)),
        f"seed{fields.get('seed', base.seed)}",
    )


def main(argv: list[str] | None = None) -> int:
    def body() -> int:
        args = build_parser().parse_args(argv)
        explicit = explicit_fields(args)
        out = str(check_output(args.out or default_out(explicit), folder=True))
        if args.resume and (Path(out) / CHECKPOINT).exists():
            cfg = None  # the run's own configuration, checked against the flags given
        else:
            cfg, explicit = config_from_args(args)
        summary = train(
            cfg,
            out,
            resume=args.resume,
            progress=not args.quiet,
            tensorboard=args.tensorboard,
            explicit=explicit if args.resume else None,
            wandb=args.wandb,
        )
        print(json.dumps(summary))
        return 0

    return run_command(
        body, interrupted="resume with --resume (from the last checkpoint)", bad_input=(InputError, ValueError)
    )


if __name__ == "__main__":
    sys.exit(main())

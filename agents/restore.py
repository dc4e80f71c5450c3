"""Rebuild a trained agent from a run folder or a checkpoint file written by :mod:`agents.train`.

``restore_agent(path, device)`` accepts either a run folder (holding
``checkpoint.pt``) or the checkpoint file itself, reads it as data only
(:class:`agents.checkpoint.Checkpoint`), and returns a :class:`Restored` with the agent (on the
chosen device, weights loaded, in eval mode), its
:class:`~agents.config.TrainConfig`, an environment of the run on the requested
background split and the number of environment steps it was trained for. Every
problem raises :class:`~bisimkit.errors.InputError` naming the field
(``checkpoint``, ``device``, ``split``, ``episode_steps``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from bisimkit.errors import InputError, check_count

from .agent import Agent, pick_device
from .checkpoint import CHECKPOINT, Checkpoint
from .config import TrainConfig, check_device
from .mlp import initialisation_skipped
from .rollout import make_run_env
from .videos import SPLITS

if TYPE_CHECKING:
    from .dcs import DCSEnv


@dataclass
class Restored:
    """A trained agent with its configuration and provenance."""

    agent: Agent
    config: TrainConfig
    env: DCSEnv  # of the requested split (close it when done)
    path: Path  # the checkpoint file
    env_steps: int  # environment steps trained (agent steps x action repeat)
    device: str


def resolve_checkpoint(path: str | os.PathLike) -> Path:
    """The checkpoint file of ``path``: the file itself, or ``checkpoint.pt`` inside a run folder."""
    path = Path(path)
    if path.is_dir():
        candidate = path / CHECKPOINT
        if not candidate.is_file():
            raise InputError(f"checkpoint: folder {path} holds no {CHECKPOINT} (is it a run folder?)")
        return candidate
    if not path.exists():
        raise InputError(f"checkpoint: no such file or folder: {path}")
    if not path.is_file():
        raise InputError(f"checkpoint: {path} is not a file")
    return path


def read_checkpoint(path: str | os.PathLike) -> tuple[Path, Checkpoint, TrainConfig]:
    """Resolve and load a training checkpoint (on the CPU, as data only): the file, the checkpoint and
    its configuration."""
    file = resolve_checkpoint(path)
    checkpoint = Checkpoint.load(file, device="cpu")
    try:
        config = TrainConfig.from_dict(checkpoint.config)
    except InputError as exc:
        raise InputError(f"checkpoint: {file}: {exc}") from None
    return file, checkpoint, config


def restore_agent(
    path: str | os.PathLike, device: str = "auto", split: str = "eval", episode_steps: int | None = None
) -> Restored:
    """Load the agent of a run folder or checkpoint onto ``device``, with an environment of the run.

    The environment has the run's task and distractions, the background videos of
    ``split`` ('eval': held out, 'train': the training videos; ignored when the run
    had no backgrounds) and, when given, ``episode_steps`` control steps per
    episode. The caller closes ``Restored.env``.
    """
    check_device(device)
    if split not in SPLITS:
        raise InputError(f"split: {split!r} is not {' or '.join(SPLITS)}")
    if episode_steps is not None:
        check_count("episode_steps", episode_steps)
    file, checkpoint, config = read_checkpoint(path)
    torch_device = pick_device(device)
    run_config = config if episode_steps is None else replace(config, episode_steps=episode_steps)
    env = make_run_env(run_config, split)
    try:
        with initialisation_skipped():  # the checkpoint overwrites every weight (load_state_dict is strict)
            agent = Agent(env.observation_shape, int(env.action_spec.shape[0]), config, torch_device)
        agent.load_training_state(checkpoint.agent)
    except (KeyError, RuntimeError, ValueError) as exc:
        env.close()
        raise InputError(f"checkpoint: {file} does not match its configuration: {str(exc).splitlines()[0]}") from None
    agent.eval()
    return Restored(agent, config, env, file, checkpoint.t * config.action_repeat, str(torch_device))

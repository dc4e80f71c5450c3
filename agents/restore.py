"""Rebuild a trained agent from a run folder or a checkpoint file written by :mod:`agents.train`.

``restore_agent(path, device)`` accepts either a run folder (holding
``checkpoint.pt``) or the checkpoint file itself, checks that it really is a
training checkpoint, and returns a :class:`Restored` with the agent (on the
chosen device, weights loaded, in eval mode), its
:class:`~agents.config.TrainConfig`, an environment of the run on the requested
background split and the number of environment steps it was trained for. Every
problem raises :class:`~bisimkit.errors.InputError` naming the field
(``checkpoint``, ``device``, ``split``, ``episode_steps``).
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from bisimkit.errors import InputError, check_count

from .config import TrainConfig, check_device
from .train import CHECKPOINT, load_checkpoint

if TYPE_CHECKING:
    from .agent import Agent
    from .dcs import DCSEnv

REQUIRED_KEYS = ("config", "agent", "t")


@dataclass
class Restored:
    """A trained agent with its configuration and provenance."""

    agent: Agent
    config: TrainConfig
    env: DCSEnv              # of the requested split (close it when done)
    path: Path               # the checkpoint file
    env_steps: int           # environment steps trained (agent steps x action repeat)
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


def read_checkpoint(path: str | os.PathLike) -> tuple[Path, dict, TrainConfig]:
    """Resolve and load a training checkpoint (on the CPU): the file, its dict and its configuration."""
    file = resolve_checkpoint(path)
    state = load_checkpoint(file, device="cpu")
    if not isinstance(state, dict) or any(key not in state for key in REQUIRED_KEYS):
        raise InputError(f"checkpoint: {file} is not an agents.train checkpoint "
                         f"(expected a dict with keys {', '.join(REQUIRED_KEYS)})")
    if not isinstance(state["agent"], dict) or "networks" not in state["agent"]:
        raise InputError(f"checkpoint: {file} holds no agent networks")
    if not isinstance(state["config"], dict):
        raise InputError(f"checkpoint: {file} has no configuration dict")
    return file, state, TrainConfig.from_dict(state["config"])


@contextmanager
def _skip_orthogonal_init():
    """Make ``torch.nn.init.orthogonal_`` a no-op: the agent's initial weights are overwritten by the
    checkpoint anyway (``load_state_dict`` is strict), and the QR factorisations cost seconds on a CPU."""
    import torch

    original = torch.nn.init.orthogonal_
    torch.nn.init.orthogonal_ = lambda tensor, gain=1.0, generator=None: tensor
    try:
        yield
    finally:
        torch.nn.init.orthogonal_ = original


def restore_agent(path: str | os.PathLike, device: str = "auto", split: str = "eval",
                  episode_steps: int | None = None) -> Restored:
    """Load the agent of a run folder or checkpoint onto ``device``, with an environment of the run.

    The environment has the run's task and distractions, the background videos of
    ``split`` ('eval': held out, 'train': the training videos; ignored when the run
    had no backgrounds) and, when given, ``episode_steps`` control steps per
    episode. The caller closes ``Restored.env``.
    """
    from .agent import Agent, pick_device
    from .train import make_train_env

    check_device(device)
    if split not in ("eval", "train"):
        raise InputError(f"split: {split!r} is not eval or train")
    if episode_steps is not None:
        check_count("episode_steps", episode_steps)
    file, state, config = read_checkpoint(path)
    torch_device = pick_device(device)
    run_config = config if episode_steps is None else replace(config, episode_steps=episode_steps)
    env = make_train_env(run_config, split)
    try:
        with _skip_orthogonal_init():
            agent = Agent(env.observation_shape, int(env.action_spec.shape[0]), config, torch_device)
        agent.load_training_state(state["agent"])
    except (KeyError, RuntimeError, ValueError) as exc:
        env.close()
        raise InputError(f"checkpoint: {file} does not match its configuration: "
                         f"{str(exc).splitlines()[0]}") from None
    agent.eval()
    return Restored(agent, config, env, file, int(state["t"]) * config.action_repeat, str(torch_device))

"""The DCS tasks as Gymnasium environments: ``gymnasium.make("bisimkit/DCS-walker-walk-v0", ...)``.

Each task of :data:`agents.dcs.TASKS` is registered as ``bisimkit/DCS-<task>-v0``; the keyword
arguments of ``gymnasium.make`` go to :func:`agents.dcs.make_env` (``background``, ``camera``,
``split``, ``seed``, ``image_size``, ``frame_stack``, ``davis``, ...) plus ``render_mode="rgb_array"``.
It is the same environment as ``make_env``'s (:class:`GymDCSEnv` wraps a :class:`~agents.dcs.DCSEnv`):

* ``observation_space``: ``Box(0, 255, (3 * frame_stack, size, size), uint8)``, channels first;
* ``action_space``: ``Box(-1, 1, (dim,), float32)``;
* ``step`` returns ``(obs, reward, terminated, truncated, info)``: the tasks have no terminal
  state, so an episode ends ``truncated`` at its time limit;
* ``reset(seed=s)`` reseeds the task and both distractions (:meth:`DCSEnv.reseed`): the episode
  is a function of ``s``; ``reset()`` continues the streams;
* ``render()`` returns the last frame, ``(size, size, 3)`` uint8.

Registration. Importing gymnasium sets ``PYGAME_HIDE_SUPPORT_PROMPT`` and takes half a second,
so no module of ``agents`` imports it at import time. The ids are registered

* by ``import agents`` when gymnasium is already imported (``import gymnasium; import agents``);
* by :func:`register_envs` (idempotent);
* on the fly by ``gymnasium.make("agents.gym_env:bisimkit/DCS-walker-walk-v0")`` (gymnasium imports
  the module before the id is looked up).
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from bisimkit.errors import InputError

from .dcs import TASKS, make_env

#: The id of task ``t`` is ``ID_FORMAT.format(task=t)``.
ID_FORMAT = "bisimkit/DCS-{task}-v0"


def env_id(task: str) -> str:
    """The Gymnasium id of a DCS task, e.g. ``bisimkit/DCS-walker-walk-v0``."""
    return ID_FORMAT.format(task=task)


def register_envs() -> list[str]:
    """Register every DCS task with gymnasium (imports it); returns the ids. Calling it again is harmless."""
    from gymnasium.envs.registration import register, registry  # the gym extra

    ids = []
    for task in TASKS:
        name = env_id(task)
        if name not in registry:
            register(id=name, entry_point="agents.gym_env:make_gym_env", kwargs={"task": task})
        ids.append(name)
    return ids


_CLASS: list[type] = []


def gym_env_class() -> type:
    """:class:`GymDCSEnv`, defined on first use (it subclasses ``gymnasium.Env``)."""
    if _CLASS:
        return _CLASS[0]
    import gymnasium  # the gym extra
    from gymnasium import spaces  # the gym extra

    class GymDCSEnv(gymnasium.Env):
        """A :class:`~agents.dcs.DCSEnv` behind the Gymnasium API (see the module doc)."""

        metadata = {"render_modes": ["rgb_array"], "render_fps": 25}

        def __init__(self, task: str, render_mode: str | None = None, **make_kwargs: Any):
            if render_mode not in (None, "rgb_array"):
                raise InputError(f"render_mode: {render_mode!r} is not supported (use 'rgb_array')")
            self.render_mode = render_mode
            self.dcs = make_env(task, **make_kwargs)
            spec = self.dcs.action_spec
            self.observation_space = spaces.Box(0, 255, self.dcs.observation_shape, np.uint8)
            self.action_space = spaces.Box(
                np.full(spec.shape, -1.0, np.float32), np.full(spec.shape, 1.0, np.float32), dtype=np.float32
            )
            self._low, self._high = np.asarray(spec.minimum, float), np.asarray(spec.maximum, float)
            self._obs: np.ndarray | None = None

        def reset(self, *, seed: int | None = None, options: dict | None = None):
            super().reset(seed=seed)
            self._obs = self.dcs.reset(seed=seed)
            return self._obs, {"background_video": self.dcs.background_video}

        def step(self, action):
            action = np.asarray(action, dtype=np.float64)
            # the agent's [-1, 1] mapped onto the task's bounds (they are [-1, 1] for every DCS task)
            scaled = self._low + (np.clip(action, -1.0, 1.0) + 1.0) * (self._high - self._low) / 2
            obs, reward, done, info = self.dcs.step(scaled)
            truncated = bool(info["truncated"])
            self._obs = obs
            return obs, float(reward), bool(done and not truncated), truncated, dict(info)

        def render(self):
            if self._obs is None:
                return None
            return np.ascontiguousarray(self._obs[-3:].transpose(1, 2, 0))

        def close(self):
            if self.dcs is not None:
                self.dcs.close()
                self.dcs = None
            super().close()

    _CLASS.append(GymDCSEnv)
    return GymDCSEnv


def make_gym_env(task: str, **kwargs: Any):
    """A :class:`GymDCSEnv` of ``task`` (the registered entry point)."""
    return gym_env_class()(task, **kwargs)


if "gymnasium" in sys.modules:  # imported by gymnasium.make("agents.gym_env:...") or after gymnasium
    register_envs()

"""Episodes of a policy: seeding, rollouts and evaluation, shared by training, ``agents.evaluate``,
the nearest-neighbour figure and the learning check.

Episode ``k`` of a run is seeded with ``(seed, stream, k)``: stream 0 for
training episodes, 1 for evaluation episodes, so an evaluation never disturbs
the training stream and ``agents.evaluate`` replays exactly the episodes a run
was evaluated on.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

TRAIN_STREAM, EVAL_STREAM = 0, 1


class Policy(Protocol):
    """Anything with ``act(obs, explore) -> action`` (an :class:`agents.agent.Agent`, a random policy)."""

    def act(self, obs: np.ndarray, explore: bool) -> np.ndarray: ...


def episode_seed(seed: int, episode: int, stream: int = TRAIN_STREAM) -> int:
    """The seed of training episode ``episode`` (stream 0) or evaluation episode (stream 1) of a run."""
    return int(np.random.SeedSequence([seed, stream, episode]).generate_state(1)[0])


def make_run_env(cfg, split: str = "train"):
    """The environment of a run's config (``split='eval'``: the held-out videos when backgrounds are on;
    carla-highway has no splits: it connects to the CARLA server of the ``carla_*`` fields)."""
    if getattr(cfg, "carla", False):
        from .carla_env import make_carla_env  # only for carla-highway runs

        return make_carla_env(
            host=cfg.carla_host,
            port=cfg.carla_port,
            timeout=cfg.carla_timeout,
            town=cfg.carla_town,
            cameras=cfg.carla_cameras,
            image_size=cfg.image_size,
            frame_stack=cfg.frame_stack,
            action_repeat=cfg.action_repeat,
            episode_steps=cfg.episode_steps or 1000,
            vehicles=cfg.carla_vehicles,
            reward=cfg.carla_reward,
            seed=cfg.seed,
        )
    from .dcs import make_env  # the simulator stack (the agents' extra), only for DCS runs

    return make_env(
        cfg.task,
        background=cfg.background,
        camera=cfg.camera,
        split=split,
        davis=cfg.davis,
        seed=cfg.seed,
        image_size=cfg.image_size,
        frame_stack=cfg.frame_stack,
        episode_steps=cfg.episode_steps,
        texture_size=cfg.texture_size,
        fast_render=cfg.fast_render,
    )


def rollout(policy: Policy, env, episodes: int, seed: int, progress=None) -> tuple[list[float], list[str | None]]:
    """Returns and background videos of ``episodes`` deterministic (``act(obs, explore=False)``)
    episodes, episode j seeded with (seed, eval, j); ``progress`` (a :class:`bisimkit.progress.Progress`)
    advances by one per episode."""
    returns, videos = [], []
    for j in range(episodes):
        obs, done, total = env.reset(seed=episode_seed(seed, j, stream=EVAL_STREAM)), False, 0.0
        videos.append(env.background_video)
        while not done:
            obs, reward, done, _ = env.step(policy.act(obs, explore=False))
            total += reward
        returns.append(float(total))
        if progress is not None:
            progress.advance(1, {"return": float(total)})
    return returns, videos


def evaluate_policy(policy: Policy, env, episodes: int, seed: int) -> list[float]:
    """The returns of :func:`rollout`."""
    return rollout(policy, env, episodes, seed)[0]

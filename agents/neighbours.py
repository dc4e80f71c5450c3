"""Nearest neighbours under an agent's learned distance: the data of the paper's neighbour figure
(drawn by :mod:`figures.nearest_neighbours`).

From a checkpoint: roll out K episodes of the trained (deterministic) policy on
the held-out background videos, each reseeded (so each has its own video and
camera motion; episode j uses the seed of evaluation episode j), keep a
subsample of the observations of every episode and embed them. Then pick Q
random query observations and find, for each, the N closest observations *from
other episodes* under the agent's distance head (``agent.distance``; the L1
distance between latents for SAC and DrQ, which have none).

Memory: at most ``keep`` observations (evenly spaced steps) are kept per episode.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from bisimkit.errors import InputError, check_count
from bisimkit.progress import Progress

from .restore import restore_agent
from .rollout import episode_seed

if TYPE_CHECKING:
    import torch

    from .agent import Agent
    from .dcs import DCSEnv


@dataclass
class Observations:
    """Kept observations of several episodes: pixels and where each came from."""

    obs: np.ndarray  # uint8 (M, 3F, H, W)
    episode: np.ndarray  # (M,) episode index
    step: np.ndarray  # (M,) agent step within the episode
    videos: list[str]  # background video of each episode ('no background' without one)


def collect_observations(agent: Agent, env: DCSEnv, episodes: int, keep: int, seed: int = 0) -> Observations:
    """Roll out ``episodes`` deterministic episodes (episode j seeded like evaluation episode j) and keep
    at most ``keep`` evenly spaced observations of each, the reset observation included."""
    bar = Progress(episodes, "[nearest neighbours] rollouts", unit="episodes", delay=2.0)
    every = max(1, -(-(env.max_episode_steps + 1) // keep))
    frames, episode_ids, steps, videos = [], [], [], []
    for j in range(episodes):
        obs, done, t = env.reset(seed=episode_seed(seed, j, stream=1)), False, 0
        videos.append(env.background_video or "no background")
        kept = 0
        while True:
            if t % every == 0 and kept < keep:
                frames.append(obs)
                episode_ids.append(j)
                steps.append(t)
                kept += 1
            if done:
                break
            obs, _, done, _ = env.step(agent.act(obs, explore=False))
            t += 1
        bar.advance(1)
    bar.close()
    return Observations(np.stack(frames), np.array(episode_ids), np.array(steps), videos)


def distance_to_all(agent: Agent, latents: torch.Tensor, index: int) -> torch.Tensor:
    """Distances (M,) from observation ``index`` to every observation, under the agent's head (L1 if none)."""
    import torch  # the torch extra, needed once there is an agent to ask

    with torch.no_grad():
        query = latents[index : index + 1].expand_as(latents)
        if agent.distance is None:
            return (query - latents).abs().sum(dim=1)
        return agent.latent_distance(query, latents)


def find_neighbours(
    agent: Agent, latents: torch.Tensor, episode: np.ndarray, queries: int, neighbours: int, rng: np.random.Generator
) -> list[dict]:
    """For ``queries`` random observations, the ``neighbours`` closest ones from other episodes:
    a list of ``{"query": i, "neighbours": [j, ...], "distances": [d, ...]}`` (ascending distance)."""
    total = len(episode)
    if len(np.unique(episode)) < 2:
        raise InputError("episodes: at least 2 episodes are needed (neighbours come from other episodes)")
    others = min(int(np.sum(episode != e)) for e in np.unique(episode))
    if neighbours > others:
        raise InputError(f"neighbours: {neighbours} exceeds the {others} observations kept from other episodes")
    if queries > total:
        raise InputError(f"queries: {queries} exceeds the {total} observations kept")
    result = []
    for i in sorted(rng.choice(total, size=queries, replace=False).tolist()):
        d = distance_to_all(agent, latents, i).float().cpu().numpy()
        d[episode == episode[i]] = np.inf
        order = np.argsort(d, kind="stable")[:neighbours]
        result.append(
            {"query": int(i), "neighbours": [int(j) for j in order], "distances": [float(d[j]) for j in order]}
        )
    return result


@dataclass
class Neighbours:
    """What the neighbour figure shows: the kept observations, the matches, and how to title them."""

    data: Observations
    matches: list[dict]
    title: str
    distance_name: str  # the distance, in words
    distance: str  # 'head' or 'l1'


def neighbour_data(
    checkpoint: str | os.PathLike,
    episodes: int = 10,
    queries: int = 5,
    neighbours: int = 3,
    episode_steps: int | None = None,
    keep: int = 40,
    seed: int = 0,
    device: str = "auto",
) -> Neighbours:
    """Roll out the run of ``checkpoint``, embed the kept observations and find each query's neighbours
    (see the module doc); bad settings raise :class:`InputError` before anything runs."""
    episodes = check_count("episodes", episodes, 2)
    queries = check_count("queries", queries)
    neighbours = check_count("neighbours", neighbours)
    keep = check_count("keep", keep)
    seed = check_count("seed", seed, 0)
    if neighbours > (episodes - 1) * keep:
        raise InputError(
            f"neighbours: {neighbours} exceeds the at most {(episodes - 1) * keep} observations "
            f"kept from other episodes ({keep} per episode)"
        )
    if queries > episodes * keep:
        raise InputError(f"queries: {queries} exceeds the at most {episodes * keep} observations kept")
    restored = restore_agent(checkpoint, device, split="eval", episode_steps=episode_steps)
    agent, cfg = restored.agent, restored.config
    try:
        data = collect_observations(agent, restored.env, episodes, keep, seed)
    finally:
        restored.env.close()
    latents = agent.embed(data.obs)
    matches = find_neighbours(agent, latents, data.episode, queries, neighbours, np.random.default_rng(seed))
    name = (
        f"the learned distance head ({type(agent.distance).__name__})"
        if agent.distance is not None
        else "L1 between latents (no distance head)"
    )
    title = f"{cfg.task} {cfg.method} seed {cfg.seed}, {restored.env_steps:,} env steps, held-out backgrounds"
    return Neighbours(data, matches, title, name, "head" if agent.distance is not None else "l1")

"""Nearest neighbours under the learned bisimulation distance (the paper's neighbour figure).

From a checkpoint: roll out K episodes of the trained (deterministic) policy on
the held-out background videos, each reseeded (so each has its own video and
camera motion; episode j uses the seed of evaluation episode j), keep a
subsample of the observations of every episode and embed them. Then pick Q
random query observations and show, for each, its last frame next to the N
closest observations *from other episodes* under the agent's distance head
(``agent.distance``; the L1 distance between latents for SAC and DrQ, which
have none), each labelled with its distance, episode, step and background video.

    python -m figures.nearest_neighbours runs/walker-walk/eps-r/seed0 --out nn.png \
        [--episodes 10 --queries 5 --neighbours 3 --episode-steps N --keep 40 --seed 0]

Memory: at most ``keep`` observations (evenly spaced steps) are kept per episode.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from bisimkit.errors import InputError, check_count
from bisimkit.extras import report_missing
from bisimkit.progress import Progress

from .style import plt, save

if TYPE_CHECKING:
    import torch

    from agents.agent import Agent
    from agents.dcs import DCSEnv


@dataclass
class Observations:
    """Kept observations of several episodes: pixels and where each came from."""

    obs: np.ndarray          # uint8 (M, 3F, H, W)
    episode: np.ndarray      # (M,) episode index
    step: np.ndarray         # (M,) agent step within the episode
    videos: list[str]        # background video of each episode ('no background' without one)


def collect_observations(agent: Agent, env: DCSEnv, episodes: int, keep: int, seed: int = 0) -> Observations:
    """Roll out ``episodes`` deterministic episodes (episode j seeded like evaluation episode j) and keep
    at most ``keep`` evenly spaced observations of each, the reset observation included."""
    from agents.rollout import episode_seed

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
    import torch

    with torch.no_grad():
        query = latents[index:index + 1].expand_as(latents)
        if agent.distance is None:
            return (query - latents).abs().sum(dim=1)
        return agent.distance(query, latents)


def find_neighbours(agent: Agent, latents: torch.Tensor, episode: np.ndarray, queries: int, neighbours: int,
                    rng: np.random.Generator) -> list[dict]:
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
        result.append({"query": int(i), "neighbours": [int(j) for j in order],
                       "distances": [float(d[j]) for j in order]})
    return result


def _last_frame(obs: np.ndarray) -> np.ndarray:
    return obs[-3:].transpose(1, 2, 0)


def plot_neighbours(data: Observations, matches: list[dict], out_png: str | os.PathLike, title: str,
                    distance_name: str) -> Path:
    """One row per query: its last frame, then its neighbours labelled with distance and video."""
    rows, cols = len(matches), 1 + len(matches[0]["neighbours"])
    fig, axes = plt.subplots(rows, cols, figsize=(2.1 * cols, 2.75 * rows), squeeze=False)
    for row, match in zip(axes, matches):
        q = match["query"]
        cells = [(q, f"query\nep {data.episode[q]} t={data.step[q]}\n{data.videos[data.episode[q]]}")]
        cells += [(j, f"d = {dist:.3g}\nep {data.episode[j]} t={data.step[j]}\n{data.videos[data.episode[j]]}")
                  for j, dist in zip(match["neighbours"], match["distances"])]
        for ax, (index, label) in zip(row, cells):
            ax.imshow(_last_frame(data.obs[index]), interpolation="nearest")
            ax.set_title(label, fontsize=8)
            ax.set_xticks([])
            ax.set_yticks([])
        for spine in row[0].spines.values():
            spine.set_edgecolor("tab:red")
            spine.set_linewidth(2.5)
    fig.suptitle(f"{title}\nnearest neighbours from other episodes under {distance_name}", fontsize=10)
    fig.tight_layout()
    return save(fig, out_png)


def nearest_neighbours(checkpoint: str | os.PathLike, out_png: str | os.PathLike, episodes: int = 10,
                       queries: int = 5, neighbours: int = 3, episode_steps: int | None = None, keep: int = 40,
                       seed: int = 0, device: str = "auto") -> dict:
    """Make the figure (see the module doc) and return what it shows: ``path``, ``distance`` (which
    distance), ``videos`` per episode, ``episode``/``step`` of every kept observation and ``matches``."""
    from agents.restore import restore_agent

    episodes = check_count("episodes", episodes, 2)
    queries = check_count("queries", queries)
    neighbours = check_count("neighbours", neighbours)
    keep = check_count("keep", keep)
    seed = check_count("seed", seed, 0)
    if neighbours > (episodes - 1) * keep:
        raise InputError(f"neighbours: {neighbours} exceeds the at most {(episodes - 1) * keep} observations "
                         f"kept from other episodes ({keep} per episode)")
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
    name = (f"the learned distance head ({type(agent.distance).__name__})" if agent.distance is not None
            else "L1 between latents (no distance head)")
    title = f"{cfg.task} {cfg.method} seed {cfg.seed}, {restored.env_steps:,} env steps, held-out backgrounds"
    path = plot_neighbours(data, matches, out_png, title, name)
    return {"path": str(path), "distance": "head" if agent.distance is not None else "l1", "videos": data.videos,
            "episode": data.episode.tolist(), "step": data.step.tolist(), "matches": matches}


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; returns the exit status (0, or 2 on bad input)."""
    parser = argparse.ArgumentParser(prog="python -m figures.nearest_neighbours", description=__doc__.split("\n\n")[0])
    parser.add_argument("checkpoint", metavar="CHECKPOINT", help="a run folder or its checkpoint.pt")
    parser.add_argument("--out", default="nn.png", help="PNG to write")
    parser.add_argument("--episodes", type=int, default=10, help="episodes rolled out (K)")
    parser.add_argument("--queries", type=int, default=5, help="random query observations (Q)")
    parser.add_argument("--neighbours", type=int, default=3, help="neighbours shown per query (N)")
    parser.add_argument("--episode-steps", type=int, default=None, help="control steps per episode (default: the run's)")
    parser.add_argument("--keep", type=int, default=40, help="observations kept per episode (evenly spaced)")
    parser.add_argument("--seed", type=int, default=0, help="episode and query seed")
    parser.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:N")
    args = parser.parse_args(argv)
    try:
        result = nearest_neighbours(args.checkpoint, args.out, args.episodes, args.queries, args.neighbours,
                                    args.episode_steps, args.keep, args.seed, args.device)
    except (InputError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as exc:
        return report_missing(exc)
    print(result["path"])
    return 0


if __name__ == "__main__":
    sys.exit(main())

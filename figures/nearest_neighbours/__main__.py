"""The paper's neighbour figure: query observations next to their nearest neighbours from other
episodes under the learned bisimulation distance, each labelled with its distance, episode, step
and background video. The rollouts and distances come from :mod:`agents.neighbours`; the drawing
is :func:`figures.nearest_neighbours.plot_neighbours`; this command joins them.

    python -m figures.nearest_neighbours runs/walker-walk/eps-r/seed0 --out nn.png \
        [--episodes 10 --queries 5 --neighbours 3 --episode-steps N --keep 40 --seed 0]
"""

from __future__ import annotations

import argparse
import os
import sys

from bisimkit.errors import InputError
from bisimkit.extras import report_missing
from figures.nearest_neighbours import plot_neighbours


def nearest_neighbours(
    checkpoint: str | os.PathLike,
    out_png: str | os.PathLike,
    episodes: int = 10,
    queries: int = 5,
    neighbours: int = 3,
    episode_steps: int | None = None,
    keep: int = 40,
    seed: int = 0,
    device: str = "auto",
) -> dict:
    """Make the figure from :func:`agents.neighbours.neighbour_data` and return what it shows: ``path``,
    ``distance`` (which distance), ``videos`` per episode, ``episode``/``step`` of every kept observation
    and ``matches``."""
    from agents.neighbours import neighbour_data  # needs torch, the agents' extra (main names it when missing)

    found = neighbour_data(checkpoint, episodes, queries, neighbours, episode_steps, keep, seed, device)
    data = found.data
    path = plot_neighbours(data, found.matches, out_png, found.title, found.distance_name)
    return {
        "path": str(path),
        "distance": found.distance,
        "videos": data.videos,
        "episode": data.episode.tolist(),
        "step": data.step.tolist(),
        "matches": found.matches,
    }


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; returns the exit status (0, or 2 on bad input)."""
    parser = argparse.ArgumentParser(prog="python -m figures.nearest_neighbours", description=__doc__.split("\n\n")[0])
    parser.add_argument("checkpoint", metavar="CHECKPOINT", help="a run folder or its checkpoint.pt")
    parser.add_argument("--out", default="nn.png", help="PNG to write")
    parser.add_argument("--episodes", type=int, default=10, help="episodes rolled out (K)")
    parser.add_argument("--queries", type=int, default=5, help="random query observations (Q)")
    parser.add_argument("--neighbours", type=int, default=3, help="neighbours shown per query (N)")
    parser.add_argument(
        "--episode-steps", type=int, default=None, help="control steps per episode (default: the run's)"
    )
    parser.add_argument("--keep", type=int, default=40, help="observations kept per episode (evenly spaced)")
    parser.add_argument("--seed", type=int, default=0, help="episode and query seed")
    parser.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:N")
    args = parser.parse_args(argv)
    try:
        result = nearest_neighbours(
            args.checkpoint,
            args.out,
            args.episodes,
            args.queries,
            args.neighbours,
            args.episode_steps,
            args.keep,
            args.seed,
            args.device,
        )
    except (InputError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as exc:
        return report_missing(exc)
    print(result["path"])
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Why a pixel agent learns or does not: what its encoder sees, and which loss term moves it.

    python -m benchmarks.learning_check_diagnosis RUN [RUN ...] [--episodes 6] [--batches 16]
                                                 [--ridge 1.0] [--seed 0] [--out FILE.json]

Each RUN is a run folder of ``benchmarks.learning_check`` or ``agents.train`` on a DCS task (all on
the same task). For each run, with its agent restored from its checkpoint:

1. **rollouts**: ``--episodes`` episodes of the agent's exploring policy on the held-out background
   videos, recording the task's state observation behind every frame (``DCSEnv.task_state``, what a
   state-based agent of the suite reads; for walker: torso orientations, height, velocities). The
   frames of all runs are pooled, so every encoder is measured on the same frames.
2. **state probe**: a ridge regression (weight ``--ridge`` on standardised latents) from each
   encoder's latent to each standardised state coordinate, fitted on the pooled transitions of the
   first two thirds of every run's episodes and scored on the rest: R² per coordinate (1: read off
   the latent linearly; 0: no better than its mean), averaged per group of the observation
   (``orientations``, ``height``, ...). The same probe on an encoder with fresh weights (the run's
   configuration, ``--seed``) is the floor that random convolutions reach. A critic can only value
   what its latent carries.
3. **collapse**: the latent's spread (the standard deviation over the pooled frames, averaged over
   latent coordinates; a collapsed encoder maps every frame to nearly one point) and, for methods
   with an inverse-dynamics head, the fraction of its first layer's ReLU units that fire on any of
   the frames (a unit that never fires passes no gradient, for good).
4. **gradients**: on ``--batches`` batches of the pooled transitions (the run's batch size), the
   norm of each weighted term of the update's loss (``Agent.loss_terms``: critic, and where the
   method trains them transition, reward, inverse dynamics and ``beta`` x bisimulation) on the
   encoder's weights, median over batches, and its share of their sum. It says which objective
   shapes the encoder at this point of training.

Prints a table and writes the record (``--out``, JSON, atomically). Exit 0, or 2 on bad input
(one line naming the argument, nothing written).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from bisimkit.errors import InputError, check_count
from bisimkit.files import atomic_write_json

#: The fraction of each run's episodes the probe is fitted on (the rest score it).
FIT_FRACTION = 2 / 3
ROLLOUT_STREAM = 7  # episode seeds of their own, apart from training (0) and evaluation (1)


def record_transitions(
    env, policy, seed: int, stream: int = ROLLOUT_STREAM, episodes: int | None = None, limit: int | None = None
) -> dict[str, np.ndarray]:
    """Transitions of ``policy`` (``act(obs, explore=True)``) in the DCS environment ``env``: ``episodes``
    whole episodes, or episodes until ``limit`` transitions; episode j seeded with (``seed``, ``stream``, j).
    Rows: obs, next_obs, action, reward, discount, the task's state behind obs (``state``) and the episode."""
    from agents.rollout import episode_seed

    rows: dict[str, list] = {k: [] for k in ("obs", "next_obs", "action", "reward", "discount", "state", "episode")}
    j = 0
    while (episodes is None or j < episodes) and (limit is None or len(rows["obs"]) < limit):
        obs, done = env.reset(seed=episode_seed(seed, j, stream=stream)), False
        state = env.task_state
        while not done and (limit is None or len(rows["obs"]) < limit):
            action = policy.act(obs, explore=True)
            next_obs, reward, done, info = env.step(action)
            for key, value in (
                ("obs", obs),
                ("next_obs", next_obs),
                ("action", action),
                ("reward", reward),
                ("discount", info["discount"]),
                ("state", state),
                ("episode", j),
            ):
                rows[key].append(value)
            obs, state = next_obs, env.task_state
        j += 1
    return {
        "obs": np.stack(rows["obs"]),
        "next_obs": np.stack(rows["next_obs"]),
        "action": np.asarray(rows["action"], np.float32),
        "reward": np.asarray(rows["reward"], np.float32),
        "discount": np.asarray(rows["discount"], np.float32),
        "state": np.stack(rows["state"]),
        "episode": np.asarray(rows["episode"]),
    }


def pool(parts: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """The runs' transitions concatenated."""
    return {key: np.concatenate([p[key] for p in parts]) for key in parts[0]}


def ridge_r2(latents: np.ndarray, targets: np.ndarray, fit: np.ndarray, ridge: float) -> np.ndarray:
    """R² per target column of a ridge regression from ``latents`` fitted on rows ``fit``, scored on the
    others; latents and targets standardised on the fitted rows (constant columns score nan)."""
    x_fit, x_test = latents[fit], latents[~fit]
    mean, scale = x_fit.mean(0), x_fit.std(0)
    scale[scale == 0] = 1.0
    x_fit, x_test = (x_fit - mean) / scale, (x_test - mean) / scale
    y_mean, y_scale = targets[fit].mean(0), targets[fit].std(0)
    live = y_scale > 1e-12
    y_fit = (targets[fit][:, live] - y_mean[live]) / y_scale[live]
    y_test = (targets[~fit][:, live] - y_mean[live]) / y_scale[live]
    a = np.c_[x_fit, np.ones(len(x_fit))]
    penalty = ridge * np.eye(a.shape[1])
    penalty[-1, -1] = 0.0  # the intercept is not shrunk
    weights = np.linalg.solve(a.T @ a + penalty, a.T @ y_fit)
    residual = y_test - np.c_[x_test, np.ones(len(x_test))] @ weights
    total = ((y_test - y_test.mean(0)) ** 2).sum(0)
    r2 = np.full(targets.shape[1], np.nan)
    r2[live] = 1.0 - (residual**2).sum(0) / np.where(total > 0, total, np.nan)
    return r2


def embed(agent, obs: np.ndarray) -> np.ndarray:
    """The critic latents of ``obs`` (float64 for the regression)."""
    return agent.embed(obs).double().cpu().numpy()


def inverse_alive(agent, latents: np.ndarray, episode: np.ndarray) -> float | None:
    """The fraction of the inverse-dynamics head's first-layer ReLU units that fire on at least one pair
    of consecutive latents of the same episode; None for methods without the head."""
    import torch

    inverse = getattr(agent, "inverse", None)
    if inverse is None:
        return None
    same = episode[1:] == episode[:-1]
    z = torch.as_tensor(latents, dtype=torch.float32)
    pairs = torch.cat([z[:-1][torch.as_tensor(same)], z[1:][torch.as_tensor(same)]], dim=-1)
    with torch.no_grad():
        first = inverse.net[1](inverse.net[0](pairs))  # Linear, ReLU: the first hidden layer
    return float((first > 0).any(0).float().mean())


def gradient_norms(agent, data: dict[str, np.ndarray], batches: int, rows: int, seed: int) -> dict[str, float]:
    """Median over ``batches`` batches of each loss term's gradient norm on the encoder's weights."""
    import torch

    rng = np.random.default_rng(seed)
    torch.manual_seed(seed)
    params = list(agent.encoder.parameters())
    seen: dict[str, list[float]] = {}
    for _ in range(batches):
        idx = rng.integers(0, len(data["obs"]), rows)
        batch = {k: data[k][idx] for k in ("obs", "next_obs", "action", "reward", "discount")}
        for name, loss in agent.loss_terms(batch).items():
            grads = torch.autograd.grad(loss, params, retain_graph=True, allow_unused=True)
            squares = [(g.double() ** 2).sum() for g in grads if g is not None]  # none: the term skips the encoder
            norm = float(torch.stack(squares).sum().sqrt()) if squares else 0.0
            seen.setdefault(name, []).append(norm)
    return {name: float(np.median(v)) for name, v in seen.items()}


def last_evaluation(folder: Path) -> float | None:
    """The run's last evaluation mean (eval.csv), when it has one."""
    from bisimkit_runs.runs import read_csv_columns

    try:
        means = read_csv_columns(folder / "eval.csv")["mean_return"]
    except (OSError, KeyError, ValueError):
        return None
    return float(means[-1]) if len(means) else None


def diagnose(runs: list[str], episodes: int = 6, batches: int = 16, ridge: float = 1.0, seed: int = 0) -> dict:
    """The record of the module doc for run folders ``runs``."""
    import torch

    from agents.agent import Agent
    from agents.dcs import DCSEnv
    from agents.restore import restore_agent

    check_count("episodes", episodes, low=2)
    check_count("batches", batches)
    if not (np.isfinite(ridge) and ridge > 0):
        raise InputError(f"{ridge!r} is not a positive finite number", param="ridge")
    restored, parts = [], []
    for i, run in enumerate(runs):
        r = restore_agent(run, device="cpu", split="eval")
        if not isinstance(r.env, DCSEnv):
            r.env.close()
            raise InputError(f"{run} (item {i}) is not a DCS run: no simulator state to probe", param="runs")
        if restored and r.config.task != restored[0].config.task:
            r.env.close()
            raise InputError(
                f"{run} (item {i}) trains {r.config.task}, item 0 {restored[0].config.task}: "
                "the probe pools frames of one task",
                param="runs",
            )
        restored.append(r)
        print(
            f"[{i + 1}/{len(runs)}] {run}: {r.config.method}, {r.env_steps} env steps; "
            f"{episodes} episodes of its policy",
            flush=True,
        )
        part = record_transitions(r.env, r.agent, seed, episodes=episodes)
        part["fit"] = part["episode"] < episodes * FIT_FRACTION
        parts.append(part)
    names = restored[0].env.task_state_names
    data = pool(parts)
    torch.manual_seed(seed)
    first = restored[0]
    fresh = Agent(first.env.observation_shape, int(first.env.action_spec.shape[0]), first.config, "cpu")
    groups = list(dict.fromkeys(name.split("[")[0] for name in names))
    record = {
        "task": first.config.task,
        "episodes_per_run": episodes,
        "transitions": int(len(data["obs"])),
        "ridge": ridge,
        "coordinates": names,
        "groups": groups,
        "fit_fraction": FIT_FRACTION,
        "runs": [],
    }
    probes = [("fresh weights", None, fresh)] + [(str(run), r, r.agent) for run, r in zip(runs, restored)]
    for label, r, agent in probes:
        latents = embed(agent, data["obs"])
        r2 = ridge_r2(latents, data["state"], data["fit"], ridge)
        by_group = {g: float(np.nanmean([v for n, v in zip(names, r2) if n.split("[")[0] == g])) for g in groups}
        entry = {
            "run": label,
            "r2": [None if not np.isfinite(v) else float(v) for v in r2],
            "r2_groups": by_group,
            "latent_spread": float(latents.std(0).mean()),
            "inverse_alive": inverse_alive(agent, latents, data["episode"]),
        }
        if r is not None:
            norms = gradient_norms(agent, data, batches, r.config.batch_size, seed)
            total = sum(norms.values())
            entry.update(
                method=r.config.method,
                env_steps=r.env_steps,
                beta=r.config.resolved().beta,
                last_evaluation=last_evaluation(Path(label)),
                gradient_norms=norms,
                gradient_shares={k: v / total for k, v in norms.items()},
            )
        record["runs"].append(entry)
    for r in restored:
        r.env.close()
    return record


def table(record: dict) -> str:
    """The record as a Markdown table."""
    terms = ["critic", "transition", "reward", "inverse", "bisim"]
    groups = record["groups"]
    head = (
        "| run | method | env steps | last eval | "
        + " | ".join(f"R² {g}" for g in groups)
        + " | latent spread | inverse alive | "
        + " | ".join(f"∇ {t} (share)" for t in terms)
        + " |"
    )
    lines = [head, "|" + "---|" * (6 + len(groups) + len(terms))]
    for e in record["runs"]:
        norms, shares = e.get("gradient_norms", {}), e.get("gradient_shares", {})
        cells = [f"{norms[t]:.3g} ({shares[t]:.0%})" if t in norms else "–" for t in terms]
        last, alive = e.get("last_evaluation"), e["inverse_alive"]
        lines.append(
            f"| {e['run']} | {e.get('method', '–')} | {e.get('env_steps', '–')} | "
            f"{'–' if last is None else f'{last:.1f}'} | "
            + " | ".join(f"{e['r2_groups'][g]:.3f}" for g in groups)
            + f" | {e['latent_spread']:.4f} | {'–' if alive is None else f'{alive:.0%}'} | "
            + " | ".join(cells)
            + " |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    from agents.config import ConfigParser  # one-line errors, exit 2

    p = ConfigParser(prog="python -m benchmarks.learning_check_diagnosis", description=__doc__.split("\n\n")[0])
    p.add_argument("runs", nargs="+", help="run folders (or checkpoint files) on one DCS task")
    p.add_argument(
        "--episodes",
        type=int,
        default=6,
        help="episodes of each run's policy on the held-out videos (at least 2; default 6)",
    )
    p.add_argument(
        "--batches",
        type=int,
        default=16,
        help="batches the gradient norms are measured on (median reported; default 16)",
    )
    p.add_argument(
        "--ridge",
        type=float,
        default=1.0,
        help="weight of the state probe's ridge penalty, on standardised latents (default 1.0)",
    )
    p.add_argument(
        "--seed",
        type=int,
        default=0,
        help="seed of the episodes, of the fresh-weights encoder and of the batches (default 0)",
    )
    p.add_argument("--out", default=None, help="write the record as JSON to this file (default: not written)")
    try:
        args = p.parse_args(argv)
        record = diagnose(args.runs, args.episodes, args.batches, args.ridge, args.seed)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(table(record))
    if args.out:
        atomic_write_json(args.out, record)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

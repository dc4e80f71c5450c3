"""Can the agent's encoder see the state through the distractors? A supervised probe.

    python -m benchmarks.metric_check_probe --scene sprite --distractors all --steps 1500 \
        [--batch 64] [--image-size 32] [--seed 0] [--out benchmarks/results/metric_check/probe/sprite-all.json]

The scene check (``agents.metric_check``) trains the encoder with the method's own losses only. When
those losses leave the latents collapsed (every learned distance near 0, the reward model's error
at the reward's variance), two causes are possible: the encoder cannot pick the state out of the
distractors in that many updates, or it can and the self-supervised objective does not lead it
there. This probe separates them: the same encoder (``Agent.encoder``, built from the same
``TrainConfig`` as the check, DrQ's shifts included) and a linear layer on its latent are trained
by supervised regression of the scene's true state coordinates (the sprite's position; a ring
cell's (cos, sin); a grid cell's (row, col)), with the same Adam, learning rate and batches of
fresh behaviour transitions. Reported every ``--eval-every`` updates: R² of the coordinates on a
held-out batch of 512 frames with their own distractor draws (1 is perfect, 0 is a constant guess).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

from agents.agent import Agent, pick_device
from agents.metric_check import Settings
from agents.scenes import DISTRACTORS, SCENES, Distractors, build_scene, check_distractors
from bisimkit.files import atomic_write_json


def coordinates(scene, states: np.ndarray) -> np.ndarray:
    """The state's coordinates the probe regresses: a Gaussian scene's state; a ring cell's (cos, sin)
    of its angle; a grid cell's (row, col)."""
    if scene.kind == "gaussian":
        return np.asarray(states, np.float64)
    cells = np.asarray(states).astype(int)
    if scene.mdp.state_shape is not None:
        return np.stack(np.unravel_index(cells, scene.mdp.state_shape), axis=1).astype(np.float64)
    angle = 2 * np.pi * cells / scene.mdp.n_states
    return np.stack([np.cos(angle), np.sin(angle)], axis=1)


def probe(
    scene_name: str,
    distractors: str,
    steps: int,
    batch: int,
    image_size: int,
    seed: int,
    eval_every: int,
    method: str = "eps-r",
) -> dict:
    scene = build_scene(scene_name, image_size)
    kinds = check_distractors(distractors)
    cfg = Settings(method=method, image_size=image_size, batch=batch, seed=seed, warmup=0).train_config(scene)
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    dist = Distractors(kinds, image_size, np.random.default_rng([seed, 1]))
    agent = Agent((3, image_size, image_size), scene.action_dim, cfg, pick_device("cpu"))
    encoder = agent.encoder
    held_rng = np.random.default_rng([seed, 2])
    held_states = scene.sample_states(512, held_rng)
    held_dist = Distractors(kinds, image_size, held_rng)
    held_frames = torch.as_tensor(scene.frames(held_states, held_dist, held_dist.initial(512)))
    held_y = torch.as_tensor(coordinates(scene, held_states), dtype=torch.float32)
    with torch.no_grad():
        latent_dim = encoder(held_frames[:2]).shape[1]
    head = torch.nn.Linear(latent_dim, held_y.shape[1])
    opt = torch.optim.Adam(list(encoder.parameters()) + list(head.parameters()), lr=cfg.lr)
    curve, start = [], time.monotonic()
    for step in range(1, steps + 1):
        states = scene.sample_states(batch, rng)
        frames = scene.frames(states, dist, dist.initial(batch))
        obs = agent._views(torch.as_tensor(frames), 1)[0]
        y = torch.as_tensor(coordinates(scene, states), dtype=torch.float32)
        loss = torch.nn.functional.mse_loss(head(encoder(obs)), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if step % eval_every == 0 or step == steps:
            with torch.no_grad():
                pred = head(encoder(held_frames))
            r2 = 1 - float(((pred - held_y) ** 2).sum() / ((held_y - held_y.mean(0)) ** 2).sum())
            curve.append({"step": step, "train_mse": float(loss.detach()), "held_out_r2": r2})
            print(f"step {step}/{steps}: train mse {float(loss.detach()):.4g}, held-out R^2 {r2:.3f}", flush=True)
    return {
        "scene": scene_name,
        "distractors": list(kinds),
        "steps": steps,
        "batch": batch,
        "image_size": image_size,
        "seed": seed,
        "augment": bool(cfg.augmented),
        "lr": cfg.lr,
        "seconds": round(time.monotonic() - start, 1),
        "held_out_r2": curve[-1]["held_out_r2"],
        "curve": curve,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scene", default="sprite", help=f"a built-in scene: {', '.join(SCENES)} (default sprite)")
    p.add_argument(
        "--distractors",
        default="all",
        help=f"comma-separated subset of {', '.join(DISTRACTORS)}, 'all' or 'none' (default all)",
    )
    p.add_argument("--steps", type=int, default=1500, help="supervised updates (default 1500)")
    p.add_argument("--batch", type=int, default=64, help="fresh transitions per update (default 64)")
    p.add_argument("--image-size", type=int, default=32, help="frame side of the scene, in pixels (default 32)")
    p.add_argument(
        "--seed", type=int, default=0, help="seed of the weights, the states and the distractors (default 0)"
    )
    p.add_argument(
        "--eval-every", type=int, default=250, help="updates between measurements of the held-out R² (default 250)"
    )
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (default 0: torch's)")
    p.add_argument(
        "--out",
        default=None,
        help="also write the result, with its curve, as JSON to this file (default: printed only, without the curve)",
    )
    args = p.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    result = probe(args.scene, args.distractors, args.steps, args.batch, args.image_size, args.seed, args.eval_every)
    if args.out:
        atomic_write_json(Path(args.out), result)
    print(json.dumps({k: v for k, v in result.items() if k != "curve"}))
    return 0


if __name__ == "__main__":
    sys.exit(main())

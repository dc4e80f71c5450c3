"""How far inside its tolerance each float32 comparison of the agents' updates lands on this CPU.

The agent tests hold the drq and dbc presets' updates to transcriptions of DrQ's and DBC's updates
(:mod:`benchmarks.drq_reference`, :mod:`benchmarks.dbc_reference`) from the same weights and the same
draws, and the channels-last encoder's gradients to float64's, with tolerances derived from the
arithmetic (:mod:`benchmarks.tolerance`), so that they hold on any instruction set and thread count.
This module is that harness (``tests/test_agent.py`` and ``tests/test_encoder.py`` use it), and its
command runs the comparisons once and prints the worst check of each kind, measured difference
against its tolerance, as one row of the table in docs/agents.md (presets section, "Tolerances that
hold on any CPU"). The thread count and the instruction set are the environment's:

    OMP_NUM_THREADS=1 python -m benchmarks.tolerance_margins [--out FILE.json]
    ONEDNN_MAX_CPU_ISA=AVX2 MKL_ENABLE_INSTRUCTIONS=AVX2 OMP_NUM_THREADS=2 python -m benchmarks.tolerance_margins
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import platform
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from agents.agent import Agent
from agents.config import make_config
from agents.encoder import PixelEncoder, conv_output_side
from benchmarks.dbc_reference import DBC, load_from_agent as load_dbc
from benchmarks.drq_reference import DrQ, load_from_agent as load_drq
from benchmarks.tolerance import Check, check_loss, check_weights, loss_rtol, reduction_rtol
from bisimkit.files import atomic_write_text

# ------------------------------------------------------------------ the presets against their references
#: the reference comparisons' frames (9 channels of SIDE x SIDE pixels), action dimensions and batch rows
SIDE, ACTIONS, ROWS = 32, 2, 8


def random_batch(rows: int, side: int = SIDE, actions: int = ACTIONS, seed: int = 0) -> dict:
    """A replay-like batch: random pixels, the next stack sharing two frames, rewards in [0, 8]."""
    g = torch.Generator().manual_seed(seed)
    obs = torch.randint(0, 256, (rows, 9, side, side), generator=g, dtype=torch.uint8)
    new = torch.randint(0, 256, (rows, 3, side, side), generator=g, dtype=torch.uint8)
    rng = np.random.default_rng(seed)
    return {
        "obs": obs,
        "next_obs": torch.cat([obs[:, 3:], new], dim=1),
        "action": rng.uniform(-1, 1, (rows, actions)).astype(np.float32),
        "reward": rng.uniform(0, 8, rows).astype(np.float32),
        "discount": np.ones(rows, np.float32),
    }


def preset_agent(preset: str, **changes) -> Agent:
    """The plain (float32, no compiled path) agent of ``preset`` at the comparisons' sizes, from seed 0."""
    torch.manual_seed(0)
    cfg = make_config(preset, capacity="low", image_size=SIDE, batch_size=ROWS, device="cpu", fast=False, **changes)
    return Agent((9, SIDE, SIDE), ACTIONS, cfg, "cpu")


def drq_agent(**changes) -> Agent:
    return preset_agent("drq", **changes)


def dbc_agent(**changes) -> Agent:
    return preset_agent("dbc", **changes)


class ReferenceUpdates:
    """A transcribed reference agent holding our agent's weights, with the interface of
    :func:`reference_checks`: ``update``, ``networks``, ``agent_networks``, ``path``, ``log_alpha``."""

    reference: type
    load: Callable  # (reference, agent): the agent's weights, laid out as the reference's

    def __init__(self, agent: Agent):
        self.ref = self.reference(9, conv_output_side(SIDE), ACTIONS, hidden=200)
        self.load(self.ref, agent)
        self.log_alpha = self.ref.log_alpha

    def networks_of(self, ref) -> dict:
        raise NotImplementedError

    def networks(self) -> dict:
        return self.networks_of(self.ref)

    def agent_networks(self, agent: Agent):
        mine = copy.deepcopy(self.ref)
        self.load(mine, agent)
        return self.networks_of(mine), mine.log_alpha


class DrQUpdates(ReferenceUpdates):
    """benchmarks.drq_reference.DrQ."""

    reference, load = DrQ, staticmethod(load_drq)

    def update(self, batch, step):
        critic_loss, actor_loss = self.ref.update(batch, step)
        out = {"critic_loss": critic_loss}
        if actor_loss is not None:
            out.update(actor_loss=actor_loss.detach(), actor_loss_scale=self.ref.actor_scale)
        return out

    def networks_of(self, ref) -> dict:
        return {"critic": ref.critic, "actor": ref.actor, "critic_target": ref.critic_target}

    def path(self):
        return self.ref.critic.encoder, self.ref.actor.trunk, self.ref.critic.Q1


class DBCUpdates(ReferenceUpdates):
    """benchmarks.dbc_reference.DBC."""

    reference, load = DBC, staticmethod(load_dbc)

    def update(self, batch, step):
        return self.ref.update(batch, step)

    def networks_of(self, ref) -> dict:
        return ref.networks()

    def path(self):
        r = self.ref
        return r.critic.encoder, r.actor.trunk, r.critic.Q1, r.transition, r.reward_decoder


def reference_checks(agent: Agent, reference, updates: int = 4, adam_steps: int = 4) -> list[Check]:
    """``updates`` updates of the agent and of the reference from the same weights and the same draws,
    then every loss and every weight compared with the arithmetic's tolerances (benchmarks.tolerance):
    each loss to ``loss_rtol`` of its terms' size, each weight tensor to Adam's drift bound over
    ``adam_steps`` steps (the most any parameter takes) entry by entry and, in the mean, to the share of
    it that rounding can reverse (``reduction_rtol`` of the longest gradient sum)."""
    rtol = loss_rtol(*reference.path())
    checks = []
    for step in range(updates):
        batch = random_batch(ROWS, seed=step)
        torch.manual_seed(100 + step)
        stats = agent.update(batch)
        torch.manual_seed(100 + step)
        out = reference.update(batch, step)
        assert ("actor_loss" in stats) == ("actor_loss" in out) == (step % 2 == 0), step
        for name, value in out.items():
            if not name.endswith("_scale"):
                scale = out.get(f"{name}_scale", value)
                checks.append(check_loss(f"update {step} {name}", stats[name], value, scale, rtol))
    ours, log_alpha = reference.agent_networks(agent)
    pairs = [
        (f"{net}.{pname}", p, q)
        for net, module in reference.networks().items()
        for (pname, q), p in zip(module.named_parameters(), ours[net].parameters())
    ]
    pairs.append(("log_alpha", log_alpha, reference.log_alpha))
    # the longest gradient sum: the first convolution's weight gradient, over every row and output position
    share = reduction_rtol(ROWS * ((SIDE - 3) // 2 + 1) ** 2)
    checks += check_weights(pairs, lr=agent.config.lr, steps=adam_steps, share=share)
    return checks


def drq_checks() -> list[Check]:
    """Four drq-preset updates (two with an actor step) against the transcription of DrQ's drq.py."""
    agent = drq_agent()
    return reference_checks(agent, DrQUpdates(agent))


def dbc_checks() -> list[Check]:
    """Four dbc-preset updates against DBC's BisimAgent.update; the encoder takes two Adam steps per update."""
    agent = dbc_agent()
    return reference_checks(agent, DBCUpdates(agent), adam_steps=8)


def failed(checks: list[Check]) -> list[str]:
    return [f"{c.what}: {c.measured:.3g} > {c.tolerance:.3g}" for c in checks if not c.ok]


# ------------------------------------------------------------------ the channels-last encoder against float64
#: the encoder comparisons' frames per stack and batch rows; every layout: frame-wise or stacked, square or not
FRAMES, ENCODER_ROWS = 3, 4
LAYOUTS = [(stacked, size) for stacked in (False, True) for size in (84, (36, 52))]


def encoders(stacked: bool, image_size) -> tuple[PixelEncoder, PixelEncoder]:
    """A plain encoder and a channels-last copy of it (float32: no autocast)."""
    torch.manual_seed(0)
    plain = PixelEncoder(frames=FRAMES, image_size=image_size, stacked=stacked)
    fast = copy.deepcopy(plain).speed(channels_last=True, autocast=None)
    return plain, fast


def pixels(image_size, seed: int = 0) -> torch.Tensor:
    height, width = (image_size, image_size) if isinstance(image_size, int) else image_size
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, 256, (ENCODER_ROWS, 3 * FRAMES, height, width), generator=g, dtype=torch.uint8)


def longest_gradient_sum(encoder: PixelEncoder) -> int:
    """Terms of the longest sum in the encoder's backward pass: the first convolution's weight gradient,
    over every (frame-wise: every frame's) row and output position."""
    rows = ENCODER_ROWS * (1 if encoder.stacked else FRAMES)
    height, width = encoder.trunk.height, encoder.trunk.width
    return rows * ((height - 3) // 2 + 1) * ((width - 3) // 2 + 1)


def float64_latents(encoder: PixelEncoder, obs: torch.Tensor) -> torch.Tensor:
    """The plain encoder's z, computed in float64 on a float64 ``encoder`` (the trunk itself casts to float32)."""
    x = obs.double() / 255.0
    if not encoder.stacked:
        x = x.reshape(-1, 3, *x.shape[-2:])
    y = encoder.head.norm(encoder.head.project(encoder.trunk.convs(x).flatten(1)))
    return torch.tanh(y).reshape(obs.shape[0], encoder.latent_dim)


@dataclass
class LayoutGradients:
    """One layout's latents (plain and channels-last, float32) and, per parameter, the relative norm errors
    of the gradients of a random linear functional of z: channels-last and plain against float64, and
    channels-last against plain; ``tolerance`` is the worst-case rounding of the longest gradient sum."""

    z_plain: torch.Tensor
    z_fast: torch.Tensor
    errors: dict[str, tuple[float, float, float]]
    tolerance: float
    latent_tolerance: float


def layout_gradients(stacked: bool, image_size) -> LayoutGradients:
    plain, fast = encoders(stacked, image_size)
    exact = copy.deepcopy(plain).double()
    obs = pixels(image_size)
    z_plain, z_fast, z_exact = plain(obs), fast(obs), float64_latents(exact, obs)
    w = torch.randn(z_plain.shape, generator=torch.Generator().manual_seed(1))
    (z_plain * w).sum().backward()
    (z_fast * w).sum().backward()
    (z_exact * w.double()).sum().backward()
    fast_params, exact_params = dict(fast.named_parameters()), dict(exact.named_parameters())
    errors = {}
    for name, p in plain.named_parameters():
        g_plain, g_fast, g_exact = p.grad.double(), fast_params[name].grad.double(), exact_params[name].grad
        errors[name] = (
            float((g_fast - g_exact).norm() / g_exact.norm()),
            float((g_plain - g_exact).norm() / g_exact.norm()),
            float((g_fast - g_plain).norm() / g_plain.norm()),
        )
    return LayoutGradients(
        z_plain.detach(), z_fast.detach(), errors, reduction_rtol(longest_gradient_sum(plain)), loss_rtol(plain)
    )


def encoder_check() -> Check:
    """The worst gradient of any layout, on either path, against float64's (relative, in norm)."""
    worst = None
    for stacked, size in LAYOUTS:
        result = layout_gradients(stacked, size)
        for name, (fast, plain, _) in result.errors.items():
            for path, error in (("channels-last", fast), ("plain", plain)):
                check = Check(f"{'stacked' if stacked else 'frame-wise'} {size} {path} {name}", error, result.tolerance)
                if worst is None or check.ratio > worst.ratio:
                    worst = check
    return worst


# ------------------------------------------------------------------ the command
#: the table's columns: which checks each one's worst is taken over
KINDS = {
    "loss": lambda c: c.what.startswith("update "),
    "weight, worst entry": lambda c: c.what.endswith("(largest entry)"),
    "weight, worst tensor mean": lambda c: c.what.endswith("(mean)"),
}


def worst(checks: list[Check], kind: str) -> Check:
    return max((c for c in checks if KINDS[kind](c)), key=lambda c: c.ratio)


def setting() -> str:
    """The instruction-set cap and thread count the comparisons ran under, in the table's words."""
    isa = os.environ.get("ONEDNN_MAX_CPU_ISA")
    mkl = os.environ.get("MKL_ENABLE_INSTRUCTIONS")
    caps = f"oneDNN {isa}" if isa else "default ISA"
    if mkl:
        caps += f", MKL {mkl}"
    threads = torch.get_num_threads()
    return f"{caps}, {threads} thread{'s' if threads > 1 else ''}"


def cpu_info() -> tuple[str, list[str]]:
    """The CPU's model name and which of AVX2 and AVX-512 it has (from /proc/cpuinfo where there is one)."""
    try:
        lines = Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines()
    except OSError:
        lines = []
    fields = {}
    for line in lines:
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())  # the first processor's
    flags = [f for f in fields.get("flags", "").split() if f in ("avx2", "avx512f")]
    return fields.get("model name") or platform.processor() or platform.machine(), flags


def measure() -> dict:
    columns = {}
    for preset, checks in (("drq", drq_checks()), ("dbc", dbc_checks())):
        for kind in KINDS:
            c = worst(checks, kind)
            columns[f"{preset}: {kind}"] = {"check": c.what, "measured": c.measured, "tolerance": c.tolerance}
    c = encoder_check()
    columns["encoder gradient vs float64 (worst layout)"] = {
        "check": c.what,
        "measured": c.measured,
        "tolerance": c.tolerance,
    }
    cpu, flags = cpu_info()
    return {"setting": setting(), "cpu": cpu, "cpu_flags": flags, "torch": torch.__version__, "columns": columns}


def row(record: dict) -> str:
    cells = [f"{v['measured']:.2g} / {v['tolerance']:.2g}" for v in record["columns"].values()]
    return "| " + " | ".join([record["setting"], *cells]) + " |"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default=None, help="also write the record (every column's worst check) to this JSON file")
    args = p.parse_args(argv)
    record = measure()
    print(f"{record['cpu']} ({', '.join(record['cpu_flags']) or 'no AVX2'}), torch {record['torch']}")
    print("| setting | " + " | ".join(record["columns"]) + " |")
    print(row(record))
    ratio = max(v["measured"] / v["tolerance"] for v in record["columns"].values())
    print(f"largest measured / tolerance: {ratio:.3g}")
    if args.out:
        atomic_write_text(args.out, json.dumps(record, indent=2) + "\n")
        print(f"wrote {args.out}")
    return 0 if ratio <= 1 else 1


if __name__ == "__main__":
    sys.exit(main())

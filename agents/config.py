"""Training configuration: the paper's hyper-parameters (appendix C) and the six methods.

:class:`TrainConfig` holds every knob of a run with the paper's values as
defaults (buffer 100k, batch 512, discount 0.99, Adam lr 1e-3, tau 0.01, actor
and target updates every 2 steps, temperature lr 1e-4 from 0.1, entropy target
-|A|, log-std bounds [-10, 2], DrQ pad 4). :data:`METHODS` says what each method
adds on top of SAC:

=========  ============  =================================================================
method     augmentation  bisimulation loss (from :mod:`bisimkit.losses`)
=========  ============  =================================================================
sac        no            none
drq        yes           none
drq+dbc    yes           ``dbc_loss``: independent actions, W2 of the latent Gaussians, L1 head
eps-r      yes           ``entangled_loss`` with ``reward_ground`` (paper's eps-R)
drq+pse    yes           ``psm_loss``: independent sampling, policy ground (PSM-style)
eps-pi     yes           ``entangled_loss`` with ``policy_ground`` (paper's eps-pi)
=========  ============  =================================================================

The bisimulation methods train the latent transition, reward and inverse
dynamics models the loss needs (paper Alg. 2: ``J_SAC + J_P + J_R + J_ID +
beta J_bisim``). ``sac`` and ``drq`` are the plain baselines of the literature
and train no world model unless ``aux=True``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from bisimkit.errors import InputError, check_count

from .dcs import TASKS


@dataclass(frozen=True)
class Method:
    """What a method adds to SAC: DrQ augmentation, a bisimulation loss, its distance head."""

    augment: bool
    bisim: str | None = None  # 'dbc', 'entangled-reward', 'psm', 'entangled-policy'
    head: str = "separable"   # 'separable' (sum_i w_i |z_i - z'_i|) or 'latent-l1' (DBC)

    @property
    def world_model(self) -> bool:
        """Whether the method needs the transition / reward / inverse-dynamics heads."""
        return self.bisim is not None


METHODS: dict[str, Method] = {
    "sac": Method(augment=False),
    "drq": Method(augment=True),
    "drq+dbc": Method(augment=True, bisim="dbc", head="latent-l1"),
    "eps-r": Method(augment=True, bisim="entangled-reward"),
    "drq+pse": Method(augment=True, bisim="psm"),
    "eps-pi": Method(augment=True, bisim="entangled-policy"),
}

CAPACITIES = {"high": 1024, "low": 200}


def check_device(device: str) -> str:
    """``device`` if it names one the agents accept ('auto', 'cpu', 'cuda', 'cuda:N')."""
    if not isinstance(device, str) or not (device in ("auto", "cpu", "cuda") or device.startswith("cuda:")):
        raise InputError(f"device: {device!r} is not auto, cpu, cuda or cuda:N")
    return device


@dataclass
class TrainConfig:
    """Everything that defines a training run (paper defaults); see the module doc."""

    task: str = "cartpole-swingup"
    method: str = "eps-r"
    seed: int = 0
    env_steps: int = 500_000           # environment (control) steps, action repeat included
    beta: float = 1.0                  # weight of the bisimulation loss
    capacity: str = "high"             # 'high' (1024 hidden units) or 'low' (200)
    background: bool = True            # dynamic video backgrounds
    camera: bool = True                # hard camera distraction
    davis: str | None = None           # DAVIS-2017 folder (default: $BISIMKIT_DAVIS, else procedural)
    aux: bool | None = None            # world-model losses; None: on exactly for the bisimulation methods
    stacked_frames: bool = False       # DrQ's encoder (the stack as 3F channels) instead of the paper's frame-wise one
    # appendix C
    buffer_size: int = 100_000
    batch_size: int = 512
    discount: float = 0.99
    lr: float = 1e-3
    tau: float = 0.01
    actor_update_every: int = 2
    target_update_every: int = 2
    alpha_lr: float = 1e-4
    init_temperature: float = 0.1
    pad: int = 4
    # schedule (agent steps are environment steps / action repeat)
    seed_steps: int = 1000             # uniform random actions before learning starts (agent steps)
    eval_every: int = 10_000           # environment steps between evaluations
    eval_episodes: int = 10
    checkpoint_every: int = 10_000     # environment steps; checkpoints are taken at episode ends
    bisim_samples: int = 1             # noise draws per bisimulation target
    # environment details
    image_size: int = 84
    frame_stack: int = 3
    episode_steps: int | None = None   # control steps per episode (default: the task's 1000)
    texture_size: int = 128
    device: str = "auto"
    extra: dict = field(default_factory=dict)

    @property
    def hidden(self) -> int:
        """MLP width of the chosen capacity."""
        return CAPACITIES[self.capacity]

    @property
    def spec(self) -> Method:
        """The :class:`Method` of ``self.method``."""
        return METHODS[self.method]

    @property
    def world_model(self) -> bool:
        """Whether the transition, reward and inverse-dynamics heads are trained."""
        return self.spec.world_model if self.aux is None else bool(self.aux)

    def to_dict(self) -> dict:
        """A JSON-ready copy."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "TrainConfig":
        """Rebuild from :meth:`to_dict` output (unknown keys are an error)."""
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise InputError(f"config: unknown field(s) {', '.join(unknown)}")
        return cls(**data).validated()

    def validated(self) -> "TrainConfig":
        """Check every field; raises :class:`InputError` naming the first bad one."""
        if self.task not in TASKS:
            raise InputError(f"task: {self.task!r} is not one of {', '.join(TASKS)}")
        if self.method not in METHODS:
            raise InputError(f"method: {self.method!r} is not one of {', '.join(METHODS)}")
        if self.capacity not in CAPACITIES:
            raise InputError(f"capacity: {self.capacity!r} is not one of {', '.join(CAPACITIES)}")
        positive_ints = ("env_steps", "buffer_size", "batch_size", "actor_update_every", "target_update_every",
                         "eval_every", "eval_episodes", "checkpoint_every", "bisim_samples",
                         "image_size", "frame_stack", "texture_size")
        for name in positive_ints:
            check_count(name, getattr(self, name))
        for name in ("seed", "seed_steps", "pad"):
            check_count(name, getattr(self, name), low=0)
        if self.episode_steps is not None:
            check_count("episode_steps", self.episode_steps)
        for name, low, high in (("discount", 0.0, 1.0), ("tau", 0.0, 1.0)):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and low <= value < high + (name == "tau")):
                raise InputError(f"{name}: {value!r} is not in [{low}, {high}{']' if name == 'tau' else ')'}")
        for name in ("lr", "alpha_lr", "init_temperature"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and value > 0 and value == value and value != float("inf")):
                raise InputError(f"{name}: {value!r} is not a positive finite number")
        if not (isinstance(self.beta, (int, float)) and 0 <= self.beta < float("inf")):
            raise InputError(f"beta: {self.beta!r} is not a non-negative finite number")
        for name in ("background", "camera", "stacked_frames"):
            if not isinstance(getattr(self, name), bool):
                raise InputError(f"{name}: {getattr(self, name)!r} is not true or false")
        if self.batch_size > self.buffer_size:
            raise InputError(f"batch_size: {self.batch_size} exceeds buffer_size {self.buffer_size}")
        check_device(self.device)
        return self

    @property
    def action_repeat(self) -> int:
        """The paper's action repeat for the task."""
        return TASKS[self.task].action_repeat

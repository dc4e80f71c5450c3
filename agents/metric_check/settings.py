"""The settings of a metric check: one dataclass, what :func:`agents.metric_check.learn_metric` runs.

Each field's docstring says what it sets; ``python -m agents.metric_check`` has an option per field
with the same default. :meth:`Settings.checked` is the one place they are checked (one
:class:`~bisimkit.errors.InputError` naming the first bad field).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from bisimkit.errors import InputError

from ..config import PRESETS, TrainConfig
from ..scenes import IMAGE_SIZE, Scene
from .methods import DBC_FIELDS, SAMPLES_PER_PAIR, check_method, check_variant
from .references import MC_SAMPLES

MODES = ("isolated", "agent")
SCHEDULES = ("constant", "decay")


@dataclass(frozen=True)
class Settings:
    """Everything a metric check is run with besides its scene."""

    method: str = "eps-r"
    """The method whose loss learns the metric (:data:`agents.metric_check.METRIC_METHODS`)."""
    distractors: str | tuple = "all"
    """The distractors drawn over the scene: a comma-separated subset of agents.scenes.DISTRACTORS, 'all' or
    'none' (or a tuple of names)."""
    steps: int = 1500
    """Updates."""
    mode: str = "isolated"
    """isolated: the metric learning alone on the behaviour's transitions; agent: the full update on the agent's
    own transitions."""
    batch: int = 64
    """Transitions per update."""
    image_size: int = IMAGE_SIZE
    """Frame side of a built-in scene."""
    seed: int = 0
    """Seed of networks, transitions and distractors."""
    device: str = "cpu"
    """cpu, cuda or cuda:N."""
    draws: int = 8
    """Distractor draws per evaluation state."""
    schedule: str = "decay"
    """constant, or decay: the learning rate's cosine to a tenth over the second half."""
    eval_every: int = 0
    """Also measure every this many updates (the curve; 0: at the end only)."""
    samples: int = MC_SAMPLES
    """Monte Carlo rollout pairs per state pair of a Gaussian scene's exact metric."""
    warmup: int | None = None
    """Updates of the world model alone before the bisimulation loss joins (TrainConfig.bisim_warmup; default a
    third of steps; a bisim_warmup in config wins)."""
    config: dict | None = None
    """More agents.config.TrainConfig fields (e.g. {"augment": False})."""
    samples_per_pair: int = SAMPLES_PER_PAIR
    """Noise draws averaged per bisimulation target (TrainConfig.bisim_samples; training draws 1)."""
    coupling: str | None = None
    """None, the method's own coupling, or 'independent' (eps-r only)."""
    update_rule: str = "joint"
    """joint, or dbc (drq+dbc only): DBC's own update as the dbc preset sets it up."""

    @property
    def bisim_warmup(self) -> int:
        """``warmup``, or a third of ``steps`` when unset: the world model alone for a third, by default."""
        return self.steps // 3 if self.warmup is None else self.warmup

    def checked(self) -> "Settings":
        """These settings, with the method's coupling filled in; raises :class:`InputError` naming the first bad
        field."""
        check_method(self.method)
        coupling, update_rule = check_variant(self.method, self.coupling, self.update_rule)
        if self.mode not in MODES:
            raise InputError(f"mode: {self.mode!r} is not one of {', '.join(MODES)}")
        if self.schedule not in SCHEDULES:
            raise InputError(f"schedule: {self.schedule!r} is not constant or decay")
        for name, value, low in (
            ("steps", self.steps, 1),
            ("batch", self.batch, 2),
            ("draws", self.draws, 2),
            ("image_size", self.image_size, 16),
            ("eval_every", self.eval_every, 0),
            ("warmup", self.bisim_warmup, 0),
            ("samples_per_pair", self.samples_per_pair, 1),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise InputError(f"{name}: expected an integer >= {low}, got {value!r}")
        if self.warmup is not None and self.warmup >= self.steps:
            raise InputError(
                f"warmup: {self.warmup} updates leave none of the {self.steps} steps to the bisimulation loss"
            )
        return replace(self, coupling=coupling, update_rule=update_rule)

    def train_config(self, scene: Scene) -> TrainConfig:
        """The resolved :class:`~agents.config.TrainConfig` of the check on ``scene``: the method on one frame of
        the scene's size, the low capacity, no DCS distractions, the scene's discount, ``bisim_warmup``; under
        ``update_rule="dbc"`` the dbc preset's update fields (:data:`~agents.metric_check.methods.DBC_FIELDS`);
        ``config`` last."""
        height, width = scene.image_shape
        fields = dict(
            method=self.method,
            image_size=height if height == width else (height, width),
            frame_stack=1,
            capacity="low",
            batch_size=self.batch,
            discount=scene.discount,
            seed=self.seed,
            device=self.device,
            background=False,
            camera=False,
            bisim_samples=self.samples_per_pair,
        )
        if self.update_rule == "dbc":  # DBC's update as its preset sets it up, at the check's batch and frames
            fields.update({k: PRESETS["dbc"].values[k] for k in DBC_FIELDS})
        fields.update({"bisim_warmup": self.bisim_warmup, **(self.config or {})})
        try:
            return TrainConfig(**fields).resolved()
        except TypeError as exc:
            raise InputError(f"config: {exc}") from None

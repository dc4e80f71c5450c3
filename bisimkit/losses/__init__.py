"""Learned bisimulation losses in torch (``docs/losses.md``), verified against the exact fixed points.

``import bisimkit`` does not import torch; ``import bisimkit.losses`` does.

* :mod:`.core`: the losses (entangled, PSM, MICo, DBC), their sampled targets,
  ground metrics and Gaussian reparametrised models;
* :mod:`.heads`: distance heads (separable, L1, DBC's latent L1);
* :mod:`.finite`: a finite MDP as torch models, and a tabular distance;
* :mod:`.fit`: the validated recipe that fits a distance with a loss
  (:func:`fit_tabular` on a finite MDP, :func:`fit_head` for any head), with the
  loss names :data:`FIT_LOSSES` and the schedule :class:`FitSchedule`.

:mod:`validation.learning` runs :func:`fit_tabular` with each loss and measures its
distance to the exact fixed point of the matching operator (checks L1-L6).
"""

try:
    import torch  # noqa: F401
except ModuleNotFoundError as exc:  # the extra is missing: say which one, not a traceback from deep inside
    raise ModuleNotFoundError(
        "bisimkit.losses needs torch, which is not installed: pip install -e '.[torch]'", name=exc.name
    ) from None

from .core import (
    COUPLINGS,
    NOISE_LAWS,
    DeferredChecks,
    Reparam,
    Sampler,
    bisimulation_targets,
    check_finite,
    dbc_coordinate_loss,
    dbc_loss,
    dbc_targets,
    diagonal_gaussian_w2,
    draw_noise,
    entangled_loss,
    gaussian_policy,
    gaussian_transition,
    gaussian_w2,
    mico_loss,
    policy_ground,
    psm_loss,
    regression_loss,
    reward_ground,
    sampled_loss,
    state_reward_ground,
)
from .finite import FiniteModel, TabularDistance, inverse_cdf, rosenblatt_sample
from .fit import FIT_LOSSES, FIXED_POINTS, FitSchedule, HeadFit, TabularFit, fit_head, fit_tabular, fixed_point
from .heads import L1Distance, LatentL1Distance, SeparableDistance

__all__ = [
    "COUPLINGS",
    "DeferredChecks",
    "FIT_LOSSES",
    "FIXED_POINTS",
    "FiniteModel",
    "FitSchedule",
    "HeadFit",
    "L1Distance",
    "LatentL1Distance",
    "NOISE_LAWS",
    "Reparam",
    "Sampler",
    "SeparableDistance",
    "TabularDistance",
    "TabularFit",
    "bisimulation_targets",
    "check_finite",
    "dbc_coordinate_loss",
    "dbc_loss",
    "dbc_targets",
    "diagonal_gaussian_w2",
    "draw_noise",
    "entangled_loss",
    "fit_head",
    "fit_tabular",
    "fixed_point",
    "gaussian_policy",
    "gaussian_transition",
    "gaussian_w2",
    "inverse_cdf",
    "mico_loss",
    "policy_ground",
    "psm_loss",
    "regression_loss",
    "reward_ground",
    "rosenblatt_sample",
    "sampled_loss",
    "state_reward_ground",
]

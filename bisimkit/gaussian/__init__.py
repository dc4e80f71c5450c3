"""Gaussian MDPs: continuous states and actions (``docs/gaussian.md``).

* :mod:`.model`: :class:`GaussianMDP`, :class:`LinearGaussianMDP` (with its JSON
  form), :class:`PendulumMDP`.
* :mod:`.closed_forms`: W_p between 1-D Gaussians, separable costs between
  diagonal Gaussians, Bures W2, exact W_p to a discrete law.
* :mod:`.couplings`: entangled (shared-noise) and independent couplings.
* :mod:`.estimators`: Monte Carlo d_eps-bar with confidence intervals and a
  certified truncation bound.
* :mod:`.exact`: exact series for d_eps-bar, d_eps, d_pi, d_psm on
  linear-Gaussian MDPs.
* :mod:`.discretize`: the bridge to the finite solvers (grid MDPs with a
  certified discretisation error).
"""

from .closed_forms import (abs_moment, bures_squared, bures_wasserstein, entangled_squared_cost,
                           folded_normal_mean, gaussian_monge_map, separable_cost, wasserstein_gaussian_1d,
                           wasserstein_to_discrete)
from .estimators import Estimate, estimate_distance, truncation_bound
from .exact import Series, distance, exact_form, independent_policy_series
from .model import (GaussianMDP, LinearGaussianMDP, PendulumMDP, QuadraticReward, linear_gaussian_from_dict,
                    load_gaussian, save_gaussian)

__all__ = [
    "Estimate", "GaussianMDP", "LinearGaussianMDP", "PendulumMDP", "QuadraticReward", "Series", "abs_moment",
    "bures_squared", "bures_wasserstein", "distance", "entangled_squared_cost", "estimate_distance", "exact_form",
    "folded_normal_mean", "gaussian_monge_map", "independent_policy_series", "linear_gaussian_from_dict",
    "load_gaussian", "save_gaussian", "separable_cost", "truncation_bound", "wasserstein_gaussian_1d",
    "wasserstein_to_discrete",
]

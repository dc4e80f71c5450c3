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

from .. import lazy_attributes

#: Each public name and the module that defines it, imported on first use (module ``__getattr__``):
#: the closed forms load scipy.special, which ``bisimkit solve`` on a finite MDP does not need (start-up cost).
_PUBLIC = {
    **dict.fromkeys(
        (
            "abs_moment",
            "bures_squared",
            "bures_wasserstein",
            "entangled_squared_cost",
            "folded_normal_mean",
            "gaussian_monge_map",
            "separable_cost",
            "wasserstein_gaussian_1d",
            "wasserstein_to_discrete",
        ),
        "closed_forms",
    ),
    **dict.fromkeys(("Estimate", "estimate_distance", "truncation_bound"), "estimators"),
    **dict.fromkeys(("Series", "distance", "exact_form", "independent_policy_series"), "exact"),
    **dict.fromkeys(
        (
            "GaussianMDP",
            "LinearGaussianMDP",
            "PendulumMDP",
            "QuadraticReward",
            "linear_gaussian_from_dict",
            "load_gaussian",
            "save_gaussian",
        ),
        "model",
    ),
}

__all__ = [
    "Estimate",
    "GaussianMDP",
    "LinearGaussianMDP",
    "PendulumMDP",
    "QuadraticReward",
    "Series",
    "abs_moment",
    "bures_squared",
    "bures_wasserstein",
    "distance",
    "entangled_squared_cost",
    "estimate_distance",
    "exact_form",
    "folded_normal_mean",
    "gaussian_monge_map",
    "independent_policy_series",
    "linear_gaussian_from_dict",
    "load_gaussian",
    "save_gaussian",
    "separable_cost",
    "truncation_bound",
    "wasserstein_gaussian_1d",
    "wasserstein_to_discrete",
]


__getattr__, __dir__ = lazy_attributes(__name__, globals(), _PUBLIC)

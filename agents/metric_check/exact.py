"""The exact metric a check holds the learned one against, and the scenes it is measured on.

:func:`exact_metric` by method: ``eps-r`` the ``eps-bar`` fixed point with the reward ground, ``eps-pi``
with the policy ground of the squashed mean ``tanh(mu_pi)`` the agent's loss reads, ``drq+pse``
``psm-sampled``, ``drq+dbc`` ``dbc-sampled``. On a finite scene ``bisimkit.solve`` gives them to
1e-9; on a linear-Gaussian scene the squashed policy has no exact series, and
``bisimkit.gaussian.estimate_distance`` gives Monte Carlo values with a certified truncation bound
and a standard error (entangled for the eps family, independent for drq+pse). DBC's deep target
uses W2 between the *latent* Gaussians with a Euclidean cost, not the learned distance, so no
state-space operator is its fixed point: ``dbc-sampled`` (and, on a Gaussian scene, the
independent reward fixed point) is a reference, and ``target_exact`` says so.
"""

from __future__ import annotations

import numpy as np

from bisimkit.errors import InputError
from bisimkit.gaussian import LinearGaussianMDP
from bisimkit.mdp import FiniteMDP
from bisimkit.separable import separability

from ..scenes import IMAGE_SIZE, SCENES, Scene, build_scene, finite_scene, gaussian_scene
from .methods import check_variant, own_fixed_point
from .references import MC_SAMPLES, reference_metric


def as_scene(
    mdp, render=None, *, behaviour=None, eval_states=None, image_size: int = IMAGE_SIZE, discount: float | None = None
) -> Scene:
    """A :class:`Scene` from a built-in name, a Scene, or a user's MDP and renderer.

    A :class:`~bisimkit.mdp.FiniteMDP` needs ``behaviour=(mean, std)``: the pre-squash mean and std of the
    behaviour's action per state (the MDP's own policy is replaced by their interval probabilities).
    A :class:`~bisimkit.gaussian.LinearGaussianMDP` acts with its own (squashed) policy."""
    if isinstance(mdp, Scene):
        return mdp
    if isinstance(mdp, str):
        return build_scene(mdp, image_size, 0.9 if discount is None else discount)
    if render is None or not callable(render):
        raise InputError("render: expected a function of a state returning an (H, W, 3) uint8 image")
    if isinstance(mdp, FiniteMDP):
        if behaviour is None:
            raise InputError("behaviour: a finite MDP needs the behaviour's pre-squash (mean, std) per state")
        return finite_scene(mdp, render, behaviour[0], behaviour[1])
    if isinstance(mdp, LinearGaussianMDP):
        return gaussian_scene(mdp, render, eval_states)
    raise InputError(
        f"mdp: expected a scene name ({', '.join(SCENES)}), a FiniteMDP or a LinearGaussianMDP, got "
        f"{type(mdp).__name__}"
    )


def exact_metric(
    scene: Scene,
    method: str,
    policy: tuple[np.ndarray, np.ndarray] | None = None,
    samples: int = MC_SAMPLES,
    seed: int = 0,
    coupling: str | None = None,
    update_rule: str = "joint",
) -> tuple[np.ndarray, dict]:
    """The matrix over ``scene.eval_states`` of the fixed point ``method``'s loss targets (:func:`own_fixed_point`;
    for the deep DBC losses a reference, ``dbc-sampled`` on a finite scene and the independent reward fixed point
    on a Gaussian one), and what it is (``operator``, ``ground``, ``solver``, ``certified_error`` or the Monte
    Carlo ``stderr_max``, ``target_exact``, ``note``). ``policy``: another squashed Gaussian policy (per-state
    mean, std) of a finite scene, e.g. a trained agent's."""
    coupling, update_rule = check_variant(method, coupling, update_rule)
    own = own_fixed_point(method, coupling, update_rule)
    name = own or ("dbc-sampled" if scene.kind == "finite" else "independent-reward")
    ref = reference_metric(scene, name, policy=policy, samples=samples, seed=seed)
    info = {
        "operator": ref.info.get(
            "operator",
            name
            if scene.kind == "finite"
            else ("eps-bar" if name.startswith("eps-bar") else "independent-sampling fixed point"),
        ),
        "ground": ref.info.get("ground"),
        "target_exact": own is not None,
        "note": ref.info.get("note", ""),
        "reference": name,
    }
    info.update(
        {
            k: v
            for k, v in ref.info.items()
            if k in ("solver", "certified_error", "stderr_max", "truncation_max", "policy_mean_action_gap")
        }
    )
    if own is None:
        info["note"] = (
            "the deep DBC target uses W2 between latent Gaussians with a Euclidean cost, not the learned "
            f"distance: no operator on states is its fixed point, and {name} is a reference"
        )
    mdp = scene.mdp
    if scene.kind == "finite" and mdp.state_shape is not None and name == "eps-bar-reward":
        sep = separability(mdp, "reward")  # bisimkit info's line: a head fed the grid coordinates
        info["separable_in_state_shape"] = sep.describe()
        info["separable_lower_bound"] = float(sep.lower / sep.scale) if sep.scale > 0 else 0.0
    if scene.kind == "finite" and mdp.state_shape is not None and name == "eps-bar-policy" and policy is None:
        sep = separability(mdp, "policy")
        info["separable_in_state_shape"] = sep.describe()
        info["separable_lower_bound"] = float(sep.lower / sep.scale) if sep.scale > 0 else 0.0
    return ref.matrix, info

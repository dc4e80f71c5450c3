"""The methods a metric check trains, their variants, and the agent and configuration of each.

A method's loss has a ground (:data:`GROUNDS`) and a coupling (:data:`COUPLINGS`); two variants
change one thing: ``coupling="independent"`` with eps-r (its reward-ground loss with the two
states' noise drawn independently, :func:`independent_reward_agent`) and ``update_rule="dbc"``
with drq+dbc (DBC's own update). :func:`agent_class` is the agent a check trains.
"""

from __future__ import annotations

from functools import lru_cache

from bisimkit.errors import InputError
from bisimkit.fitting import FIXED_POINTS

from ..config import METHODS, PRESETS, UPDATE_RULES, TrainConfig

#: The methods with a metric loss, and the exact (operator, ground) their loss learns on a finite scene:
#: the fixed point of the method's loss (:data:`bisimkit.fitting.FIXED_POINTS`).
METRIC_METHODS = {name: FIXED_POINTS[method.bisim] for name, method in METHODS.items() if method.bisim is not None}
#: The ground each method's loss compares states with.
GROUNDS = {"eps-r": "reward", "drq+dbc": "reward", "eps-pi": "policy", "drq+pse": "policy"}
#: The coupling of each method's loss (eps-r may be given ``coupling="independent"``).
COUPLINGS = {"eps-r": "entangled", "eps-pi": "entangled", "drq+pse": "independent", "drq+dbc": "independent"}
#: Noise draws averaged per bisimulation target by default: training's (``TrainConfig.bisim_samples``).
SAMPLES_PER_PAIR = TrainConfig.bisim_samples
#: DBC's preset fields the check keeps under ``update_rule="dbc"``: its update, not its batch or frame stack.
DBC_FIELDS = tuple(k for k in PRESETS["dbc"].values if k not in ("method", "batch_size", "stacked_frames"))


def check_method(method: str) -> str:
    """``method`` if it has a metric loss; sac and drq have none."""
    if method not in METRIC_METHODS:
        raise InputError(f"method: {method!r} has no metric loss to check (choose from {', '.join(METRIC_METHODS)})")
    return method


def check_variant(method: str, coupling: str | None = None, update_rule: str = "joint") -> tuple[str, str]:
    """``(coupling, update_rule)`` of ``method`` with the given variant, checked: ``coupling`` None (the method's
    own) or ``"independent"`` (eps-r only: eps-pi's independent variant is drq+pse), ``update_rule`` ``joint``
    or ``dbc`` (drq+dbc only)."""
    check_method(method)
    if coupling not in (None, COUPLINGS[method]) and not (coupling == "independent" and method == "eps-r"):
        raise InputError(
            f"coupling: {coupling!r} with {method}: only eps-r has a variant here, 'independent' "
            "(eps-pi's independent variant is drq+pse)"
        )
    if update_rule not in UPDATE_RULES:
        raise InputError(f"update_rule: {update_rule!r} is not one of {', '.join(UPDATE_RULES)}")
    if update_rule == "dbc" and method != "drq+dbc":
        raise InputError(f"update_rule: dbc is DBC's update of drq+dbc, and method is {method}")
    return coupling or COUPLINGS[method], update_rule


def intended_metric(method: str) -> str:
    """The metric ``method`` is meant to estimate, with the optimal coupling: ``pi`` for the reward ground,
    ``psm`` for the policy ground (:mod:`.references`)."""
    return "pi" if GROUNDS[check_method(method)] == "reward" else "psm"


def own_fixed_point(method: str, coupling: str | None = None, update_rule: str = "joint") -> str | None:
    """The :mod:`.references` name of the fixed point of ``method``'s loss (with the variant), or None for the
    deep DBC losses, whose target is no operator on states."""
    coupling, update_rule = check_variant(method, coupling, update_rule)
    if method == "drq+dbc":
        return None
    if method == "drq+pse":
        return "psm-sampled"
    if method == "eps-pi":
        return "eps-bar-policy"
    return "eps-bar-reward" if coupling == "entangled" else "independent-reward"


def agent_class(coupling: str, update_rule: str):
    """:class:`agents.agent.Agent` (the config's update rule), or under the joint update with the independent
    coupling the agent whose bisimulation loss draws the two states' noise independently
    (:func:`bisimkit.losses.sampled_loss`, reward ground)."""
    from ..agent import Agent  # torch: the agents extra (scenes and exact metrics work without)

    return Agent if coupling != "independent" or update_rule == "dbc" else independent_reward_agent()


@lru_cache(maxsize=None)
def independent_reward_agent():
    """The class of eps-r's independent-coupling variant (a subclass of :class:`agents.agent.JointAgent` whose
    :meth:`~agents.agent.JointAgent.bisimulation_term` it replaces; built on first use, as it needs torch)."""
    from bisimkit.losses import gaussian_policy, gaussian_transition, reward_ground, sampled_loss  # torch, as above

    from ..agent import JointAgent  # torch: the agents extra

    class IndependentRewardAgent(JointAgent):
        """eps-r with the independent coupling: ``sampled_loss`` with the reward ground and
        ``coupling="independent"`` in place of ``entangled_loss`` (everything else is eps-r's)."""

        def bisimulation_term(self, z, distance):
            return sampled_loss(
                z,
                distance=distance,
                policy=gaussian_policy(self.actor, self.action_dim, squash=True),
                transition=gaussian_transition(self.transition, self.latent_dim),
                ground=reward_ground(self.next_reward),
                discount=self.config.discount,
                coupling="independent",
                samples=self.config.bisim_samples,
            )

    IndependentRewardAgent.__qualname__ = "IndependentRewardAgent"
    return IndependentRewardAgent

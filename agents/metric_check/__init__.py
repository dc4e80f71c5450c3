"""The learned metric against the exact one: an agent's encoder on pixel scenes with distractors.

:func:`learn_metric` trains the agent of ``agents.agent`` (its encoder, latent
transition / reward / inverse models, distance head and Adam, built from a
:class:`~agents.config.TrainConfig` exactly as ``agents.train`` builds it) on
transitions of a fixed behaviour policy in a scene of :mod:`agents.scenes`,
and compares the latent distance it learns with the exact fixed point of the
operator the method's loss targets. Its settings are one dataclass,
:class:`Settings`; its training state one object, :class:`~.training.Training`:

* **isolated** (``mode="isolated"``): each step is the agent's ``metric_step``
  (the world-model losses and ``beta`` x the bisimulation loss, the same code
  the full update runs, and one Adam step of the encoder, world model and head),
  the world model alone for the first ``warmup`` steps (``bisim_warmup``);
  the actor, whose samples and mean the loss reads, is fitted to the behaviour by
  maximum likelihood of its pre-squash actions on the detached latents. No critic.
* **agent** (``mode="agent"``): the full :meth:`Agent.update` (critic, actor,
  temperature, targets, bisimulation loss) on transitions the agent collects
  itself in the scene, random actions for ``seed_steps`` then its own policy;
  the exact metric is then that of the agent's final policy (finite scenes: its
  squashed Gaussian read at every state, averaged over distractor draws, turned
  into interval probabilities). :func:`measure` takes any trained agent.

The exact metric (:func:`exact_metric`) by method: ``eps-r`` the ``eps-bar``
fixed point with the reward ground, ``eps-pi`` with the policy ground of the
squashed mean ``tanh(mu_pi)`` the agent's loss reads, ``drq+pse``
``psm-sampled``, ``drq+dbc`` ``dbc-sampled``. On a finite scene ``bisimkit.solve``
gives them to 1e-9; on a linear-Gaussian scene the squashed policy has no exact
series, and ``bisimkit.gaussian.estimate_distance`` gives Monte Carlo values with
a certified truncation bound and a standard error (entangled for the eps family,
independent for drq+pse). DBC's deep target uses W2 between the *latent*
Gaussians with a Euclidean cost, not the learned distance, so no state-space
operator is its fixed point: ``dbc-sampled`` (and, on a Gaussian scene, the
independent reward fixed point) is a reference, and ``target_exact`` says so.

Two variants change one thing about a method:

* ``coupling="independent"`` with eps-r: the same reward-ground loss
  (:func:`bisimkit.losses.sampled_loss`, ``reward_ground``) with each noise draw
  independent for the two states instead of shared; eps-r and it differ only in
  the coupling, as eps-pi and drq+pse do on the policy ground. Its fixed point is
  the independent-sampling reward fixed point (``dbc-sampled`` on a finite scene,
  whose transitions are deterministic);
* ``update_rule="dbc"`` with drq+dbc: DBC's own update (the ``dbc`` preset's
  update, without DrQ shifts; ``TrainConfig.update_rule``), isolated as the other
  methods are (its encoder and world-model step, no critic). It has no distance
  head: the learned distance is the mean over latent coordinates of the smooth-L1
  comparison its loss regresses (:func:`learned_distance`).

``samples_per_pair`` is the number of noise draws averaged per bisimulation
target (``TrainConfig.bisim_samples``); its default is training's, 1, and every
summary states it. The distractor invariance is measured on fresh draws of the
training family and on the held-out family (:class:`agents.scenes.HeldOutDistractors`),
never drawn in training. :mod:`.references` holds the exact metrics a method
intends (optimal coupling) beside its loss's own fixed point, which
``benchmarks/coupling_study.py`` compares over seeds.

The modules: :mod:`.settings` (:class:`Settings`), :mod:`.methods` (the methods, their variants
and agents), :mod:`.exact` (the exact metric, the scenes), :mod:`.training` (the two modes),
:mod:`.measure` (the learned matrix and its errors), :mod:`.learn` (:func:`learn_metric`),
:mod:`.results` (the files), :mod:`.references` (intended and own fixed points); this package
names their public functions.
"""

from .exact import as_scene, exact_metric
from .learn import learn_metric
from .measure import agent_policy, l1_head_floor, learned_distance, learned_distance_name, measure, summarise
from .methods import (
    COUPLINGS,
    DBC_FIELDS,
    GROUNDS,
    METRIC_METHODS,
    SAMPLES_PER_PAIR,
    agent_class,
    check_method,
    check_variant,
    independent_reward_agent,
    intended_metric,
    own_fixed_point,
)
from .references import MC_SAMPLES, PER_PAIR_FLOOR, REFERENCES, Reference, compare, reference_metric
from .results import TARGETS, MetricCheck, load_results, markdown_table, meets_targets, write_results
from .settings import MODES, SCHEDULES, Settings

__all__ = [
    "COUPLINGS",
    "DBC_FIELDS",
    "GROUNDS",
    "MC_SAMPLES",
    "METRIC_METHODS",
    "MODES",
    "PER_PAIR_FLOOR",
    "REFERENCES",
    "SAMPLES_PER_PAIR",
    "SCHEDULES",
    "TARGETS",
    "MetricCheck",
    "Reference",
    "Settings",
    "agent_class",
    "agent_policy",
    "as_scene",
    "check_method",
    "check_variant",
    "compare",
    "exact_metric",
    "independent_reward_agent",
    "intended_metric",
    "l1_head_floor",
    "learn_metric",
    "learned_distance",
    "learned_distance_name",
    "load_results",
    "markdown_table",
    "measure",
    "meets_targets",
    "own_fixed_point",
    "reference_metric",
    "summarise",
    "write_results",
]

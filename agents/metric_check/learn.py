""":func:`learn_metric`: train a method's agent on a scene and measure its metric against the exact one."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from ..scenes import check_distractors
from .exact import as_scene, exact_metric
from .measure import agent_policy, l1_head_floor, learned_distance_name, measure, summarise
from .results import MetricCheck
from .settings import Settings
from .training import Training

#: The configuration fields a summary states.
SUMMARY_CONFIG = (
    "augment",
    "beta",
    "bisim_samples",
    "bisim_warmup",
    "capacity",
    "discount",
    "lr",
    "latent_squash",
    "model_grad",
    "spread_units",
    "update_rule",
)


def learn_metric(
    mdp,
    render=None,
    settings: Settings | None = None,
    *,
    behaviour=None,
    eval_states=None,
    progress: Callable | None = None,
    target: tuple[np.ndarray, dict] | None = None,
    **fields,
) -> MetricCheck:
    """Train ``settings.method``'s agent on ``mdp`` rendered by ``render`` (or a built-in scene name, or a
    :class:`~agents.scenes.Scene`) with the settings' distractors and measure the learned metric against the
    exact one (:mod:`agents.metric_check`). ``settings``: a :class:`Settings` (default its defaults), with any
    of its fields given as keywords applied over it (``learn_metric("ring", method="eps-pi", steps=300)``).
    ``behaviour``, ``eval_states``: a user's MDP's behaviour and evaluation states (:func:`as_scene`).
    ``progress(step, row)`` is called at every measurement and at the end. ``target``: the exact matrix of the
    scene's behaviour and its info, computed before (else :func:`exact_metric`; agent mode on a finite scene
    always solves for the agent's final policy). Returns a :class:`MetricCheck`."""
    s = replace(settings or Settings(), **fields).checked()
    kinds = check_distractors(s.distractors)
    scene = as_scene(mdp, render, behaviour=behaviour, eval_states=eval_states, image_size=s.image_size)
    start, cpu_start = time.monotonic(), time.process_time()
    training = Training.begin(s, scene, kinds, progress)
    agent = training.agent
    policy = None
    if s.mode == "isolated":  # the behaviour's metric, known before training: the curve tracks the errors
        exact, info = (
            target
            if target is not None
            else exact_metric(
                scene, s.method, samples=s.samples, seed=s.seed, coupling=s.coupling, update_rule=s.update_rule
            )
        )
        training.isolated(exact)
    else:
        training.in_agent()
    seconds, cpu_seconds = time.monotonic() - start, time.process_time() - cpu_start
    learned, invariance = measure(agent, scene, kinds, s.draws, s.seed)
    held_out, invariance_held_out = (
        measure(agent, scene, kinds, s.draws, s.seed, family="held-out") if kinds else (learned, invariance)
    )
    if s.mode == "agent":  # the metric of the agent's final policy where it can be read off (finite scenes)
        policy = agent_policy(agent, scene, kinds, s.draws, s.seed) if scene.kind == "finite" else None
        exact, info = (
            target
            if policy is None and target is not None
            else exact_metric(
                scene,
                s.method,
                policy=policy,
                samples=s.samples,
                seed=s.seed,
                coupling=s.coupling,
                update_rule=s.update_rule,
            )
        )
        info["policy"] = (
            "the agent's final policy"
            if policy is not None
            else "the scene's behaviour policy (no exact metric of the agent's own policy on a Gaussian scene)"
        )
    summary = summarise(learned, exact, invariance)
    held = summarise(held_out, exact, invariance_held_out)
    summary.update(
        held_out={
            k: held[k] for k in ("mean_relative_error", "max_relative_error", "spearman", "distractor_invariance")
        }
    )
    floor = l1_head_floor(exact)
    if floor is not None:
        info["l1_head_floor"] = floor
    height = scene.image_shape[0]
    summary.update(
        seconds=round(seconds, 1),
        cpu_seconds=round(cpu_seconds, 1),
        scene=scene.name,
        method=s.method,
        coupling=s.coupling,
        update_rule=s.update_rule,
        samples_per_pair=s.samples_per_pair,
        mode=s.mode,
        steps=s.steps,
        batch=s.batch,
        image_size=height,
        distractors=list(kinds),
        draws=s.draws,
        seed=s.seed,
        device=str(agent.device),
        schedule=s.schedule,
        learned_distance=learned_distance_name(agent),
        exact=info,
        config={k: v for k, v in agent.config.to_dict().items() if k in SUMMARY_CONFIG},
    )
    return MetricCheck(
        learned, exact, np.asarray(scene.eval_states), summary, scene, agent, training.curve, held_out, policy
    )

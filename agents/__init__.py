"""Deep RL agents on the Distracting Control Suite (DCS).

The environment layer lives here: ``agents.videos`` (background videos: a real
DAVIS-2017 folder or bundled procedural ones), ``agents.compat`` (runtime shims
for distracting-control on MuJoCo 3 and numpy 2), ``agents.background`` (the
fast dynamic background), ``agents.render`` (cheap headless rendering) and
``agents.dcs`` (``make_env`` for the paper's six tasks). ``agents.carla_env`` is DBC's
CARLA highway task (``--task carla-highway``) on a CARLA server; it imports ``carla`` only
when an environment is made.

The networks of the paper's appendix C: ``agents.encoder`` (conv trunk shared by
actor and critics, frame-wise or stacked, and projection heads), ``agents.policy`` (squashed Gaussian
actor), ``agents.critic`` (twin critics), ``agents.models`` (Gaussian latent
transition, reward and inverse-dynamics heads), ``agents.mlp`` (MLPs, targets,
soft updates) and ``agents.augment`` (DrQ random shift). The bisimulation
losses come from ``bisimkit.losses``.

``agents.config`` is the one training configuration (``TrainConfig``, the presets
``paper``, ``drq`` and ``dbc``, and the command line generated from them);
``agents.agent`` the agents, one class per update rule (``DrQAgent``,
``JointAgent``, ``DBCAgent``); ``agents.replay`` the replay buffer;
``agents.train`` the training loop (``Trainer``); ``agents.checkpoint`` the
checkpoint, read as data only; ``agents.rollout`` episode seeding and
evaluation rollouts. ``agents.restore`` rebuilds an agent from a run folder or
checkpoint and ``python -m agents.evaluate RUN`` reports its return on the
held-out backgrounds.

Quick use::

    from agents.dcs import make_env
    env = make_env("walker-walk", background=True, camera=True, split="train", seed=0)
    obs = env.reset()                      # uint8 (9, 84, 84): 3 stacked RGB frames
    obs, reward, done, info = env.step(env.action_spec.minimum)

The same environments speak the Gymnasium API through ``agents.gym_env``
(``gymnasium.make("bisimkit/DCS-walker-walk-v0", background=True, camera=True, split="train")``);
importing ``agents`` registers those ids when gymnasium is already imported.
"""

import sys as _sys

if "gymnasium" in _sys.modules:  # importing gymnasium here would cost 0.5 s and change os.environ
    from .gym_env import register_envs as _register_envs

    _register_envs()

"""The paper's methods and tasks by the names a run's ``config.json`` gives them, in the paper's table order.

``agents.config.METHODS`` and ``agents.dcs.PAPER_TASKS`` / ``agents.dcs.TASKS`` define what each
name trains; ``tests/test_names.py`` holds them to these tuples.
"""

from __future__ import annotations

#: The methods in the paper's table order.
METHOD_ORDER: tuple[str, ...] = ("sac", "drq", "drq+dbc", "eps-r", "drq+pse", "eps-pi")
#: The paper's six tasks in its table order.
TASK_ORDER: tuple[str, ...] = (
    "ball_in_cup-catch",
    "cartpole-swingup",
    "cheetah-run",
    "finger-spin",
    "reacher-easy",
    "walker-walk",
)
#: Every Distracting Control Suite task a run may train on: the paper's six, then easier ones of their domains.
DCS_TASKS: tuple[str, ...] = (*TASK_ORDER, "cartpole-balance", "walker-stand")
#: DBC's CARLA highway task (``agents.carla_env``).
CARLA_TASK = "carla-highway"

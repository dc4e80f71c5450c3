"""The records' names of methods and tasks (``bisimkit_runs.names``) are the ones the agents train under."""

from __future__ import annotations

from bisimkit_runs.names import CARLA_TASK, DCS_TASKS, METHOD_ORDER, TASK_ORDER


def test_the_methods_are_the_agents_methods_in_the_papers_order():
    from agents.config import METHODS

    assert METHOD_ORDER == tuple(METHODS)


def test_the_tasks_are_the_agents_tasks():
    from agents.config import CARLA_TASKS, task_names
    from agents.dcs import PAPER_TASKS, TASKS

    assert TASK_ORDER == tuple(PAPER_TASKS)
    assert DCS_TASKS == tuple(TASKS) and set(TASK_ORDER) < set(DCS_TASKS)
    assert (CARLA_TASK,) == tuple(CARLA_TASKS) and task_names() == (*DCS_TASKS, CARLA_TASK)

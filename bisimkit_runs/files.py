"""The files of a run folder: what ``agents.train`` writes and the tables, figures and sweeps read.

A run folder holds ``config.json`` (the configuration), ``train.csv`` (a row per training
episode, :data:`TRAIN_FIELDS`) and an evaluation log per background split (:data:`EVAL_FILES`,
rows of :data:`EVAL_FIELDS`). Importing this module loads nothing else, so readers without
torch take the names from here.
"""

from __future__ import annotations

CONFIG_FILE = "config.json"
TRAIN_FILE = "train.csv"
#: The evaluation log of each background split: ``eval`` the held-out videos, ``train`` the training ones.
EVAL_FILES = {"eval": "eval.csv", "train": "eval_train.csv"}
EVAL_FILE = EVAL_FILES["eval"]

#: The learned-metric losses an agent reports (``agents.agent``): the bisimulation loss and the world-model
#: losses it is trained with (transition, reward, and DBC's inverse-dynamics loss).
METRIC_LOSSES = ("bisim_loss", "transition_loss", "reward_loss", "inverse_loss")
TRAIN_FIELDS = [
    "episode",
    "env_step",
    "episode_return",
    "episode_steps",
    "steps_per_s",
    "elapsed_s",
    "critic_loss",
    "actor_loss",
    "alpha",
    "entropy",
    "q",
    *METRIC_LOSSES,
]
EVAL_FIELDS = ["env_step", "mean_return", "std_return", "episodes", "split", "elapsed_s"]

"""Sweeps: grids of training runs on SLURM (through submitit) or on this machine, resumable, gathered into the
paper's tables.

* :mod:`agents.sweep.spec`: the grid (a TOML/JSON spec and ``--grid``/``--set`` flags), run names, validation;
* :mod:`agents.sweep.runner`: the job callable (:class:`~agents.sweep.runner.SweepJob`, submitit's checkpoint
  hook), per-run state files, failures;
* :mod:`agents.sweep.launch`: submitit executors (``slurm``, ``local``), launch and status;
* :mod:`agents.sweep.cli`: ``python -m agents.sweep launch|status`` (``gather`` is :mod:`figures.sweep_report`);
* ``agents/sweep/local_slurm.sh``: a one-node SLURM on this machine; ``agents/sweep/paper/*.toml``: the paper's
  tables as sweep specs.

See docs/agents.md, "Sweeps".
"""

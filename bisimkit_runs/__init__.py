"""The agents' records on disk, read without the agents: run folders, sweeps, aggregates and tables.

``python -m agents.train`` writes run folders and ``python -m agents.sweep`` sweep roots; the
figures and the agents' commands read them back through this package, which imports only
``bisimkit`` (its errors and atomic writes), so neither ``agents`` nor ``figures`` imports the
other (``tests/test_layers.py``):

* :mod:`bisimkit_runs.files`: the files of a run folder and their columns;
* :mod:`bisimkit_runs.names`: the paper's methods and tasks, in its table order;
* :mod:`bisimkit_runs.runs`: finding run folders, reading their logs, grouping seeds by configuration;
* :mod:`bisimkit_runs.sweeps`: the files of a sweep root (its grid, its runs' states);
* :mod:`bisimkit_runs.aggregate`: the estimators of Agarwal et al. with stratified-bootstrap intervals;
* :mod:`bisimkit_runs.aggregate_table`: the aggregate report of run folders (text and CSV);
* :mod:`bisimkit_runs.results_table`: the paper's results table and its CARLA table (markdown).
"""

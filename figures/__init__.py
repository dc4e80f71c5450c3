"""Plots of bisimulation metrics; each module has a ``main`` that regenerates its figure.

Layer: the drawing functions take arrays; the ``main`` functions, the command lines,
compute them with :mod:`validation.figure_data` (or :mod:`validation.learning`). The
agents' figures read run folders and sweeps through :mod:`bisimkit_runs`; the neighbour
figure draws what :mod:`agents.neighbours` rolls out (its command, ``__main__``, joins them). ``verify_figures``
draws the figures of a ``bisimkit verify`` run; ``compare`` draws a
:class:`bisimkit.Comparison` (``bisimkit compare``: heatmaps, scatter matrix, difference map).

* ``python -m figures.heatmaps``: every metric over the mirrored-rooms grid;
* ``python -m figures.scatter``: d_eps-bar against d_eps, d_eps against d_pi;
* ``python -m figures.diagonal``: self-distance of the sampled operators against policy stochasticity.

Reports on trained agents (run folders of ``python -m agents.train``, found by ``bisimkit_runs.runs``):

* ``python -m figures.learning_curves RUNS_ROOT --out curves.png``: evaluation return per task and method;
* ``python -m figures.results_table RUNS_ROOT [--step N]``: the paper's results table in markdown;
* ``python -m figures.nearest_neighbours CHECKPOINT --out nn.png``: neighbours under the learned distance.
"""

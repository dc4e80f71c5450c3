"""Plots of bisimulation metrics; each module has a ``main`` that regenerates its figure.

* ``python -m figures.heatmaps``: every metric over the mirrored-rooms grid;
* ``python -m figures.scatter``: d_eps-bar against d_eps, d_eps against d_pi;
* ``python -m figures.diagonal``: self-distance of the sampled operators against policy stochasticity.
"""

"""Checks of the entangled-bisimulation paper's claims (``docs/claims.md``).

Layer: imports :mod:`bisimkit` only (never :mod:`figures` or ``agents``).

* :mod:`validation.strategies`: hypothesis strategies for finite MDPs;
* :mod:`validation.families`: named families of cases with seeded generators;
* :mod:`validation.claims`: one check per claim C1-C10;
* :mod:`validation.gaussian_claims`: C5, C6 and C8 in continuous space;
* :mod:`validation.learning`: the learned losses converge to the exact fixed points (L1-L6);
* :mod:`validation.reference`: a slow, independent per-pair reference (test oracle and baseline);
* :mod:`validation.figure_data`: the numbers the figures draw;
* :mod:`validation.verify`: the ``bisimkit verify`` job (its figures drawn by a writer passed in).
"""

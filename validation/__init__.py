"""Checks of the entangled-bisimulation paper's claims (SPEC section 2).

* :mod:`validation.strategies`: hypothesis strategies for finite MDPs;
* :mod:`validation.families`: named families of cases with seeded generators;
* :mod:`validation.claims`: one check per claim C1-C10;
* :mod:`validation.learning`: the learned losses converge to the exact fixed points (L1-L5);
* :mod:`validation.verify`: the ``bisimkit verify`` job.
"""

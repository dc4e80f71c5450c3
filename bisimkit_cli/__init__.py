"""The installed programs: the top layer, the only place that wires every package together.

Layers, each importing only those below it (``tests/test_layers.py`` checks this)::

    bisimkit (core, losses)  <-  validation  <-  figures  <-  bisimkit_cli (command lines)

* :mod:`bisimkit_cli.main`: the ``bisimkit`` command (``[project.scripts]`` and
  ``python -m bisimkit``): the core commands plus ``verify`` and ``compare``;
* :mod:`bisimkit_cli.core`: the core commands (solve, relation, info, examples, metrics), which
  import only the core library, and the parser's hook for the added ones (``build_parser(commands=...)``);
  :mod:`bisimkit.cli` names its ``main``, ``build_parser`` and ``load_mdp_or_example`` for code that
  imports them from the core's name;
* :mod:`bisimkit_cli.verify`: the ``verify`` subcommand, which runs
  :func:`validation.verify.verify` with the figure writer of :mod:`figures.verify_figures`;
* :mod:`bisimkit_cli.compare`: the ``compare`` subcommand, :func:`bisimkit.compare`'s numbers
  drawn by :mod:`figures.compare`.

The agents (``python -m agents.train`` ...) have their own entry points in ``agents``.
"""

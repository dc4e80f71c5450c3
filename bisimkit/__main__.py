"""``python -m bisimkit`` runs the ``bisimkit`` program (:mod:`bisimkit_cli.main`, which adds
``verify`` to the core commands). Only executed, never imported by the library."""

from bisimkit_cli.main import run

if __name__ == "__main__":
    run()

"""``python -m bisimkit`` runs the command line."""

from .cli import run

run()

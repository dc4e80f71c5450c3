"""``python -m agents.sweep launch|status|gather``. Only executed, never imported by the library: ``gather``
draws the paper's tables and curves with :mod:`figures`, a layer above ``agents`` (as ``bisimkit/__main__.py``
runs :mod:`bisimkit_cli`)."""

import sys

if __name__ == "__main__":
    if sys.argv[1:2] == ["gather"]:
        from figures.sweep_report import main as gather

        sys.exit(gather(sys.argv[2:]))
    from agents.sweep.cli import main

    sys.exit(main())

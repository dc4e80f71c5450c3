"""The ``bisimkit`` program: the core commands plus ``verify`` and ``compare``, the core ones without the others'
modules."""

import subprocess
import sys

from bisimkit_cli.main import COMMANDS, core_commands, main


def test_the_core_commands_are_the_cores_own():
    names = core_commands()
    assert {"solve", "relation", "info", "examples", "metrics"} <= names
    assert not {"verify", "compare"} & names and len(COMMANDS) == 2


def test_added_commands_run_through_main(capsys):
    assert main(["compare", "chain", "--metrics", "nope", "--out", "x"]) == 2
    assert "--metrics: unknown metric 'nope'" in capsys.readouterr().err
    assert main(["metrics"]) == 0 and "pi" in capsys.readouterr().out


def test_a_core_command_loads_none_of_the_added_ones():
    code = (
        "import sys; from bisimkit_cli.main import main; main(['metrics']); "
        "print('validation' in sys.modules, 'bisimkit_cli.compare' in sys.modules, file=sys.stderr)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stderr.strip().splitlines()[-1] == "False False"

"""The update profiler refuses a variant that bisimkit's update benchmark does not define, in one line."""

import pytest

pytest.importorskip("torch")

from benchmarks.profile_update import main  # noqa: E402


def test_an_unknown_variant_is_one_line_and_exit_2(capsys):
    assert main(["--variants", "nope/fast", "--batch", "2", "--device", "cpu"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: variants: 'nope/fast' is not one of ") and err.count("\n") == 1

"""agents/entry.py: how an agents command line ends on bad input, a missing extra or Ctrl-C."""

import pytest

from agents.entry import one_line, run_command
from bisimkit.errors import InputError


def raising(exc):
    def body():
        raise exc

    return body


def test_bad_input_is_one_error_line_and_exit_2(capsys):
    assert run_command(raising(InputError("episodes: 0 is not a positive integer\nmore"))) == 2
    assert capsys.readouterr().err == "error: episodes: 0 is not a positive integer\n"
    assert run_command(raising(ValueError("split: bad")), bad_input=(InputError, ValueError)) == 2
    with pytest.raises(ValueError):  # not counted as bad input unless the command says so
        run_command(raising(ValueError("x")))


def test_a_missing_extra_names_it_and_exits_2(capsys):
    assert run_command(raising(ModuleNotFoundError("No module named 'torch'", name="torch"))) == 2
    assert "'torch' extra" in capsys.readouterr().err
    with pytest.raises(ModuleNotFoundError):  # any other missing module is a bug, not an extra
        run_command(raising(ModuleNotFoundError("No module named 'nope'", name="nope")))


def test_ctrl_c_prints_the_hint_and_exits_130(capsys):
    assert run_command(raising(KeyboardInterrupt()), interrupted="resume with --resume") == 130
    assert capsys.readouterr().err == "interrupted: resume with --resume\n"
    assert run_command(raising(KeyboardInterrupt())) == 130 and capsys.readouterr().err == ""
    assert run_command(lambda: 0) == 0


def test_one_line_of_an_empty_message_is_the_type():
    assert one_line(RuntimeError()) == "RuntimeError" and one_line(OSError("\n a\nb")) == "a"


def test_a_file_error_during_the_work_is_one_line_and_exit_4(capsys):
    disk_full = OSError(28, "No space left on device", "runs/x/summary.json")
    assert run_command(raising(disk_full)) == 4
    assert capsys.readouterr().err == "error: runs/x/summary.json: No space left on device\n"
    assert run_command(raising(BrokenPipeError())) == 0  # output piped into head

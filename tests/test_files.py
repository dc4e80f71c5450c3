"""bisimkit/files.py: atomic writes and output paths checked before any work."""

import errno
import json
import os
import tempfile

import pytest

from bisimkit import files
from bisimkit.errors import InputError
from bisimkit.files import atomic_write_json, check_output
from bisimkit_cli.core import main


def test_a_writable_path_passes_and_nothing_stays(tmp_path):
    assert check_output(tmp_path / "a" / "b" / "d.json") == tmp_path / "a" / "b" / "d.json"
    assert check_output(tmp_path / "new", folder=True) == tmp_path / "new"
    assert list(tmp_path.iterdir()) == []  # neither the folders nor the probe remain


@pytest.mark.parametrize(
    "case, words",
    [
        ("parent-is-file", "is not a folder"),
        ("file-is-folder", "is a folder, not a file"),
        ("folder-is-file", "exists and is not a folder"),
    ],
)
def test_a_path_that_cannot_take_the_result_names_the_parameter(tmp_path, case, words):
    (tmp_path / "f").write_text("x")
    path, folder = {
        "parent-is-file": (tmp_path / "f" / "d.json", False),
        "file-is-folder": (tmp_path, False),
        "folder-is-file": (tmp_path / "f", True),
    }[case]
    with pytest.raises(InputError) as info:
        check_output(path, "out", folder=folder)
    assert info.value.param == "out" and words in str(info.value)


def test_a_folder_the_process_cannot_write_in_is_refused(tmp_path, monkeypatch):
    def denied(*args, **kwargs):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))

    monkeypatch.setattr(tempfile, "TemporaryFile", denied)
    with pytest.raises(InputError, match=r"^out: cannot write .*Permission denied in "):
        check_output(tmp_path / "d.npy")


def test_cli_refuses_an_unwritable_out_before_solving(tmp_path, capsys):
    (tmp_path / "f").write_text("x")
    assert main(["solve", "chain", "--metric", "pi", "--quiet", "--out", str(tmp_path / "f" / "d.json")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("bisimkit: error: --out: cannot write"), err
    assert main(["examples", "--write", str(tmp_path / "f")]) == 2
    assert "--write: " in capsys.readouterr().err and (tmp_path / "f").read_text() == "x"


def test_cli_a_file_error_during_the_work_is_one_line_exit_4_nothing_written(tmp_path, capsys, monkeypatch):
    def full(path, writer):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

    monkeypatch.setattr("bisimkit_cli.core.atomic_write", full)
    out = tmp_path / "d.npy"
    assert main(["solve", "chain", "--metric", "pi", "--quiet", "--out", str(out)]) == 4
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"bisimkit: error: {out}: {os.strerror(errno.ENOSPC)}"] and not out.exists()


def test_atomic_write_leaves_no_temp_file_when_the_writer_fails(tmp_path):
    def broken(fh):
        fh.write(b"half")
        raise RuntimeError("writer failed")

    with pytest.raises(RuntimeError):
        files.atomic_write(tmp_path / "x.bin", broken)
    assert list(tmp_path.iterdir()) == []
    atomic_write_json(tmp_path / "x.json", {"a": 1})
    assert json.loads((tmp_path / "x.json").read_text()) == {"a": 1}


def test_staged_folder_appears_whole_or_not_at_all(tmp_path):
    from bisimkit.files import staged_folder

    out = tmp_path / "out"
    with pytest.raises(RuntimeError):
        with staged_folder(out) as staging:
            (staging / "a.txt").write_text("a")
            raise RuntimeError("stopped half way")
    assert not out.exists() and list(tmp_path.iterdir()) == []  # nothing half-written, no staging left
    with staged_folder(out) as staging:
        (staging / "a.txt").write_text("a")
        assert not out.exists()
    assert (out / "a.txt").read_text() == "a" and len(list(tmp_path.iterdir())) == 1


def test_staged_folder_treats_an_existing_folder_as_asked(tmp_path):
    from bisimkit.files import staged_folder

    out = tmp_path / "out"
    out.mkdir()
    with staged_folder(out) as staging:  # "empty": an empty folder is taken over
        (staging / "a.txt").write_text("1")
    with pytest.raises(OSError):  # ... a full one is refused and left as it was
        with staged_folder(out) as staging:
            (staging / "b.txt").write_text("2")
    assert sorted(p.name for p in out.iterdir()) == ["a.txt"]
    with staged_folder(out, existing="merge") as staging:
        (staging / "a.txt").write_text("3")
        (staging / "b.txt").write_text("4")
    assert (out / "a.txt").read_text() == "3" and (out / "b.txt").read_text() == "4"
    (out / "c.txt").write_text("5")
    with staged_folder(out, existing="merge") as staging:
        (staging / "b.txt").write_text("6")
    assert sorted(p.name for p in out.iterdir()) == ["a.txt", "b.txt", "c.txt"]
    with staged_folder(out, existing="replace") as staging:
        (staging / "d.txt").write_text("7")
    assert sorted(p.name for p in out.iterdir()) == ["d.txt"]
    assert [p.name for p in tmp_path.iterdir()] == ["out"]  # no staging folder left behind
    with pytest.raises(ValueError):
        with staged_folder(out, existing="overwrite"):
            pass

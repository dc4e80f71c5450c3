"""The executors of jobs: the names a command may give, SLURM's reachability and queue, the missing extra."""

from __future__ import annotations

import os
import stat
import sys

import pytest

from bisimkit.cluster import EXECUTORS, check_executor, check_slurm, import_submitit, slurm_queue
from bisimkit.errors import InputError


def test_only_the_known_executors_are_accepted():
    assert [check_executor(kind) for kind in EXECUTORS] == list(EXECUTORS)
    with pytest.raises(InputError, match=r"^executor: unknown executor 'pbs' \(choose from local, slurm\)$"):
        check_executor("pbs")


def test_a_missing_submitit_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "submitit", None)  # an import of it then fails
    with pytest.raises(InputError, match=r"comes with the 'sweep' extra: pip install -e '\.\[sweep\]'"):
        import_submitit("sweep")


def _fake_tool(folder, name, script):
    path = folder / name
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


def test_slurm_without_its_client_is_refused_in_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(InputError, match="^executor: SLURM is not reachable: sinfo is not on PATH"):
        check_slurm()
    assert slurm_queue() is None


def test_a_failing_sinfo_gives_its_last_line(tmp_path, monkeypatch):
    _fake_tool(tmp_path, "sinfo", "echo first >&2; echo 'cannot reach controller' >&2; exit 1\n")
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}/bin:/usr/bin")
    with pytest.raises(InputError, match=r"sinfo failed \(cannot reach controller\)$"):
        check_slurm()


def test_the_queue_lists_the_job_ids(tmp_path, monkeypatch):
    _fake_tool(tmp_path, "squeue", "printf '12_0\\n  \\n13\\n'\n")
    _fake_tool(tmp_path, "sinfo", "exit 0\n")
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}/bin:/usr/bin")
    check_slurm()
    assert slurm_queue() == {"12_0", "13"}

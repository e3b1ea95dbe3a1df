"""Adversarial pass over exit codes: every failure is one clear line on stderr with the exit
code of spec.md, never "internal error"."""

from __future__ import annotations

import os
import sys

import pytest


def _unwritable_places(tmp_path):
    places = []
    if sys.platform.startswith("linux") and os.path.isdir("/proc"):
        places.append("/proc/agentcli-demo.sqlite3")  # even root cannot create a file there
    if os.geteuid() != 0:
        ro = tmp_path / "read-only"
        ro.mkdir()
        ro.chmod(0o555)
        places.append(str(ro / "orders.sqlite3"))
    return places


def test_db_init_where_nothing_can_be_written_is_a_configuration_error(cli, cli_env, tmp_path):
    """`db init --db` in a folder that cannot be written (read-only, a pseudo file system, as
    well as a disk that fills up) ended in "internal error (OperationalError: unable to open
    database file)", exit 1: the database was not made, and nothing said what to do."""
    places = _unwritable_places(tmp_path)
    if not places:
        pytest.skip("no folder here that this user cannot write")
    for where in places:
        for db in (where, f"sqlite:///{where}"):
            p = cli(["db", "init", "--db", db, "--orders", "5"], cli_env)
            assert p.returncode == 3, (db, p.err)
            assert "internal error" not in p.err and "Traceback" not in p.err, p.err
            assert len(p.err.strip().splitlines()) == 1 and "writable folder" in p.err, p.err
            assert not os.path.exists(where)

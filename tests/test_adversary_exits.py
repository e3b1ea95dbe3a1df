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


def test_an_agentcli_key_that_is_not_a_table_is_a_configuration_error(cli, cli_env, tmp_path):
    """`agentcli = 5` in agentcli.toml made the whole file read as empty: `max_turns = -3`
    beside it passed without a word and the run went on with the defaults, exit 0."""
    (tmp_path / "agentcli.toml").write_text("agentcli = 5\nmax_turns = -3\n")
    p = cli(["ask", "--provider", "offline", "where is GH56JK78MN?"], cli_env, cwd=tmp_path)
    assert p.returncode == 3, (p.out, p.err)
    assert "[agentcli] table" in p.err and len(p.err.strip().splitlines()) == 1, p.err
    doctor = cli(["doctor"], cli_env, cwd=tmp_path)
    assert doctor.returncode == 3 and "[agentcli] table" in doctor.out, doctor.out


def test_a_setting_outside_the_agentcli_table_is_warned_about(cli, cli_env, tmp_path):
    """With an [agentcli] table only its settings are read: `drafts_dir` written above it (the
    team's folder) was ignored silently, and the drafts went to agentcli's own folder."""
    team = tmp_path / "team-drafts"
    team.mkdir()
    (tmp_path / "agentcli.toml").write_text(f'drafts_dir = "{team}"\n[agentcli]\nmax_turns = 5\n')
    p = cli(["ask", "--provider", "offline", "where is GH56JK78MN?"], cli_env, cwd=tmp_path)
    assert p.returncode == 0, p.err
    assert "'drafts_dir' is outside the [agentcli] table and is ignored" in p.err, p.err


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux's /proc")
def test_a_drafts_folder_that_cannot_hold_files_is_not_said_to_be_gone(cli, cli_env):
    # mkdir/open in /proc fails with ENOENT: the folder is there, it only cannot hold files.
    p = cli(["ask", "--provider", "offline", "--drafts-dir", "/proc", "Where is GH56JK78MN?"], cli_env)
    assert p.returncode == 3, p.err
    assert "/proc cannot hold files" in p.err and "no longer exists" not in p.err, p.err
    assert "Traceback" not in p.err


@pytest.mark.parametrize("args", [
    ["log", "list", "--since", ""], ["log", "list", "--since", "  "],
    ["drafts", "list", "--since", ""], ["drafts", "list", "--since", " "],
    ["drafts", "list", "--order", "foo"], ["drafts", "list", "--order", "  "],
    ["drafts", "approve", "--order", "foo"], ["review", "--order", "foo"],
])
def test_a_blank_age_or_a_malformed_order_code_is_a_usage_error_not_a_filter(cli, cli_env, args):
    """``--since ''`` listed everything, ``drafts list --order foo`` nothing, without a word,
    while ``log list --order foo`` and ``--ticket ''`` are exit 2."""
    cli_env["AGENTCLI_DRAFTS_DIR"] = str(cli_env["AGENTCLI_HOME"])  # a folder that exists
    p = cli(args, cli_env)
    assert p.returncode == 2, (p.out, p.err)
    (line,) = p.err.splitlines()
    assert ("--since is blank" in line or "--order: " in line) and "internal error" not in line


def test_a_drafts_list_order_code_in_a_customers_form_still_matches(cli, cli_env):
    p = cli(["ask", "--provider", "offline", "--json", "Where is GH56JK78MN?"], cli_env)
    assert p.returncode == 0, p.err
    p = cli(["drafts", "list", "--json", "--order", "gh56-jk78-mn"], cli_env)
    assert p.returncode == 0 and len(__import__("json").loads(p.out)) == 1, p.err


def test_a_blank_environment_variable_is_as_if_unset(cli, cli_env):
    """``AGENTCLI_REQUEST_TIMEOUT="   "`` was exit 2 while ``=""`` and every other blank value
    count as unset; AGENTCLI_CUSTOMER blank stays refused (never "no scope")."""
    for var in ("AGENTCLI_REQUEST_TIMEOUT", "AGENTCLI_RETRIES", "AGENTCLI_MAX_TOKENS", "AGENTCLI_MODE"):
        p = cli(["ask", "--provider", "offline", "-q", "Where is GH56JK78MN?"], {**cli_env, var: "   "})
        assert p.returncode == 0, (var, p.err)
    p = cli(["ask", "--provider", "offline", "-q", "x"], {**cli_env, "AGENTCLI_CUSTOMER": "  "})
    assert p.returncode == 2 and "AGENTCLI_CUSTOMER" in p.err

"""A shared team drafts folder worked by two REAL Unix users in one group (issue 16, item 6).

Needs root (to create the users and to switch to them): CI runs as root (``.ci/run``) and there
this test must not skip. Each user runs agentcli in a forked child of this process that has
dropped to that user's uid/gids (the interpreter may live where other users cannot read, e.g.
under /root; the modules are loaded before the fork by a warm-up run as root).
"""

from __future__ import annotations

import grp
import json
import os
import pwd
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

import pytest

from .conftest import run_in_process

GROUP = "agentcli-team"
USERS = ("agentcli-a", "agentcli-b")
Q = "Hi, where is my order ORD-20261234? Thanks"


def _need_root() -> None:
    if os.geteuid() == 0:
        return
    if os.environ.get("CI"):
        pytest.fail("CI must run the two-user team-folder test as root (.ci/run does)")
    pytest.skip("needs root to create two Unix users and switch to them (CI runs it as root)")


@pytest.fixture(scope="module")
def team():
    _need_root()
    created: list[tuple[str, str]] = []
    try:
        grp.getgrnam(GROUP)
    except KeyError:
        subprocess.run(["groupadd", GROUP], check=True)
        created.append(("groupdel", GROUP))
    for u in USERS:
        try:
            pwd.getpwnam(u)
        except KeyError:  # its own primary group, and a member of the team group
            subprocess.run(["useradd", "-M", "-U", "-G", GROUP, "-s", "/usr/sbin/nologin", u], check=True)
            created.insert(0, ("userdel", u))
    yield grp.getgrnam(GROUP).gr_gid, {u: pwd.getpwnam(u) for u in USERS}
    for cmd, name in created:
        subprocess.run([cmd, name], check=False, capture_output=True)


def as_user(pw, team_gid: int, args: list[str], env: dict[str, str]) -> tuple[int, str, str]:
    """``agentcli ARGS`` as that user (uid, its own group, the team group), umask 022."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: drop to the user, run, report, never return into pytest
        code = 99
        try:
            os.close(r)
            os.setgroups([team_gid])
            os.setgid(pw.pw_gid)
            os.setuid(pw.pw_uid)
            os.umask(0o022)
            # a working folder the user may enter: the checkout may be somewhere only root reads
            os.chdir(env.get("AGENTCLI_HOME") or "/")
            p = run_in_process(args, {**env, "USER": pw.pw_name, "LOGNAME": pw.pw_name})
            os.write(w, json.dumps([p.returncode, p.out, p.err]).encode())
            code = 0
        except BaseException:  # noqa: BLE001 - reported to the parent
            import traceback

            os.write(w, json.dumps([98, "", traceback.format_exc(limit=-3)]).encode())
        finally:
            os._exit(code)
    os.close(w)
    chunks = []
    while True:
        b = os.read(r, 65536)
        if not b:
            break
        chunks.append(b)
    os.close(r)
    os.waitpid(pid, 0)
    return tuple(json.loads(b"".join(chunks) or b'[97, "", "no report"]'))  # type: ignore[return-value]


def test_two_users_share_a_setgid_drafts_folder(team, cli_env, demo_db):
    team_gid, users = team
    a, b = users["agentcli-a"], users["agentcli-b"]
    base = Path(tempfile.mkdtemp(prefix="agentcli-team-"))
    try:
        os.chmod(base, 0o755)
        folder = base / "drafts"
        folder.mkdir()
        os.chown(folder, 0, team_gid)
        os.chmod(folder, 0o2770)  # how teams set them up: setgid, group-writable, no world access
        db = base / "orders.sqlite3"
        shutil.copy(demo_db, db)
        os.chmod(db, 0o644)
        homes = {}
        for pw in (a, b):
            h = base / f"home-{pw.pw_name}"
            h.mkdir()
            os.chown(h, pw.pw_uid, pw.pw_gid)
            os.chmod(h, 0o700)
            homes[pw.pw_name] = h
        env = {k: v for k, v in cli_env.items() if k not in ("AGENTCLI_HOME", "AGENTCLI_DRAFTS_DIR")}
        env.update(AGENTCLI_DRAFTS_DIR=str(folder), AGENTCLI_DB=str(db), HOME=str(base))
        # warm-up as root elsewhere: every module these commands load is loaded before the forks
        warm = base / "warm"
        for args in (["ask", "--provider", "offline", "-q", Q], ["drafts", "list"], ["drafts", "list", "--json"]):
            assert run_in_process(args, {**env, "AGENTCLI_DRAFTS_DIR": str(warm),
                                         "AGENTCLI_HOME": str(base / "home-root")}).returncode == 0
        did = json.loads(run_in_process(["drafts", "list", "--json"], {
            **env, "AGENTCLI_DRAFTS_DIR": str(warm)}).stdout)[0]["id"]
        for args in (["drafts", "approve", did], ["drafts", "show", did, "--text"]):
            assert run_in_process(args, {**env, "AGENTCLI_DRAFTS_DIR": str(warm)}).returncode == 0

        code, out, err = as_user(a, team_gid, ["ask", "--provider", "offline", "--ticket", "T-77",
                                               "-q", Q], {**env, "AGENTCLI_HOME": str(homes[a.pw_name])})
        assert code == 0, err
        [draft] = list(folder.glob("d-*.md"))
        for p in (draft, folder / ".lock"):
            st = os.stat(p)
            assert stat.S_IMODE(st.st_mode) == 0o660, (p, oct(st.st_mode))  # despite umask 022
            assert st.st_gid == team_gid and st.st_uid == a.pw_uid, p

        env_b = {**env, "AGENTCLI_HOME": str(homes[b.pw_name])}
        code, out, err = as_user(b, team_gid, ["drafts", "list", "--json", "--ticket", "T-77"], env_b)
        assert code == 0, err
        assert [r["id"] for r in json.loads(out)] == [draft.stem]
        code, out, err = as_user(b, team_gid, ["drafts", "approve", draft.stem], env_b)
        assert code == 0, err
        st = os.stat(draft)
        assert stat.S_IMODE(st.st_mode) == 0o660 and st.st_gid == team_gid
        code, out, err = as_user(a, team_gid, ["drafts", "list", "--json", "--status", "approved"],
                                 {**env, "AGENTCLI_HOME": str(homes[a.pw_name])})
        assert code == 0, err
        [rec] = json.loads(out)
        assert rec["reviewed_by"] == "agentcli-b" and rec["history"][-1]["who"] == "agentcli-b"
        # b's draft in the same ticket (the same customer's other order) goes beside a's: b writes
        # the index a began
        code, out, err = as_user(b, team_gid, ["ask", "--provider", "offline", "--ticket", "T-77",
                                               "-q", "Hi, and where is my order 6UNFP6AAYF? Thanks"], env_b)
        assert code == 0, err
        code, out, err = as_user(a, team_gid, ["drafts", "list", "--json", "--all", "--ticket", "T-77"],
                                 {**env, "AGENTCLI_HOME": str(homes[a.pw_name])})
        assert code == 0, err
        assert sorted(r["status"] for r in json.loads(out)) == ["approved", "pending_review"]
        for p in folder.rglob("*"):  # nothing in the team folder is world-accessible
            assert not os.lstat(p).st_mode & 0o007, p
            assert os.lstat(p).st_gid == team_gid, p
    finally:
        shutil.rmtree(base, ignore_errors=True)

"""Shared fixtures: a fake Messages API server, a demo database, isolated homes, the CLI.

Everything is real except the model: the real ``anthropic`` SDK talks HTTP to
``agentcli.testing.fake_anthropic.FakeAnthropic`` on 127.0.0.1, the database is a real SQLite
file, drafts and session logs are real files. ``cli`` runs the command line in this process
(``agentcli.cli.main(argv)``, with real files as standard input, output and error); ``cli_proc``
runs the installed console script, for what only a real process shows (the entry point, signals,
its exit status, pipes, the terminal).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from agentcli.drafts.store import Draft, DraftStore
from agentcli.stores import init_sqlite
from agentcli.testing.fake_anthropic import FakeAnthropic
from agentcli.testing.fake_openai import FakeOpenAI

pytest_plugins = ["tests.pg"]  # the pg_dsn fixture: a real PostgreSQL server

TEST_KEY = "sk-ant-test-0123456789abcdefSECRET"

# Byte-code is kept. With PYTHONDONTWRITEBYTECODE set (some images set it for everything), each
# of the run's ~600 processes (the workers, every `agentcli` a test starts) compiled agentcli from
# source again, and pytest rewrote and compiled every test module again in each worker: half of
# a worker's collection (13 s -> 6 s) and ~0.1 s of each process. A pyc is only ever a cache of
# its source (Python rechecks the source's mtime), so writing it changes nothing a test sees.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


def pytest_configure(config):
    # A job started in the background (`cmd &`, nohup, some CI runners) has SIGINT ignored, and
    # an ignored signal stays ignored across fork and exec: every agentcli the tests start would
    # then ignore the Ctrl-C they send it, as POSIX wants for background jobs. The tests are
    # about a person's terminal, where it is not ignored; a handled signal is reset to its
    # default in an exec'd child, so handling it here gives every child the default.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    # nohup does the same to SIGHUP (agentcli keeps an ignored SIGHUP ignored, as nohup asks), so
    # the SIGHUP tests would see exit 0. A handler that does nothing keeps this process as nohup
    # wanted (alive after a hangup) and gives every exec'd child the default.
    if signal.getsignal(signal.SIGHUP) is signal.SIG_IGN:
        signal.signal(signal.SIGHUP, lambda signum, frame: None)
    # The tests never speak TLS (the fake servers are plain HTTP on 127.0.0.1), yet every SDK
    # client builds a TLS context and loads the system's CA bundle into it: ~140 certificates,
    # 40-80 ms of CPU per client, and each test against a fake server has its own client (about
    # 275 in a run, 10-20 s). SSL_CERT_FILE, which httpx honours (as for a company's own CA
    # bundle), names a file holding one of those certificates instead: the context is built
    # the same way, with less to load. A user's own SSL_CERT_FILE / SSL_CERT_DIR is kept; one
    # that names the system's own bundle (images often export it) is the same as none.
    if _system_or_unset("SSL_CERT_FILE", "cafile") and _system_or_unset("SSL_CERT_DIR", "capath"):
        ca = _one_system_ca()
        if ca is not None:
            before = {k: os.environ.get(k) for k in ("SSL_CERT_FILE", "SSL_CERT_DIR")}
            os.environ["SSL_CERT_FILE"] = ca
            os.environ.pop("SSL_CERT_DIR", None)

            def restore() -> None:
                for k, v in before.items():
                    if v is None:
                        os.environ.pop(k, None)
                    else:
                        os.environ[k] = v
                shutil.rmtree(os.path.dirname(ca), ignore_errors=True)

            config.add_cleanup(restore)


def _system_or_unset(var: str, which: str) -> bool:
    """VAR is unset, or names the system's own CA bundle / directory (``which``: cafile, capath)."""
    import ssl

    value = os.environ.get(var)
    if not value:
        return True
    paths = ssl.get_default_verify_paths()
    system = {getattr(paths, which), getattr(paths, "openssl_" + which)}
    return os.path.realpath(value) in {os.path.realpath(p) for p in system if p}


def _one_system_ca() -> str | None:
    """A file holding the first certificate of the system's CA bundle, or None."""
    import re
    import ssl
    import tempfile

    paths = ssl.get_default_verify_paths()
    for bundle in (paths.cafile, paths.openssl_cafile):
        try:
            with open(bundle or "", encoding="ascii", errors="replace") as f:
                m = re.search(r"-----BEGIN CERTIFICATE-----.+?-----END CERTIFICATE-----\n", f.read(), re.S)
        except OSError:
            continue
        if m:
            path = os.path.join(tempfile.mkdtemp(prefix="agentcli-tests-ca-"), "ca.pem")
            with open(path, "w", encoding="ascii") as f:
                f.write(m.group(0))
            try:
                ssl.create_default_context(cafile=path)
            except ssl.SSLError:
                return None
            return path
    return None


def pytest_xdist_auto_num_workers(config):
    # `-n auto`: one worker a core and one more. Much of the suite's wall time is waiting
    # (timeouts, Retry-After pauses, the signal grace period, servers, child processes starting),
    # so with one worker a core the cores idle meanwhile; but each worker also collects the whole
    # suite (~4.5 s of CPU) and imports the SDKs its files use, and once the CPU is the bound a
    # worker more only adds that. On two idle cores (2026-12-07, 3,380 tests): 4 workers took
    # 100 s wall and 188 s of CPU, 3 took 97 s and 165 s (2026-12-03, ~2,300 tests and ~100 s of
    # CPU: 3 took 64-70 s, 4 took 59-62 s). `--maxprocesses` caps it.
    return (os.cpu_count() or 1) + 1


LONG_WEIGHT = 5  # a `long` file is started as a file of this many `slow` tests more


def pytest_collection_modifyitems(session, config, items):
    """Files with the most ``slow`` tests first (a ``long`` file as if it had LONG_WEIGHT more),
    each file's own order kept. The workers take whole files (``--dist loadfile``) in this
    order: the long ones start at once and the many short ones fill in at the end, instead of
    one long file starting last while the others have nothing left (xdist's own reordering, by
    number of tests, is off). ``long`` is for the files of seconds that have few or no ``slow``
    tests (Retry-After pauses, timeouts): in collection order, test_ratelimit (~13 s) started
    among the last files, and the run waited for it on one worker."""
    long = {item.path for item in items if item.get_closest_marker("long") is not None}
    weight = dict.fromkeys((item.path for item in items), 0)
    for path in long:
        weight[path] = LONG_WEIGHT
    for item in items:
        weight[item.path] += item.get_closest_marker("slow") is not None
    first_seen = {path: i for i, path in enumerate(weight)}
    items.sort(key=lambda item: (-weight[item.path], first_seen[item.path]))


_SCRUB = ("ANTHROPIC_", "OPENAI_", "AGENTCLI_", "PG")


def agentcli_exe() -> str:
    exe = Path(sys.executable).parent / "agentcli"
    if exe.exists():
        return str(exe)
    found = shutil.which("agentcli")
    assert found, "the agentcli console script is not installed (pip install -e '.[test]')"
    return found


@pytest.fixture(scope="session")
def demo_db(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("db") / "orders.sqlite3"
    init_sqlite(path, 300)
    os.chmod(path, 0o444)
    return path


@pytest.fixture
def fake_anthropic():
    with FakeAnthropic() as fake:
        yield fake


@pytest.fixture
def home(tmp_path) -> Path:
    h = tmp_path / "home"
    h.mkdir()
    return h


@pytest.fixture
def drafts_dir(tmp_path) -> Path:
    return tmp_path / "drafts"


def clean_env(home: Path, demo_db: Path, **extra: str) -> dict[str, str]:
    """The environment ``cli_env`` gives a CLI process, for one started outside a test's own
    fixtures (a module fixture starting several at once): this environment without provider
    keys, agentcli's settings or PG*, the home HOME (created), the demo database, no colour,
    unbuffered output; EXTRA on top (``AGENTCLI_DRAFTS_DIR``, ``COLUMNS``, ``fake_api(url)``)."""
    home.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(_SCRUB)}
    env.update(AGENTCLI_HOME=str(home), AGENTCLI_DB=str(demo_db), NO_COLOR="1",
               PYTHONUNBUFFERED="1", **extra)
    return env


def fake_api(url: str) -> dict[str, str]:
    """The settings that point a CLI at a fake Messages API at URL, with the (fake) test key."""
    return {"ANTHROPIC_API_KEY": TEST_KEY, "ANTHROPIC_BASE_URL": url,
            "AGENTCLI_PROVIDER": "anthropic", "AGENTCLI_RETRIES": "1"}


@pytest.fixture
def cli_env(home, demo_db, drafts_dir, monkeypatch) -> dict[str, str]:
    """A clean environment for the CLI: no provider keys, an isolated home, the demo database.

    It is also applied to this process (for in-process tests of the same code paths).
    """
    env = clean_env(home, demo_db, AGENTCLI_DRAFTS_DIR=str(drafts_dir), COLUMNS="200")
    for k in list(os.environ):
        if k.startswith(_SCRUB):
            monkeypatch.delenv(k)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    return env


@pytest.fixture
def anthropic_env(cli_env, fake_anthropic, monkeypatch) -> dict[str, str]:
    """``cli_env`` pointed at the fake Messages API with a (fake) key."""
    extra = fake_api(fake_anthropic.url)
    for k, v in extra.items():
        monkeypatch.setenv(k, v)
    return {**cli_env, **extra}


@pytest.fixture
def fake_openai():
    with FakeOpenAI() as fake:
        yield fake


@pytest.fixture
def openai_env(cli_env, fake_openai, monkeypatch) -> dict[str, str]:
    """``cli_env`` pointed at the fake Chat Completions server (no key, like a local server)."""
    extra = {"OPENAI_BASE_URL": fake_openai.base_url, "AGENTCLI_PROVIDER": "openai",
             "AGENTCLI_MODEL": "fake-model", "AGENTCLI_RETRIES": "1"}
    for k, v in extra.items():
        monkeypatch.setenv(k, v)
    return {**cli_env, **extra}


def run_cli(args: list[str], env: dict[str, str], *, input: str | bytes | None = None,
            timeout: float = 60, cwd: str | Path | None = None) -> subprocess.CompletedProcess:
    """Run the real console script; stdout and stderr are captured separately (both pipes)."""
    data = input.encode() if isinstance(input, str) else input
    return subprocess.run([agentcli_exe(), *args], env=env, input=data, capture_output=True,
                          timeout=timeout, cwd=cwd, stdin=None if data is not None else subprocess.DEVNULL)


@pytest.fixture
def cli_proc():
    """``cli_proc(args, env, input=...)``: the real console script in a subprocess ->
    CompletedProcess with ``.out`` / ``.err`` as text."""

    def _run(args, env, **kw):
        p = run_cli(args, env, **kw)
        p.out = p.stdout.decode("utf-8", "replace")
        p.err = p.stderr.decode("utf-8", "replace")
        return p

    return _run


def run_in_process(args: list[str], env: dict[str, str], *, input: str | bytes | None = None,
                   timeout: float = 60, cwd: str | Path | None = None) -> subprocess.CompletedProcess:
    """``agentcli ARGS`` in this process, as the console script would run it: ``env`` is the
    whole environment, standard input is a regular file holding ``input`` (or /dev/null), and
    standard output and error are regular files (not terminals), read back as bytes."""
    import io
    import tempfile

    from agentcli import config, redact
    from agentcli.cli import common, main

    data = input.encode() if isinstance(input, str) else input
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    saved_streams = sys.stdin, sys.stdout, sys.stderr
    saved_secrets = set(redact._extra)
    with tempfile.TemporaryFile() as fin, tempfile.TemporaryFile() as fout, \
            tempfile.TemporaryFile() as ferr:
        if data is not None:
            fin.write(data)
            fin.seek(0)
        stdin = (io.TextIOWrapper(fin, encoding="utf-8", errors="surrogateescape")
                 if data is not None else open(os.devnull, encoding="utf-8"))
        out = io.TextIOWrapper(fout, encoding="utf-8", errors="strict", write_through=True)
        err = io.TextIOWrapper(ferr, encoding="utf-8", errors="backslashreplace", write_through=True)
        try:
            os.environ.clear()
            os.environ.update(env)
            if cwd is not None:
                os.chdir(cwd)
            sys.stdin, sys.stdout, sys.stderr = stdin, out, err
            config.forget_config_file()  # a new process would read agentcli.toml afresh
            code = main([os.fsdecode(a) if isinstance(a, bytes) else str(a) for a in args])
        finally:
            sys.stdin, sys.stdout, sys.stderr = saved_streams
            common._Watchdog.disarm()  # a process would end here; this one goes on testing
            if cwd is not None:
                os.chdir(saved_cwd)
            os.environ.clear()
            os.environ.update(saved_env)
            redact._extra.clear()
            redact._extra.update(saved_secrets)
            for f in (out, err):
                try:
                    f.flush()
                except (OSError, ValueError):
                    pass
            if data is None:
                stdin.close()
        fout.seek(0)
        ferr.seek(0)
        p = subprocess.CompletedProcess(["agentcli", *args], code, fout.read(), ferr.read())
    p.out = p.stdout.decode("utf-8", "replace")
    p.err = p.stderr.decode("utf-8", "replace")
    return p


@pytest.fixture
def cli():
    """``cli(args, env, input=...)``: the command line in this process -> CompletedProcess with
    ``.returncode``, ``.stdout`` / ``.stderr`` (bytes) and ``.out`` / ``.err`` (text)."""
    return run_in_process


def saved_drafts(ddir):
    """Every draft file of the folder (superseded ones too), newest first."""
    drafts = [d for d in DraftStore(ddir).iter() if isinstance(d, Draft)]
    return sorted(drafts, key=lambda d: (d.meta.get("created_at") or "", d.id), reverse=True)


def user_texts(message: dict) -> list[str]:
    """The text blocks of one user message of a Messages API request. agentcli sends a list of
    content blocks (the newest carrying the cache breakpoint), never a bare string: another
    shape fails here rather than being read either way."""
    content = message["content"]
    assert isinstance(content, list) and all(isinstance(b, dict) for b in content), content
    return [b["text"] for b in content if b.get("type") == "text"]


def as_a_user(args: list[str]) -> list[str]:
    """``args`` run with the file permissions applying: as root, without the capabilities that
    bypass them (setpriv); skipped where neither is possible."""
    if os.geteuid() != 0:
        return args
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: permission bits do not apply")
    return [setpriv, "--bounding-set=-dac_override,-dac_read_search", *args]

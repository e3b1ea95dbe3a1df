"""Check before spending: what a run needs, tried for real before the first model call.

    folder_check(name, path, fix)   the folder exists or can be created, and a file can be
                                    created in it, read back, found in its listing and removed
                                    again (really tried: a write-only 0333 folder fails)
    drafts_check(settings)          that, and the folder's ``.lock`` is a regular file (not a
                                    folder, a FIFO, a socket or a symbolic link)
    key_check(settings, chosen)     the provider's key is present, not blank, one clean token
                                    of plain ASCII (no typographic dash from a copy-paste)
    endpoint_check(settings)        the provider's base URL and the proxy variables are URLs
                                    an HTTP client can use (``http://[::1`` is not)
    database_check(settings)        the orders database opens and has the schema (open_store)
    provider_check(settings)        the provider can be built from the settings (no network)
    await api_check(settings, p)    opt-in (``doctor --api``): the provider's check_api, the
                                    models list endpoint answers (GET /v1/models: no tokens,
                                    no cost)
    require(settings, chosen=...)   what ``ask``, ``chat``, ``batch`` and ``eval`` run first: the
                                    first failing local check becomes a ConfigError (exit 3, one line)

Each check returns a ``Check`` (name, ok, detail, fix); ``doctor`` prints them all. Nothing here
leaves anything behind: a probe file is removed, folders created only to be probed are removed.
"""

from __future__ import annotations

import asyncio
import errno
import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..config import is_default_drafts_dir, sessions_dir, where_set
from ..drafts.backends import open_drafts
from ..errors import AgentcliError, ConfigError, ModelAPIError, signals_held
from ..loop import SYSTEM_PROMPT
from ..providers import make_provider
from ..providers.endpoint import endpoint_problems, key_problem
from ..redact import one_line
from ..stores import open_store
from ..tools import default_registry
from .common import provider_chosen

KEY_ENV = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    fix: str | None = None

    def line(self) -> str:
        """The one line a failed check ends a run with."""
        return f"{self.name}: {self.detail}" + (f"; {self.fix}" if self.fix else "")

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "ok": self.ok, "detail": self.detail, "fix": self.fix}


def _shown(path: Any) -> str:
    return one_line(str(path), 200)


def folder_check(name: str, path: Path, fix: str) -> Check:
    """Can files be created in PATH? Tried: create (the folder if need be) + a probe file, remove.
    Signals are held meanwhile: the probe file and the folders made for it are removed whatever
    comes (a Ctrl-C, SIGTERM or SIGHUP takes effect after)."""
    with signals_held():
        return _folder_check(name, Path(path), fix)


def _folder_check(name: str, path: Path, fix: str) -> Check:
    created: list[Path] = []
    try:
        p = path
        while not p.exists() and not p.is_symlink() and p != p.parent:
            created.append(p)
            p = p.parent
        if created and not p.is_dir():
            return Check(name, False, f"{_shown(path)} cannot be created: {_shown(p)} is not a folder", fix)
        if not created and not path.is_dir():
            return Check(name, False, f"{_shown(path)} is not a folder", fix)
        for d in reversed(created):
            os.mkdir(d, 0o700)
        fd, probe = tempfile.mkstemp(prefix=".agentcli-probe-", dir=path)
        try:
            os.write(fd, b"probe\n")
            os.fsync(fd)
            # what a run does besides writing: read its files back and list the folder (a
            # write-only 0333 folder takes the write and refuses both)
            with open(probe, "rb") as f:
                f.read()
            if os.path.basename(probe) not in os.listdir(path):
                raise OSError(errno.EIO, "a file written there is not in its listing")
        finally:
            os.close(fd)
            os.unlink(probe)
    except OSError as e:
        why = e.strerror or type(e).__name__
        what = "cannot be created" if created and not path.is_dir() else "is not writable"
        return Check(name, False, f"{_shown(path)} {what} ({why})", fix)
    finally:
        for d in created:  # deepest first: only what this check made
            try:
                os.rmdir(d)
            except OSError:
                pass
    return Check(name, True, f"{_shown(path)} is writable" + (" (will be created)" if created else ""))


def _drafts_fix(folder: Any) -> str:
    """The fix for a drafts folder that cannot be written, naming where its setting came from."""
    return f"set {where_set('drafts_dir', folder)} to a folder agentcli can write"


def drafts_checks(settings: Any, source: str | None = None) -> list[Check]:
    """What every save needs in the drafts folder, tried for real (``DraftStore.probe``): the
    folder, its lock (a root-owned 0600 ``.lock`` makes every save fail), a file written and
    replaced with the team's group; ``source`` says where the folder's setting came from."""
    if settings.drafts_url:  # the team's queue: its server, schema and grants, tried for real
        try:
            store = open_drafts(url=settings.drafts_url, folder=None)
        except AgentcliError as e:
            return [Check("drafts queue", False, e.message, None)]
        try:
            return [Check(p.name, p.ok, p.detail, None if p.ok else p.fix) for p in store.probe()]
        finally:
            store.close()
    folder = settings.drafts_dir
    if Path(folder).is_dir():
        # a .lock that is a folder, a FIFO, a socket or a symbolic link, said in its own words
        lock = Path(folder) / ".lock"
        why = lock_problem(lock)
        if why is not None:
            return [Check("drafts folder", True, f"{_shown(folder)}"),
                    Check("drafts lock", False, f"{_shown(lock)} {why}, so no draft can be saved",
                          f"remove {_shown(lock)} (agentcli makes a new one)")]
    store = open_drafts(url=None, folder=folder, create_parents=is_default_drafts_dir(folder))
    out = []
    for p in store.probe():
        detail = p.detail
        if p.name == "drafts folder" and source:
            detail += f" (from {source})"
        out.append(Check(p.name, p.ok, detail, None if p.ok else (p.fix or _drafts_fix(folder))))
    return out


def drafts_check(settings: Any) -> Check:
    """The drafts checks as one: the first that fails, else the folder."""
    checks = drafts_checks(settings)
    bad = [c for c in checks if not c.ok]
    name = "drafts queue" if settings.drafts_url else "drafts folder"
    if bad:
        c = bad[0]
        return Check(name, False, c.detail if c.name == name else f"{c.name}: {c.detail}", c.fix)
    return Check(name, True, "; ".join(c.detail for c in checks))


def lock_problem(lock: Path) -> str | None:
    """Why the drafts folder's ``.lock`` cannot be taken, or None (absent is fine: made then).
    The draft store opens it without following a link and needs a regular file."""
    try:
        st = os.lstat(lock)
    except FileNotFoundError:
        return None
    except OSError as e:
        return f"cannot be read ({e.strerror})"
    if stat.S_ISLNK(st.st_mode):
        return "is a symbolic link"
    if not stat.S_ISREG(st.st_mode):
        kind = ("a folder" if stat.S_ISDIR(st.st_mode) else "a FIFO" if stat.S_ISFIFO(st.st_mode)
                else "a socket" if stat.S_ISSOCK(st.st_mode) else "a device")
        return f"is {kind}, not a file"
    return None  # whether it can be opened and taken: DraftStore.probe (it names the owner)


def sessions_check() -> Check:
    try:
        d = sessions_dir()
    except AgentcliError as e:
        return Check("sessions folder", False, e.message, "set AGENTCLI_HOME to a writable folder")
    return folder_check("sessions folder", d, "set AGENTCLI_HOME to a writable folder")


def _bad_key(env: str, v: str) -> Check | None:
    why = key_problem(v)
    if why is None:
        return None
    return Check("provider key", False, f"{env} {why}",
                 "set it again without the spaces or line breaks around the key"
                 if "spaces" in why else f"set {env} again, typed or pasted as plain text")


def key_check(settings: Any, chosen: bool = True) -> Check:
    p = settings.provider
    env = os.environ
    if p == "offline":
        v = env.get("ANTHROPIC_API_KEY")
        if not chosen and v is not None and not v.strip():
            return Check("provider key", False, "ANTHROPIC_API_KEY is set but empty (so the offline "
                         "workflow would answer instead of the model)",
                         "set it to your key, or unset it, or pass --provider offline")
        return Check("provider key", True, "offline workflow: no key needed")
    if p == "anthropic":
        v = env.get("ANTHROPIC_API_KEY")
        if v is None and env.get("ANTHROPIC_AUTH_TOKEN", "").strip():
            v = env["ANTHROPIC_AUTH_TOKEN"]
        if v is None:
            return Check("provider key", False, "ANTHROPIC_API_KEY is not set",
                         "set it to your Anthropic API key, or use --provider offline")
        if not v.strip():
            return Check("provider key", False, "ANTHROPIC_API_KEY is set but empty",
                         "set it to your Anthropic API key, or use --provider offline")
        bad = _bad_key("ANTHROPIC_API_KEY" if env.get("ANTHROPIC_API_KEY") is not None
                       else "ANTHROPIC_AUTH_TOKEN", v)
        if bad is not None:
            return bad
        return Check("provider key", True, "ANTHROPIC_API_KEY is set")
    v = env.get("OPENAI_API_KEY")
    base = env.get("OPENAI_BASE_URL", "").strip()
    bad = _bad_key("OPENAI_API_KEY", v) if v is not None and v.strip() else None
    if bad is not None:
        return bad
    if v is not None and not v.strip() and not base:
        return Check("provider key", False, "OPENAI_API_KEY is set but empty and OPENAI_BASE_URL is not set",
                     "set OPENAI_API_KEY (api.openai.com) or OPENAI_BASE_URL (a local server)")
    if not base and v is None:
        return Check("provider key", False, "neither OPENAI_API_KEY nor OPENAI_BASE_URL is set",
                     "set OPENAI_API_KEY (api.openai.com) or OPENAI_BASE_URL (a local server)")
    return Check("provider key", True, "OPENAI_API_KEY is set" if v and v.strip()
                 else "no key (a local server at OPENAI_BASE_URL needs none)")


ENDPOINTS = {"anthropic": ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "https://api.anthropic.com"),
             "openai": ("OPENAI_API_KEY", "OPENAI_BASE_URL", "http://localhost:11434/v1")}


def endpoint_check(settings: Any) -> Check:
    """The provider's base URL and the proxy variables can be used by an HTTP client."""
    if settings.provider not in ENDPOINTS:
        return Check("provider address", True, "offline workflow: no server")
    key_env, url_env, example = ENDPOINTS[settings.provider]
    problems = endpoint_problems(key_env, None, url_env, example)  # the key: key_check's
    if problems:
        what, why, fix = problems[0]
        return Check("provider address", False, f"{what} {why}", fix)
    url = os.environ.get(url_env)
    return Check("provider address", True, f"{url_env} is a usable URL" if url
                 else f"the default ({example if settings.provider == 'anthropic' else 'api.openai.com'})")


def local_checks(settings: Any, *, chosen: bool = True, drafts: bool = True) -> list[Check]:
    out = [drafts_check(settings)] if drafts else []
    out += [sessions_check(), key_check(settings, chosen), endpoint_check(settings)]
    return out


def require(settings: Any, *, chosen: bool = True, drafts: bool = True) -> None:
    """Stop before the first model call when the run cannot succeed (ConfigError, exit 3)."""
    for c in local_checks(settings, chosen=chosen, drafts=drafts):
        if not c.ok:
            raise ConfigError(c.line())


def database_check(settings: Any) -> tuple[Check, Any]:
    """(check, the open store or None); the caller closes the store."""

    try:
        store = open_store(settings.db, pool_size=1)
    except AgentcliError as e:
        return Check("database", False, e.message, None), None
    return Check("database", True, f"{getattr(store, 'description', '?')} opens and has the schema"), store


def provider_check(settings: Any) -> tuple[Check, Any]:
    try:
        prov = make_provider(settings, default_registry(), SYSTEM_PROMPT)
    except AgentcliError as e:
        return Check("provider", False, e.message, None), None
    return Check("provider", True, f"{prov.name}" + (f" / {prov.model}" if prov.model else "")), prov


async def api_check(settings: Any, provider: Any) -> Check:
    """The model API answers: the provider's ``check_api`` (GET /v1/models: lists models; no
    tokens, no cost), within ``--request-timeout`` (at most 30 s)."""

    name = "model API"
    timeout = min(float(settings.request_timeout), 30.0)
    try:
        said = await asyncio.wait_for(provider.check_api(), timeout)
    except asyncio.TimeoutError:
        return Check(name, False, f"the models list did not answer within {timeout:g} s",
                     "check the network, the base URL, or raise --request-timeout")
    except ModelAPIError as e:
        return Check(name, False, e.message, None)
    return Check(name, True, said)


def preflight(settings: Any, opts: Any) -> None:
    """Check before spending: a failing check is exit 3, one line (ask, chat, batch, eval)."""
    require(settings, chosen=provider_chosen(opts))

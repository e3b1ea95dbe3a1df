"""Settings: flags win over environment variables, which win over ``agentcli.toml``.

The config file is looked up in the working directory, then in the user config directory
(platformdirs). Only cheap, standard-library work happens here: ``agentcli --help`` imports it.
"""

from __future__ import annotations

import os
import sys
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .errors import ConfigError, UsageError

APP = "agentcli"
DEFAULT_ANTHROPIC_MODEL = "claude-sonnet-5-5"
PROVIDERS = ("anthropic", "openai", "offline")
MODES = ("agent", "workflow")  # agent: the model decides every step; workflow: see agentcli.workflow


def home_dir() -> Path | None:
    h = os.environ.get("AGENTCLI_HOME")
    return Path(h).expanduser() if h else None


def data_dir() -> Path:
    """Where the demo database lives (``AGENTCLI_HOME`` or the platform's user data dir)."""
    h = home_dir()
    if h:
        return h
    import platformdirs

    return Path(platformdirs.user_data_dir(APP, appauthor=False))


def state_dir() -> Path:
    """Where sessions and REPL history live (``AGENTCLI_HOME`` or the user state dir)."""
    h = home_dir()
    if h:
        return h
    import platformdirs

    return Path(platformdirs.user_state_dir(APP, appauthor=False))


def sessions_dir() -> Path:
    return state_dir() / "sessions"


def default_db_path() -> Path:
    return data_dir() / "orders.sqlite3"


def config_file_candidates() -> list[Path]:
    out = [Path.cwd() / "agentcli.toml"]
    if home_dir():
        out.append(home_dir() / "agentcli.toml")
    try:
        import platformdirs

        out.append(Path(platformdirs.user_config_dir(APP, appauthor=False)) / "agentcli.toml")
    except Exception:  # pragma: no cover - platformdirs is a hard dependency
        pass
    return out


# The keys of agentcli.toml and the types their values must have.
CONFIG_KEYS: dict[str, tuple[type, ...]] = {
    "provider": (str,), "model": (str,), "db": (str,), "drafts_dir": (str,), "customer": (str,),
    "max_turns": (int,), "retries": (int,), "max_tokens": (int,), "tool_timeout": (int, float),
    "request_timeout": (int, float), "prices": (dict,), "reviewer": (str,), "mode": (str,),
}


class ConfigValues(dict):
    """The settings of ``agentcli.toml``, and the file they came from (for messages)."""
    path: Path | None = None


def load_config_file() -> ConfigValues:
    for path in config_file_candidates():
        try:
            found = path.is_file()
        except OSError as e:  # a folder on the way that this user may not enter
            raise ConfigError(f"cannot look for {path} ({e.strerror or e}); run agentcli from a "
                              "folder you can read") from None
        if found:
            try:
                with path.open("rb") as f:
                    data = tomllib.load(f)
            except (OSError, ValueError) as e:  # TOMLDecodeError, or bytes that are not UTF-8
                from .redact import clean_for_terminal

                raise ConfigError(f"cannot read {path}: {clean_for_terminal(str(e))[:200]}; fix or "
                                  "remove the file") from None
            except RecursionError:  # tables or arrays nested thousands deep
                raise ConfigError(f"cannot read {path}: it is nested too deeply; fix or remove "
                                  "the file") from None
            section = data.get("agentcli", data)
            values = ConfigValues(_check_config(section if isinstance(section, dict) else {}, path))
            values.path = path
            return values
    return ConfigValues()


def _check_config(cfg: dict[str, Any], path: Path) -> dict[str, Any]:
    """Wrong types are configuration errors; unknown keys (a typo such as ``max_turn``) a warning."""
    for key, value in cfg.items():
        kinds = CONFIG_KEYS.get(key)
        if kinds is None:
            sys.stderr.write(f"agentcli: warning: {path}: unknown setting {key!r} is ignored "
                             f"(known: {', '.join(CONFIG_KEYS)})\n")
            continue
        if isinstance(value, bool) or not isinstance(value, kinds):
            want = {(str,): "text", (dict,): "a table", (int,): "a whole number"}.get(kinds, "a number")
            raise ConfigError(f"{path}: {key} must be {want}, got {_shown(value)}; fix or remove the setting")
    return cfg


@dataclass
class Settings:
    provider: str = "offline"
    model: str | None = None
    db: str | None = None
    drafts_dir: Path = field(default_factory=lambda: Path("drafts"))
    customer: str | None = None
    max_turns: int = 10
    tool_timeout: float = 30.0
    request_timeout: float = 120.0
    retries: int = 3
    stream: bool = True
    json: bool = False
    quiet: bool = False
    max_tokens: int = 2048
    prices: dict[str, Any] = field(default_factory=dict)
    mode: str = "agent"

    def with_(self, **kw: Any) -> "Settings":
        return replace(self, **kw)


def _shown(value: Any) -> str:
    from .redact import one_line

    return one_line(repr(value), 80)


def _pick(flag: Any, env_name: str | None, cfg: dict[str, Any], key: str) -> tuple[Any, str]:
    if flag is not None:
        return flag, "flag"
    if env_name and os.environ.get(env_name):
        return os.environ[env_name], "env"
    if key in cfg:
        return cfg[key], "config"
    return None, "default"


def _bad(source: str, key: str, env_name: str | None, cfg: dict[str, Any], why: str) -> Exception:
    """A bad value, blamed on where it came from: a flag or environment variable is a usage
    error (exit 2); agentcli.toml is a configuration error naming the file and the key (exit 3)."""
    if source == "config":
        where = getattr(cfg, "path", None) or "agentcli.toml"
        return ConfigError(f"{where}: {key} {why}; fix or remove the setting")
    flag = "--" + key.replace("_", "-")
    name = f"{env_name} ({flag})" if source == "env" and env_name else flag
    return UsageError(f"{name} {why}")


def _number(value: Any, source: str, key: str, env_name: str | None, cfg: dict[str, Any],
            kind: type, minimum: float) -> Any:
    try:
        v = kind(value)
        ok = v == v and v not in (float("inf"), float("-inf"))  # nan compares unequal to itself
    except (TypeError, ValueError, OverflowError):  # OverflowError: int(inf)
        ok = False
    if not ok:
        raise _bad(source, key, env_name, cfg, f"must be a finite number, got {_shown(value)}")
    if v < minimum:
        raise _bad(source, key, env_name, cfg, f"must be at least {minimum}, got {_shown(value)}")
    return v


def reviewer_setting() -> str | None:
    """Who reviews, as configured: AGENTCLI_REVIEWER > ``reviewer`` in agentcli.toml (None: the
    caller falls back to the login name, ``drafts.resolve_reviewer``)."""
    value, _ = _pick(None, "AGENTCLI_REVIEWER", load_config_file(), "reviewer")
    return value if isinstance(value, str) and value.strip() else None


def resolve_drafts_dir(flag: str | Path | None = None, cfg: dict[str, Any] | None = None) -> Path:
    """The drafts folder: flag > AGENTCLI_DRAFTS_DIR > agentcli.toml > ./drafts. The review
    commands need only this one setting, so a bad model setting does not stop them."""
    if cfg is None:
        cfg = load_config_file()
    dd, _ = _pick(None if flag is None else str(flag), "AGENTCLI_DRAFTS_DIR", cfg, "drafts_dir")
    return Path(dd).expanduser() if dd else Path("drafts")


def resolve(
    *,
    provider: str | None = None,
    model: str | None = None,
    db: str | None = None,
    drafts_dir: str | Path | None = None,
    customer: str | None = None,
    max_turns: int | None = None,
    tool_timeout: float | None = None,
    request_timeout: float | None = None,
    retries: int | None = None,
    max_tokens: int | None = None,
    stream: bool = True,
    json: bool = False,
    quiet: bool = False,
    mode: str | None = None,
) -> Settings:
    cfg = load_config_file()
    s = Settings(stream=stream, json=json, quiet=quiet)

    p, src = _pick(provider, "AGENTCLI_PROVIDER", cfg, "provider")
    if p is None:
        if "ANTHROPIC_API_KEY" in os.environ and not os.environ["ANTHROPIC_API_KEY"].strip():
            # Set but empty (``ANTHROPIC_API_KEY=`` in a .env or a CI secret that did not
            # resolve): the person meant to use the model, so falling back to the offline
            # workflow would answer with rules and exit 0. A configuration error instead.
            raise ConfigError("ANTHROPIC_API_KEY is set but empty; put the key in it, unset it "
                              "for the offline workflow, or pass --provider offline")
        if os.environ.get("ANTHROPIC_API_KEY"):
            p = "anthropic"
        elif os.environ.get("OPENAI_BASE_URL"):
            p = "openai"
        else:
            p = "offline"
    p = str(p).strip().lower()
    if p not in PROVIDERS:
        raise _bad(src, "provider", "AGENTCLI_PROVIDER", cfg,
                   f"names an unknown provider {_shown(p)}: choose one of {', '.join(PROVIDERS)}")
    s.provider = p

    m, _ = _pick(model, "AGENTCLI_MODEL", cfg, "model")
    if m is None and p == "anthropic":
        m = DEFAULT_ANTHROPIC_MODEL
    if m is None and p == "offline":
        m = "offline-rules-v1"
    s.model = m

    d, _ = _pick(db, "AGENTCLI_DB", cfg, "db")
    s.db = str(d) if d else None

    s.drafts_dir = resolve_drafts_dir(drafts_dir, cfg)

    c, src = _pick(customer, "AGENTCLI_CUSTOMER", cfg, "customer")
    if c is None and customer is None and os.environ.get("AGENTCLI_CUSTOMER") is not None:
        c, src = os.environ["AGENTCLI_CUSTOMER"], "env"  # set but blank: refused, never "no scope"
    if c is not None:
        from .vocab import customer_address

        try:
            s.customer = customer_address(c)
        except ValueError as e:
            raise _bad(src, "customer", "AGENTCLI_CUSTOMER", cfg, str(e)) from None

    for key, flag, env_name, kind, minimum in (
            ("max_turns", max_turns, None, int, 1), ("tool_timeout", tool_timeout, None, float, 0.001),
            ("request_timeout", request_timeout, "AGENTCLI_REQUEST_TIMEOUT", float, 0.001),
            ("retries", retries, "AGENTCLI_RETRIES", int, 0),
            ("max_tokens", max_tokens, "AGENTCLI_MAX_TOKENS", int, 1)):
        value, src = _pick(flag, env_name, cfg, key)
        if value is not None:
            setattr(s, key, _number(value, src, key, env_name, cfg, kind, minimum))
    md, src = _pick(mode, "AGENTCLI_MODE", cfg, "mode")
    if md is not None:
        md = str(md).strip().lower()
        if md not in MODES:
            raise _bad(src, "mode", "AGENTCLI_MODE", cfg,
                       f"names an unknown mode {_shown(md)}: choose {' or '.join(MODES)}")
        s.mode = md
    if isinstance(cfg.get("prices"), dict):
        s.prices = cfg["prices"]
    return s


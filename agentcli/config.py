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
    "max_turns": (int,), "retries": (int,), "tool_timeout": (int, float),
    "request_timeout": (int, float), "prices": (dict,),
}


def load_config_file() -> dict[str, Any]:
    for path in config_file_candidates():
        if path.is_file():
            try:
                with path.open("rb") as f:
                    data = tomllib.load(f)
            except (OSError, ValueError) as e:  # TOMLDecodeError, or bytes that are not UTF-8
                raise ConfigError(f"cannot read {path}: {e}; fix or remove the file") from None
            section = data.get("agentcli", data)
            return _check_config(section if isinstance(section, dict) else {}, path)
    return {}


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
            raise ConfigError(f"{path}: {key} must be {want}, got {value!r}; fix or remove the setting")
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

    def with_(self, **kw: Any) -> "Settings":
        return replace(self, **kw)


def _pick(flag: Any, env_name: str | None, cfg: dict[str, Any], key: str) -> tuple[Any, str]:
    if flag is not None:
        return flag, "flag"
    if env_name and os.environ.get(env_name):
        return os.environ[env_name], "env"
    if key in cfg:
        return cfg[key], "config"
    return None, "default"


def _number(value: Any, name: str, kind: type, minimum: float) -> Any:
    try:
        v = kind(value)
    except (TypeError, ValueError, OverflowError):  # OverflowError: int(inf)
        raise UsageError(f"{name} must be a finite number, got {value!r}") from None
    if v != v or v in (float("inf"), float("-inf")):  # nan compares unequal to itself
        raise UsageError(f"{name} must be a finite number, got {value!r}")
    if v < minimum:
        raise UsageError(f"{name} must be at least {minimum}, got {value!r}")
    return v


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
    stream: bool = True,
    json: bool = False,
    quiet: bool = False,
) -> Settings:
    cfg = load_config_file()
    s = Settings(stream=stream, json=json, quiet=quiet)

    p, _ = _pick(provider, "AGENTCLI_PROVIDER", cfg, "provider")
    if p is None:
        if os.environ.get("ANTHROPIC_API_KEY"):
            p = "anthropic"
        elif os.environ.get("OPENAI_BASE_URL"):
            p = "openai"
        else:
            p = "offline"
    p = str(p).strip().lower()
    if p not in PROVIDERS:
        raise UsageError(f"unknown provider {p!r}: choose one of {', '.join(PROVIDERS)}")
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

    c, _ = _pick(customer, "AGENTCLI_CUSTOMER", cfg, "customer")
    s.customer = str(c).strip() if c else None

    mt, _ = _pick(max_turns, None, cfg, "max_turns")
    if mt is not None:
        s.max_turns = _number(mt, "--max-turns", int, 1)
    tt, _ = _pick(tool_timeout, None, cfg, "tool_timeout")
    if tt is not None:
        s.tool_timeout = _number(tt, "--tool-timeout", float, 0.001)
    rt, _ = _pick(request_timeout, "AGENTCLI_REQUEST_TIMEOUT", cfg, "request_timeout")
    if rt is not None:
        s.request_timeout = _number(rt, "--request-timeout", float, 0.001)
    rr, _ = _pick(retries, "AGENTCLI_RETRIES", cfg, "retries")
    if rr is not None:
        s.retries = _number(rr, "--retries", int, 0)
    if isinstance(cfg.get("prices"), dict):
        s.prices = cfg["prices"]
    return s


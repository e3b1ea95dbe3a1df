"""Settings, each declared once in ``SETTINGS``: flags win over environment variables, which win
over ``agentcli.toml``, which wins over the default.

One ``Setting`` says everything about a setting: its name (the ``Settings`` field and the
``agentcli.toml`` key), its kind (how a value is checked and parsed), its flags and the commands
that take them, its environment variable, its default and the help text. Everything else is
derived from the table: the ``Settings`` dataclass, ``resolve``'s keywords, the environment
lookups, the config file's keys and their type checks, and (in ``cli/options.py``) the typer
options, ``ModelOptions`` and the defaults shown in ``--help``.

A bad value is blamed on where it came from: a flag or an environment variable is a usage error
(exit 2) naming it; ``agentcli.toml`` is a configuration error (exit 3) naming the file and the
key. The config file is looked up in the working directory and its parents (up to a repository
root, a mount point or ``/``), then in ``AGENTCLI_HOME``, then in the user config directory
(platformdirs); it is read and checked once per process (``load_config_file``), so an unknown
key is warned about once. A relative path in it (``drafts_dir = "drafts"``) is relative to the
file, so a team's config names the team's folder wherever a command runs.

Only cheap, standard-library work happens here: ``agentcli --help`` imports it.
"""

from __future__ import annotations

import dataclasses
import errno
import os
import re
import stat
import sys
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from types import MappingProxyType
from typing import Any, Callable, Mapping

from .errors import ConfigError, UsageError
from .redact import add_secret, clean_for_terminal, one_line
from .vocab import customer_address

APP = "agentcli"
DEFAULT_ANTHROPIC_MODEL = "claude-sonnet-5-5"
OFFLINE_MODEL = "offline-rules-v1"
PROVIDERS = ("anthropic", "openai", "offline")
MODES = ("agent", "workflow")  # agent: the model decides every step; workflow: see agentcli.workflow
CONFIG_NAME = "agentcli.toml"
MAX_CONFIG_BYTES = 1 << 20  # a config file is a few lines; a huge one is a mistake or an attack
MAX_WARNINGS = 5  # unknown keys named one by one; more are counted
MAX_RETRIES = 10  # --retries at most (providers.retry: each retry waits longer, up to 30 s)


# =========================================================================== paths

def home_dir() -> Path | None:
    h = os.environ.get("AGENTCLI_HOME")
    return Path(h).expanduser() if h else None


def _platform_dir(kind: str) -> Path:
    """The platform's user folder of ``kind`` for agentcli (platformdirs: only when
    ``AGENTCLI_HOME`` does not decide it)."""
    import platformdirs

    return Path(getattr(platformdirs, kind)(APP, appauthor=False))


def data_dir() -> Path:
    """Where the demo database lives (``AGENTCLI_HOME`` or the platform's user data dir)."""
    return home_dir() or _platform_dir("user_data_dir")


def state_dir() -> Path:
    """Where sessions and REPL history live (``AGENTCLI_HOME`` or the user state dir)."""
    return home_dir() or _platform_dir("user_state_dir")


def sessions_dir() -> Path:
    return state_dir() / "sessions"


def default_db_path() -> Path:
    return data_dir() / "orders.sqlite3"


def default_drafts_dir() -> Path:
    """Where drafts go when nothing names a folder: one folder per person, whatever the working
    directory (``AGENTCLI_HOME/drafts``, else the platform's user data folder)."""
    return data_dir() / "drafts"


def _upwards(start: Path) -> list[Path]:
    """``start`` and its parents, up to the filesystem root, the root of the repository it is
    in (a folder holding ``.git``), or the last folder before another filesystem (a mount)."""
    out: list[Path] = []
    here = start
    try:
        dev = os.stat(here).st_dev
    except OSError:
        return [start]
    while True:
        out.append(here)
        if os.path.lexists(here / ".git") or here.parent == here:
            return out
        try:
            if os.stat(here.parent).st_dev != dev:
                return out
        except OSError:
            return out
        here = here.parent


def config_file_candidates() -> list[Path]:
    """Where ``agentcli.toml`` is looked for, in order: the working directory and its parents
    (up to a repository root, a mount point or ``/``), ``AGENTCLI_HOME``, the user config
    folder. The first found is the one used."""
    out = []
    try:
        out += [d / CONFIG_NAME for d in _upwards(Path.cwd())]
    except OSError:  # the working directory was deleted under us: nothing to find there
        pass
    if home_dir():
        out.append(home_dir() / CONFIG_NAME)
    out.append(_platform_dir("user_config_dir") / CONFIG_NAME)
    return out


# =========================================================================== kinds of value

class _Invalid(Exception):
    """A value a setting cannot take; the message says why (``must be at least 1, got 0``)."""


_UNSET = object()  # a blank value: the setting keeps its default


# What a value of each type is called when the value itself is not shown (TOML's types).
_TYPE_WORDS = ((bool, "true or false"), (int, "a whole number"), (float, "a number"),
               (str, "text"), (dict, "a table"), ((list, tuple), "an array"))


def _type_of(value: Any) -> str:
    """What ``value`` is, in words, without showing it ("an array", "a whole number")."""
    return next((w for t, w in _TYPE_WORDS if isinstance(value, t)), "a date or time")


def _shown(value: Any, s: "Setting | None" = None) -> str:
    """A value as a message may quote it: redacted and bounded (``one_line``). A secret
    setting's value (a token, a database URL) is never quoted, nor is what a table or an array
    holds (a table under any key may be ``{token = "..."}``): their type is said instead."""
    if (s is not None and s.secret) or isinstance(value, (dict, list, tuple)):
        return _type_of(value)
    return one_line(repr(value), 80)


def _either(choices: tuple[str, ...]) -> str:
    return ", ".join(choices[:-1]) + " or " + choices[-1] if len(choices) > 1 else choices[0]


# C0 controls and DEL: no name, path, URL or token holds one. A NUL ended the run as an
# "internal error" at the first open(); an escape or a line break would reach messages and logs.
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")
NAME_MAX, PATH_MAX = 255, 4096  # bytes of one name of a path, and of a whole path (Linux, macOS)


def _plain(v: str) -> str:
    """``v`` when it holds no control character; said by its code point and place, never shown
    (it may be a token)."""
    m = _CONTROL_RE.search(v)
    if m:
        raise _Invalid(f"holds a control character (U+{ord(m.group()):04X} at character "
                       f"{m.start() + 1})")
    return v


def _text(s: "Setting", v: Any) -> Any:
    v = str(v).strip()  # " postgresql://..." pasted with a space is the URL, not a path named so
    return _plain(v) if v else _UNSET


def _path(s: "Setting", v: Any) -> Any:
    if not str(v).strip():
        return _UNSET
    p = Path(_plain(str(v))).expanduser()
    try:
        names = [len(os.fsencode(part)) for part in p.parts]
        total = len(os.fsencode(str(p)))
    except UnicodeEncodeError:  # not a name this system can spell
        raise _Invalid("is not a path this system can use (its characters cannot be encoded)") from None
    if max(names, default=0) > NAME_MAX:
        raise _Invalid(f"has a name of {max(names)} bytes; a file system allows at most {NAME_MAX}")
    if total > PATH_MAX:
        raise _Invalid(f"is {total} bytes long; a path may have at most {PATH_MAX}")
    return p


def _choice(s: "Setting", v: Any) -> str:
    v = str(v).strip().lower()
    if v not in s.choices:
        raise _Invalid(f"names an unknown {s.name} {_shown(v, s)}: choose {_either(s.choices)}")
    return v


def _number(kind: type, described: str) -> Callable[["Setting", Any], Any]:
    def parse(s: "Setting", value: Any) -> Any:
        try:
            v = kind(value)
            ok = v == v and v not in (float("inf"), float("-inf"))  # nan compares unequal to itself
            ok = ok and not (kind is int and isinstance(value, float))  # int(2.7) would be 2
        except (TypeError, ValueError, OverflowError):  # OverflowError: int(inf)
            ok = False
        if not ok:
            raise _Invalid(f"must be {described}, got {_shown(value, s)}")
        if s.minimum is not None and v < s.minimum:
            raise _Invalid(f"must be at least {s.minimum}, got {_shown(value, s)}")
        if s.maximum is not None and v > s.maximum:
            raise _Invalid(f"must be at most {s.maximum}, got {_shown(value, s)}")
        return v

    return parse


def _email(s: "Setting", v: Any) -> str:
    try:
        return customer_address(v)
    except ValueError as e:
        raise _Invalid(str(e)) from None


def _postgres_url(s: "Setting", v: Any) -> Any:
    """A ``postgresql://`` URL. The value is never echoed: it may hold a password."""
    v = str(v).strip()
    if not v:
        return _UNSET
    _plain(v)
    scheme = v.split("://", 1)[0].lower() if "://" in v else ""
    if scheme not in ("postgresql", "postgres"):
        said = f" (it starts with {scheme}://)" if scheme.isalnum() and len(scheme) <= 20 else ""
        raise _Invalid(f"must be a postgresql://... URL{said}")
    return v


_DURATION_PART = re.compile(r"\s*(\d{1,12}(?:\.\d{1,6})?)\s*([wdhms])")
_UNITS = {"w": "weeks", "d": "days", "h": "hours", "m": "minutes", "s": "seconds"}


def parse_duration(text: str) -> timedelta:
    """``4h``, ``30m``, ``2d``, ``1w``, ``90s`` or a sum such as ``1h30m``; ValueError otherwise."""
    t = text.strip().lower()
    parts, pos = [], 0
    while pos < len(t):
        m = _DURATION_PART.match(t, pos)
        if not m:
            raise ValueError(text)
        parts.append(m)
        pos = m.end()
    if not parts:
        raise ValueError(text)
    try:
        total = sum((timedelta(**{_UNITS[m.group(2)]: float(m.group(1))}) for m in parts), timedelta())
    except OverflowError:
        raise ValueError(text) from None
    return total


def _duration(s: "Setting", v: Any) -> Any:
    if not str(v).strip():
        return _UNSET
    try:
        d = parse_duration(str(v))
    except ValueError:
        d = timedelta(0)
    if d <= timedelta(0):
        raise _Invalid(f"must be a duration such as 4h, 30m or 2d, got {_shown(v, s)}")
    return d


def _table(s: "Setting", v: Any) -> dict[str, Any]:
    return dict(v)


PRICE_KEYS = ("input", "output", "cache_read", "cache_write")  # US dollars per million tokens


def _prices(s: "Setting", v: Any) -> dict[str, dict[str, float]]:
    """``[prices."MODEL"]`` tables of ``PRICE_KEYS``, each a finite number of at least 0: a
    price that is text or negative gave no estimate without a word. (An unknown key is warned
    about once, by ``_check_config``.)"""
    out: dict[str, dict[str, float]] = {}
    for model, table in dict(v).items():
        of = f"of {_shown(model)}"
        if not isinstance(table, dict):
            raise _Invalid(f"{of} must be a table of {_either(PRICE_KEYS)}, got {_shown(table)}")
        prices: dict[str, float] = {}
        for key, x in table.items():
            if key not in PRICE_KEYS:
                continue
            ok = isinstance(x, (int, float)) and not isinstance(x, bool) and 0 <= x < float("inf")
            if not ok:  # (nan fails 0 <= x)
                raise _Invalid(f"{of}: {key} must be a number of at least 0 (US dollars per "
                               f"million tokens), got {_shown(x)}")
            prices[key] = float(x)
        out[str(model)] = prices
    return out


def _switch(s: "Setting", v: Any) -> bool:
    return bool(v)


@dataclass(frozen=True)
class Kind:
    """What values a setting takes: ``py`` is what a flag's value is converted to (by typer),
    ``toml`` the types ``agentcli.toml`` may hold (``described`` in messages), ``parse`` checks a
    value from any source and returns the setting's value (raising ``_Invalid``)."""
    name: str
    py: type
    toml: tuple[type, ...]
    described: str
    parse: Callable[["Setting", Any], Any]


TEXT = Kind("text", str, (str,), "text", _text)
PATH = Kind("path", Path, (str,), "text", _path)
CHOICE = Kind("choice", str, (str,), "text", _choice)
INT = Kind("int", int, (int,), "a whole number", _number(int, "a whole number"))
NUMBER = Kind("number", float, (int, float), "a number", _number(float, "a finite number"))
EMAIL = Kind("email", str, (str,), "text", _email)
POSTGRES_URL = Kind("postgres_url", str, (str,), "text", _postgres_url)
DURATION = Kind("duration", str, (str,), 'text such as "4h"', _duration)
TABLE = Kind("table", dict, (dict,), "a table", _table)
PRICES = Kind("prices", dict, (dict,), "a table", _prices)
SWITCH = Kind("switch", bool, (), "", _switch)


# =========================================================================== the table

# The groups of commands a setting's flag is on (``Setting.commands``):
MODEL = "model"    # @model_options: the bare command, chat, ask, batch, eval, doctor
DRAFTS = "drafts"  # drafts list / show / edit / approve / reject, review
ORDERS = "orders"  # orders show
LOG = "log"        # log list / show
MCP = "mcp"        # mcp
BATCH = "batch"    # batch (its own options beside the model's)
VIAS = ("live", "batches")  # batch --via
HELPDESK = "helpdesk"  # drafts export / push
HELPDESK_NAMES = (("zendesk", "Zendesk", "https://SUBDOMAIN.zendesk.com"),
                  ("front", "Front", "https://api2.frontapp.com"),
                  ("helpscout", "Help Scout", "https://api.helpscout.net"),
                  ("freshdesk", "Freshdesk", "https://DOMAIN.freshdesk.com"))


@dataclass(frozen=True)
class Setting:
    name: str                       # the Settings field and the agentcli.toml key
    kind: Kind
    help: str                       # for --help; the environment variable and default are added
    default: Any = None
    flags: tuple[str, ...] = ()     # ("-q", "--quiet"); a flag named but on no command is kept
    commands: frozenset[str] = frozenset()  # the groups of commands whose --help has the flag
    env: str | None = None
    toml: bool = True               # settable in agentcli.toml (under its name)
    minimum: float | None = None    # INT, NUMBER
    maximum: float | None = None    # INT, NUMBER
    choices: tuple[str, ...] = ()   # CHOICE
    metavar: str = "TEXT"
    default_help: str | None = None  # the default as --help says it, when not a plain value
    derive: Callable[[Mapping[str, Any]], Any] | None = None  # a default that depends on others
    empty_env_unset: bool = True    # an empty or blank variable is as if unset (False: a value)
    secret: bool = False            # may hold a password: kept out of repr()

    @property
    def flag(self) -> str | None:
        """The long flag, as messages name it."""
        return next((f for f in self.flags if f.startswith("--")), None)

    def shown_default(self) -> str | None:
        if self.default_help is not None:
            return self.default_help
        d = self.default
        if d is None or self.kind is SWITCH:
            return None
        if isinstance(d, Path):
            return str(d) if d.is_absolute() or str(d).startswith(".") else f"./{d}"
        if isinstance(d, float) and d.is_integer():
            return str(int(d))
        if isinstance(d, timedelta):
            return _shown_duration(d)
        return str(d)

    def help_text(self) -> str:
        """The help of the flag: the sentence, then the environment variable and the default."""
        notes = ([f"env {self.env}"] if self.env else []) + (
            [f"default {self.shown_default()}"] if self.shown_default() else [])
        return f"{self.help} [{'; '.join(notes)}]" if notes else self.help


def _shown_duration(d: timedelta) -> str:
    secs = int(d.total_seconds())
    for unit, size in (("w", 604800), ("d", 86400), ("h", 3600), ("m", 60)):
        if secs and secs % size == 0:
            return f"{secs // size}{unit}"
    return f"{secs}s"


def _default_provider(values: Mapping[str, Any]) -> str:
    if "ANTHROPIC_API_KEY" in os.environ and not os.environ["ANTHROPIC_API_KEY"].strip():
        # Set but empty (``ANTHROPIC_API_KEY=`` in a .env or a CI secret that did not resolve):
        # the person meant to use the model, so falling back to the offline workflow would
        # answer with rules and exit 0. A configuration error instead.
        raise ConfigError("ANTHROPIC_API_KEY is set but empty; put the key in it, unset it "
                          "for the offline workflow, or pass --provider offline")
    if os.environ.get("ANTHROPIC_API_KEY"):
        return "anthropic"
    if os.environ.get("OPENAI_BASE_URL"):
        return "openai"
    return "offline"


def _default_model(values: Mapping[str, Any]) -> str | None:
    return {"anthropic": DEFAULT_ANTHROPIC_MODEL, "offline": OFFLINE_MODEL}.get(values.get("provider"))


_MODEL_ETC = frozenset({MODEL})

SETTINGS: tuple[Setting, ...] = (
    Setting("provider", CHOICE, "anthropic, openai or offline", choices=PROVIDERS,
            flags=("--provider",), commands=_MODEL_ETC, env="AGENTCLI_PROVIDER", metavar="NAME",
            derive=_default_provider,
            default_help="anthropic with ANTHROPIC_API_KEY, else openai with OPENAI_BASE_URL, "
                         "else offline"),
    Setting("model", TEXT, "model name (required for openai)", flags=("--model",),
            commands=_MODEL_ETC, env="AGENTCLI_MODEL", metavar="NAME", derive=_default_model,
            default_help=f"{DEFAULT_ANTHROPIC_MODEL} for anthropic"),
    Setting("db", TEXT, "orders database: SQLite path, sqlite:///path or postgresql://...",
            flags=("--db",), commands=frozenset({MODEL, ORDERS, MCP}), env="AGENTCLI_DB", metavar="DB",
            default_help="the demo database", secret=True),
    Setting("drafts_dir", PATH, "the team's drafts folder (best set once, as drafts_dir in "
            "agentcli.toml)",
            flags=("--drafts-dir",), commands=frozenset({MODEL, DRAFTS, MCP}), env="AGENTCLI_DRAFTS_DIR",
            metavar="DIR", derive=lambda values: default_drafts_dir(),
            default_help="AGENTCLI_HOME/drafts"),
    # A PostgreSQL drafts queue shared by a team instead of a folder (``drafts.backends``).
    Setting("drafts_url", POSTGRES_URL, "a PostgreSQL drafts queue shared by a team "
            "(postgresql://...), instead of a folder", flags=("--drafts-url",),
            commands=frozenset({MODEL, DRAFTS, MCP}), env="AGENTCLI_DRAFTS_URL", metavar="URL", default_help="none (the folder)", secret=True),
    Setting("customer", EMAIL, "customer email this ticket is about; other customers' orders "
            "read as not found", flags=("--customer",), commands=frozenset({MODEL, ORDERS, MCP}),
            env="AGENTCLI_CUSTOMER", metavar="EMAIL",
            empty_env_unset=False),  # set but blank: refused, never "no scope"
    # Upper bounds: a value past them is a typo or an attack, not a wish (a max_tokens of 10**26
    # went to the API as it was, and its 400 came back as exit 4; a wait of 1e308 s is none).
    Setting("max_turns", INT, "model calls allowed per question", default=10, minimum=1,
            maximum=1000, flags=("--max-turns",), commands=_MODEL_ETC, metavar="N"),
    Setting("tool_timeout", NUMBER, "seconds one tool call may take", default=30.0, minimum=0.001,
            maximum=3600, flags=("--tool-timeout",), commands=frozenset({MODEL, MCP}), metavar="SECONDS"),
    Setting("request_timeout", NUMBER, "seconds a model request may wait for data", default=120.0,
            minimum=0.001, maximum=3600, flags=("--request-timeout",), commands=_MODEL_ETC,
            env="AGENTCLI_REQUEST_TIMEOUT", metavar="SECONDS"),
    Setting("retries", INT, f"retries of a failed model request, at most {MAX_RETRIES} (each "
            "waits longer, up to 30 s)", default=3, minimum=0, maximum=MAX_RETRIES,
            flags=("--retries",), commands=_MODEL_ETC, env="AGENTCLI_RETRIES", metavar="N"),
    Setting("max_tokens", INT, "output tokens the model may write per response", default=2048,
            minimum=1, maximum=1_000_000, flags=("--max-tokens",), commands=_MODEL_ETC,
            env="AGENTCLI_MAX_TOKENS", metavar="N"),
    Setting("mode", CHOICE, "agent (the model decides every step) or workflow (agentcli looks up "
            "the question's order codes first, then the model drafts and answers)",
            default="agent", choices=MODES, flags=("--mode",), commands=_MODEL_ETC,
            env="AGENTCLI_MODE", metavar="MODE"),
    Setting("json", SWITCH, "machine-readable output", default=False, flags=("--json",),
            commands=frozenset({MODEL, DRAFTS, ORDERS, LOG}), toml=False),
    Setting("quiet", SWITCH, "no tool trace, answer only", default=False, flags=("-q", "--quiet"),
            commands=_MODEL_ETC, toml=False),
    Setting("stream", SWITCH, "wait for whole responses instead of streaming", default=True,
            flags=("--no-stream",), commands=_MODEL_ETC, toml=False),
    Setting("via", CHOICE, "live (requests as they go, at the rate limit) or batches (the "
            "Anthropic Message Batches API: each round of the tool loop one batch, at half price; "
            "--resume re-attaches to batches already submitted)", default="live", choices=VIAS,
            flags=("--via",), commands=frozenset({BATCH}), env="AGENTCLI_VIA", metavar="HOW"),
    Setting("batch_deadline", DURATION, "--via batches: a batch still processing after this "
            "long is cancelled and its questions reported not finished (exit 4; --resume goes "
            "on)", default=timedelta(hours=24), default_help="24h",
            flags=("--batch-deadline",),
            commands=frozenset({BATCH}), env="AGENTCLI_BATCH_DEADLINE", metavar="DURATION"),
    Setting("live_tail", INT, "--via batches: when this many conversations or fewer are left "
            "open, they finish on the live API instead of waiting for another batch", default=0,
            minimum=0, flags=("--live-tail",), commands=frozenset({BATCH}),
            env="AGENTCLI_LIVE_TAIL", metavar="N"),
    Setting("repair", SWITCH, "do not send error-level grounding findings back to the model "
            "for one correction", default=True, flags=("--no-repair",), commands=_MODEL_ETC,
            toml=False),
    Setting("prices", PRICES, "prices per million tokens by model ([prices.NAME] input, output, "
            "cache_read, cache_write)", default=MappingProxyType({})),
    Setting("reviewer", TEXT, "who approves and rejects (default: the login name)",
            env="AGENTCLI_REVIEWER"),
    Setting("check_model", TEXT, "the model that reads claims out of answers and drafts for the "
            "grounding checks (a cheaper one of the same provider; off: the pattern checks only)",
            flags=("--check-model",), commands=_MODEL_ETC, env="AGENTCLI_CHECK_MODEL", metavar="NAME",
            default_help="--model"),
    # How long a draft may wait for review (``drafts stats``).
    Setting("review_target", DURATION, "how long a draft may wait for review",
            default=timedelta(hours=4)),
)
# `drafts push --to NAME`: each helpdesk's base URL and token (agentcli.toml or the environment;
# no flag: a token typed on a command line is in the shell's history and in `ps`).
SETTINGS += tuple(
    st for name, title, example in HELPDESK_NAMES for st in (
        Setting(f"{name}_url", TEXT, f"the {title} API's base URL, e.g. {example} (drafts push)",
                env=f"AGENTCLI_{name.upper()}_URL", metavar="URL"),
        Setting(f"{name}_token", TEXT, f"the {title} API token (drafts push); never shown",
                env=f"AGENTCLI_{name.upper()}_TOKEN", secret=True)))
SETTINGS += (
    Setting("helpdesk_timeout", NUMBER, "seconds a helpdesk request may wait for its answer",
            default=30.0, minimum=0.05, maximum=600, flags=("--timeout",),
            commands=frozenset({HELPDESK}), env="AGENTCLI_HELPDESK_TIMEOUT", metavar="SECONDS"),
)
SETTING: Mapping[str, Setting] = MappingProxyType({s.name: s for s in SETTINGS})
CONFIG_KEYS: tuple[str, ...] = tuple(s.name for s in SETTINGS if s.toml)


def _field(s: Setting) -> Any:
    if isinstance(s.default, Mapping):
        return field(default_factory=lambda: dict(s.default), repr=not s.secret)
    return field(default=s.default, repr=not s.secret)


def _with(self: Any, **kw: Any) -> Any:
    return dataclasses.replace(self, **kw)


Settings = dataclasses.make_dataclass(
    "Settings", [(s.name, Any, _field(s)) for s in SETTINGS], frozen=True,
    namespace={"__module__": __name__, "with_": _with,
               "__doc__": "The resolved value of every setting in SETTINGS (``resolve``); "
                          "``with_(**kw)`` gives a changed copy."})


# =========================================================================== agentcli.toml

@dataclass(frozen=True)
class ConfigFile:
    """The settings of ``agentcli.toml`` (read-only) and the file they came from (None: no file
    was found; ``doctor`` names it)."""
    path: Path | None
    values: Mapping[str, Any]


NO_CONFIG_FILE = ConfigFile(None, MappingProxyType({}))
# (path, bytes) of the file last read, and what reading it gave: a file is parsed, checked and
# warned about once per process however many times a run asks for it.
_loaded: tuple[tuple[str, bytes], ConfigFile | ConfigError] | None = None


def forget_config_file() -> None:
    """Forget the file read (the in-process test runner calls this before each run, as a new
    process would start without it)."""
    global _loaded
    _loaded = None


def load_config_file() -> ConfigFile:
    """The first ``agentcli.toml`` of ``config_file_candidates()``, parsed and checked (once per
    process for the same file and contents): wrong types are configuration errors, unknown keys
    a warning (with a suggestion) on stderr."""
    global _loaded
    found = _read_first_config_file()
    if found is None:
        return NO_CONFIG_FILE
    path, data = found
    key = (str(path), data)
    if _loaded is None or _loaded[0] != key:
        try:
            result: ConfigFile | ConfigError = _parse_config(path, data)
        except ConfigError as e:
            result = e
        _loaded = (key, result)
    result = _loaded[1]
    if isinstance(result, ConfigError):
        raise ConfigError(result.message)
    return result


def config_file_in_use() -> Path | None:
    """The ``agentcli.toml`` the settings come from, or None."""
    return load_config_file().path


_SKIP = (errno.ENOENT, errno.ENOTDIR, errno.ELOOP, errno.ENAMETOOLONG)


def _read_first_config_file() -> tuple[Path, bytes] | None:
    for path in config_file_candidates():
        try:
            st = os.stat(path)
        except OSError as e:
            if e.errno in _SKIP:
                continue
            # a folder on the way that this user may not enter
            raise ConfigError(f"cannot look for {path} ({e.strerror or e}); run agentcli from a "
                              "folder you can read") from None
        if not stat.S_ISREG(st.st_mode):  # a folder or a FIFO of that name is not a config file
            continue
        try:  # O_NONBLOCK: a FIFO swapped in after the stat must not hang the run
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
            try:
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    continue
                with os.fdopen(fd, "rb", closefd=False) as f:
                    data = f.read(MAX_CONFIG_BYTES + 1)
            finally:
                os.close(fd)
        except OSError as e:
            raise ConfigError(f"cannot read {path} ({e.strerror or e}); fix its permissions or "
                              "remove it") from None
        if len(data) > MAX_CONFIG_BYTES:
            raise ConfigError(f"{path} is larger than {MAX_CONFIG_BYTES >> 20} MB, too large for "
                              "a config file; fix or remove the file")
        return path, data
    return None


def _parse_config(path: Path, data: bytes) -> ConfigFile:
    import tomllib

    try:
        parsed = tomllib.loads(data.decode("utf-8"))
    except ValueError as e:  # TOMLDecodeError, or bytes that are not UTF-8

        raise ConfigError(f"cannot read {path}: {clean_for_terminal(str(e))[:200]}; fix or "
                          "remove the file") from None
    except RecursionError:  # tables or arrays nested thousands deep
        raise ConfigError(f"cannot read {path}: it is nested too deeply; fix or remove "
                          "the file") from None
    section = parsed.get("agentcli", parsed)
    if not isinstance(section, dict):  # `agentcli = 5`: every other setting would go unread
        raise ConfigError(f"{path}: agentcli must be the [agentcli] table of settings, got "
                          f"{_shown(section)}; fix or remove it")
    if section is not parsed:
        # with an [agentcli] table only its settings count: one written above it (drafts_dir
        # = the team's folder) was ignored without a word, and drafts went elsewhere
        outside = [k for k in parsed if k != "agentcli"]
        for key in outside[:MAX_WARNINGS]:
            sys.stderr.write(f"agentcli: warning: {clean_for_terminal(str(path))}: "
                             f"{_shown(key)} is outside the [agentcli] table and is ignored; "
                             "move it under [agentcli]\n")
    values = section
    _check_config(values, path)
    return ConfigFile(path, MappingProxyType(values))


def _check_config(cfg: dict[str, Any], path: Path) -> None:
    """Wrong types are configuration errors; an unknown key (a typo such as ``max_turn``) is
    warned about, with the known key it is closest to."""
    unknown = [key for key in cfg if key not in SETTING or not SETTING[key].toml]
    for key in unknown[:MAX_WARNINGS]:
        _warn_unknown(key, path)
    if len(unknown) > MAX_WARNINGS:

        sys.stderr.write(f"agentcli: warning: {clean_for_terminal(str(path))}: "
                         f"{len(unknown) - MAX_WARNINGS} more unknown settings are ignored\n")
    for key, value in cfg.items():
        s = SETTING.get(key)
        if s is not None and s.toml and (isinstance(value, bool) or not isinstance(value, s.kind.toml)):
            raise ConfigError(f"{path}: {key} must be {s.kind.described}, got {_shown(value, s)}; "
                              "fix or remove the setting")
    prices = cfg.get("prices")
    if isinstance(prices, dict):  # [prices."MODEL"] inptu = 3.0: that price was 0
        unknown_prices = [(m, k) for m, t in prices.items() if isinstance(t, dict)
                          for k in t if k not in PRICE_KEYS]
        for model, key in unknown_prices[:MAX_WARNINGS]:
            _warn_unknown(key, path, PRICE_KEYS, "price", f" of {_shown(model)}")


def _warn_unknown(key: str, path: Path, known: tuple[str, ...] = CONFIG_KEYS,
                  what: str = "setting", of: str = "") -> None:
    import difflib


    near = difflib.get_close_matches(key.lower(), known, n=1)
    hint = f"did you mean {near[0]}?" if near else f"known {what}s: {', '.join(known)}"
    sys.stderr.write(f"agentcli: warning: {clean_for_terminal(str(path))}: unknown {what} "
                     f"{_shown(key)}{of} is ignored; {hint}\n")


# =========================================================================== resolving

def _pick(s: Setting, flag: Any, cfg: ConfigFile) -> tuple[Any, str]:
    """The raw value of ``s`` and where it came from: flag, env, config or default."""
    if flag is not None:
        return flag, "flag"
    if s.env:
        raw = os.environ.get(s.env)
        if raw is not None and (raw.strip() or not s.empty_env_unset):  # "  ": as if unset
            return raw, "env"
    if s.toml and s.name in cfg.values:
        return cfg.values[s.name], "config"
    return None, "default"


def _bad(s: Setting, source: str, cfg: ConfigFile, why: str) -> Exception:
    """A bad value, blamed on where it came from: a flag or environment variable is a usage
    error (exit 2); agentcli.toml is a configuration error naming the file and the key (exit 3)."""
    if source == "config":
        return ConfigError(f"{cfg.path or CONFIG_NAME}: {s.name} {why}; fix or remove the setting")
    flag = s.flag if s.commands else None  # a flag no command has yet is not named
    if source == "env":
        name = f"{s.env} ({flag})" if flag else str(s.env)
    else:
        name = flag or s.name
    return UsageError(f"{name} {why}")


# setting -> (where its value came from, in words; the value) as last resolved: a message about
# the value in use (a drafts folder that cannot be created) names the place to fix it.
_SAID_WHERE: dict[str, tuple[str, Any]] = {}


def _where_words(s: Setting, source: str, cfg: ConfigFile) -> str:
    if source == "flag":
        return s.flag or s.name
    if source == "env":  # as _bad names it
        return f"{s.env} ({s.flag})" if s.flag and s.commands else str(s.env)
    if source == "config":
        return f"{s.name} in {cfg.path or CONFIG_NAME}"
    return ""


def where_set(name: str, value: Any = None) -> str:
    """Where setting ``name`` is set, in words, for a message that says what to fix: the one
    source its value in use came from ("--drafts-dir", "AGENTCLI_DRAFTS_DIR", "drafts_dir in
    /srv/support/agentcli.toml"); every source it may come from when that is not known (the
    default, or ``value`` is not the value resolved)."""
    s = SETTING[name]
    said, resolved = _SAID_WHERE.get(name, ("", None))
    if said and (value is None or str(value) == str(resolved)):
        return said
    places = ([s.flag] if s.flag and s.commands else []) + ([s.env] if s.env else []) + (
        [f"{s.name} in {CONFIG_NAME}"] if s.toml else [])
    return ", ".join(places[:-1]) + " or " + places[-1] if len(places) > 1 else "".join(places)


def _resolve_one(s: Setting, flag: Any, cfg: ConfigFile, values: Mapping[str, Any]) -> Any:
    raw, source = _pick(s, flag, cfg)
    value = _UNSET
    if source != "default":
        try:
            value = s.kind.parse(s, raw)
        except _Invalid as e:
            _SAID_WHERE.pop(s.name, None)
            raise _bad(s, source, cfg, str(e)) from None
    if s.kind is PATH and isinstance(value, Path) and not value.is_absolute():
        # a folder named in agentcli.toml is the file's (a team's config names the team's
        # folder, wherever the command runs); one typed or exported, the working directory's
        base = cfg.path.parent if source == "config" and cfg.path is not None else None
        try:
            value = (base / value) if base is not None else value.absolute()
        except OSError:  # no working directory any more: leave it as given
            pass
    if value is _UNSET and source == "flag":  # "--model ''" asked for something: say it is blank
        raise _bad(s, source, cfg, "is blank: give a value, or leave the flag out")
    if value is _UNSET:
        _SAID_WHERE.pop(s.name, None)
        if s.derive is not None:
            return s.derive(values)
        return dict(s.default) if isinstance(s.default, Mapping) else s.default
    if s.name.endswith("_token") and isinstance(value, str):
        add_secret(value.strip())  # a helpdesk token from agentcli.toml: hidden at every sink
    said = (_where_words(s, source, cfg), value)
    if _SAID_WHERE.get(s.name) != said:  # the same kept: no garbage at each resolve
        _SAID_WHERE[s.name] = said
    return value


_RANK = {"default": 0, "config": 1, "env": 2, "flag": 3}


def _drafts_place(values: dict[str, Any], flags: Mapping[str, Any], cfg: ConfigFile) -> None:
    """``drafts_dir`` and ``drafts_url`` both say where drafts go: the one from the higher
    source wins, as any setting's does (``--drafts-dir`` beats ``drafts_url`` in agentcli.toml,
    which took drafts to the queue whatever the flag said); from the same source, the queue."""
    if values.get("drafts_url") and _RANK[_pick(SETTING["drafts_dir"], flags.get("drafts_dir"), cfg)[1]] \
            > _RANK[_pick(SETTING["drafts_url"], flags.get("drafts_url"), cfg)[1]]:
        values["drafts_url"] = None


def resolve(**flags: Any) -> Settings:
    """Every setting of ``SETTINGS``: ``flags`` (a setting's name -> the flag's value, None when
    not given) > environment > agentcli.toml > default."""
    unknown = sorted(set(flags) - SETTING.keys())
    if unknown:
        raise TypeError(f"resolve() got unknown settings: {', '.join(unknown)}")
    cfg = load_config_file()
    values: dict[str, Any] = {}
    for s in SETTINGS:
        values[s.name] = _resolve_one(s, flags.get(s.name), cfg, values)
    _drafts_place(values, flags, cfg)
    return Settings(**values)


@dataclass(frozen=True)
class Problem:
    """A setting ``resolve_each`` could not resolve (its default is used instead)."""
    name: str       # the setting, or "config file"
    message: str


def resolve_each(**flags: Any) -> tuple[Settings, list[Problem]]:
    """Every setting as ``resolve`` would, but a bad one (or an unreadable config file) does
    not stop the others: it is listed, and its default stands in (``doctor`` checks all)."""
    problems: list[Problem] = []
    try:
        cfg = load_config_file()
    except ConfigError as e:
        cfg = NO_CONFIG_FILE
        problems.append(Problem("config file", e.message))
    values: dict[str, Any] = {}
    for s in SETTINGS:
        try:
            values[s.name] = _resolve_one(s, flags.get(s.name), cfg, values)
        except (ConfigError, UsageError) as e:
            problems.append(Problem(s.name, e.message))
            if s.name == "provider":  # an empty key: the person meant the model's provider
                values[s.name] = "anthropic"
                continue
            try:
                values[s.name] = s.derive(values) if s.derive is not None else (
                    dict(s.default) if isinstance(s.default, Mapping) else s.default)
            except (ConfigError, UsageError):
                values[s.name] = None
    _drafts_place(values, flags, cfg)
    return Settings(**values), problems


def resolve_setting(name: str, flag: Any = None) -> Any:
    """One setting alone (flag > environment > agentcli.toml > default), for the commands that
    need only it: a bad value of another setting does not stop them."""
    return _resolve_one(SETTING[name], flag, load_config_file(), {})


def source_of(name: str, flag: Any = None) -> str:
    """Where the value of setting ``name`` comes from: ``flag``, ``env``, ``config`` or ``default``."""
    return _pick(SETTING[name], flag, load_config_file())[1]


def resolve_drafts_url(flag: str | None = None, dir_flag: str | Path | None = None) -> str | None:
    """The drafts queue's URL in use (flag > AGENTCLI_DRAFTS_URL > agentcli.toml), or None for
    the folder: also when the folder's setting comes from a higher source (``_drafts_place``)."""
    cfg = load_config_file()
    values = {"drafts_url": _resolve_one(SETTING["drafts_url"], flag, cfg, {})}
    _drafts_place(values, {"drafts_url": flag, "drafts_dir": dir_flag}, cfg)
    return values["drafts_url"]


def resolve_drafts_dir(flag: str | Path | None = None) -> Path:
    """The drafts folder: flag > AGENTCLI_DRAFTS_DIR > agentcli.toml > the default
    (``default_drafts_dir``); always absolute."""
    v = resolve_setting("drafts_dir", flag)
    return v if v is not None else default_drafts_dir()


def drafts_dir_source(flag: Any = None) -> str:
    """Where the drafts folder's setting comes from, in words, for doctor and banners:
    "--drafts-dir", "AGENTCLI_DRAFTS_DIR", "drafts_dir in /srv/support/agentcli.toml" or
    "the default"."""
    src = source_of("drafts_dir", flag)
    if src == "flag":
        return "--drafts-dir"
    if src == "env":
        return "AGENTCLI_DRAFTS_DIR"
    if src == "config":
        return f"drafts_dir in {config_file_in_use()}"
    return "the default (agentcli's own folder)"


def is_default_drafts_dir(path: Path) -> bool:
    """Is ``path`` the default drafts folder (agentcli's own: it may be created with its
    parents; a folder someone named is created only inside a folder that exists)?"""
    try:
        return Path(path).absolute() == default_drafts_dir().absolute()
    except OSError:
        return False


def reviewer_setting() -> str | None:
    """Who reviews, as configured: AGENTCLI_REVIEWER > ``reviewer`` in agentcli.toml (None: the
    caller falls back to the login name, ``drafts.resolve_reviewer``)."""
    return resolve_setting("reviewer")

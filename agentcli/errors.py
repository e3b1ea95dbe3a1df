"""Errors that end a command, each carrying the exit code the spec assigns.

    AgentcliError                 (any failure with a one-line message for a person)
    ├── UsageError         exit 2  bad flag, bad argument, unreadable or empty input
    ├── ConfigError        exit 3  missing API key, database unreachable or not in the schema
    │   └── StoreError             the orders database failed (raised at open time it is a
    │                              configuration error; during a lookup the tool layer turns it
    │                              into an ``is_error`` result instead)
    └── ModelAPIError      exit 4  the model API failed after retries (network, 5xx, 429, auth)
        └── IncompleteResponse     a response that ended without a stop reason (dropped,
                                   stalled or truncated stream); retried like a transport fault

Tool failures are *not* exceptions that escape: the tool layer returns them as results with
``is_error: true`` (see ``agentcli.tools``). Interrupts are ``KeyboardInterrupt`` /
``asyncio.CancelledError`` and map to exit 130 in the CLI.

Every message here is meant to be shown as-is: one line, what went wrong and what to do, never
a secret, a DSN password, SQL or a stack trace.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_INCOMPLETE = 1
EXIT_USAGE = 2
EXIT_CONFIG = 3
EXIT_API = 4
EXIT_INTERRUPTED = 130


class AgentcliError(Exception):
    exit_code = 1

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class UsageError(AgentcliError):
    exit_code = EXIT_USAGE


class ConfigError(AgentcliError):
    exit_code = EXIT_CONFIG


class StoreError(ConfigError):
    """The orders database could not be opened or queried."""


class ModelAPIError(AgentcliError):
    exit_code = EXIT_API

    def __init__(self, message: str, *, kind: str = "api_error", retryable: bool = False,
                 retry_after: float | None = None):
        super().__init__(message)
        self.kind = kind
        self.retryable = retryable
        self.retry_after = retry_after


class IncompleteResponse(ModelAPIError):
    """A streamed response ended without a final stop reason: none of its tool calls may run."""

    def __init__(self, message: str = "the model's response ended before it was complete"):
        super().__init__(message, kind="incomplete_response", retryable=True)

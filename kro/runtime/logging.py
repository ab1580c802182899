"""kro.runtime.logging: configure structlog once, for JSON (production) or console (humans).

Library modules only do `log = structlog.get_logger(__name__)` and log constant events with
key=value fields; the entry point calls `configure` once before anything logs. Configuration is
process-wide and loggers are cached on first use (the filtering logger makes a disabled debug
call nearly free), so only the first call takes effect: later calls with the same settings are
no-ops and later calls with different settings are refused with a warning instead of leaving
half the loggers on the old settings.

Records from the standard library (`logging`, used by aiohttp and asyncio) are rendered by the
same processors, so one process writes one format.

Every line is scrubbed of credentials just before it is rendered (`ScrubFields`): each field,
the event, and the formatted traceback, for structlog's own records and for the standard
library's alike. So no log line can carry a bearer token, whichever code logged it and however
(an exception object as a field, a foreign library's message, a traceback of a chained error).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any, Literal

import orjson
import structlog

from kro.runtime.redact import redact

Format = Literal["json", "console"]

_configured: tuple[Format, int] | None = None


def _level_number(level: str | int) -> int:
    if isinstance(level, int):
        return level
    number = logging.getLevelNamesMapping().get(level.upper())
    if number is None:
        raise ValueError(f"unknown log level {level!r}")
    return number


def _json_dumps(obj: Any, **kwargs: Any) -> str:
    return orjson.dumps(obj, default=str).decode()


_PASS = frozenset({bool, int, float})


class ScrubFields:
    """A structlog processor: every value of the event dict, credentials removed.

    Strings are redacted; numbers, booleans and None pass; mappings and sequences are walked;
    any other object is turned into the text the renderer would print for it (`stringify`:
    `str` for JSON, `repr` for the console) and that text is redacted. That last case matters:
    an aiohttp exception passed as a field renders with the request's headers.
    """

    def __init__(self, stringify: Callable[[Any], str] = str) -> None:
        self._stringify = stringify

    def __call__(
        self, logger: Any, method_name: str, event_dict: MutableMapping[str, Any]
    ) -> MutableMapping[str, Any]:
        for key, value in event_dict.items():
            if type(value) is str:  # the common case, without the dispatch below
                event_dict[key] = redact(value)
            elif value is not None and type(value) not in _PASS:
                event_dict[key] = self._scrub(value)
        return event_dict

    def _scrub(self, value: Any) -> Any:
        if isinstance(value, str):
            return redact(value)
        if value is None or isinstance(value, bool | int | float):
            return value
        if isinstance(value, Mapping):
            return {key: self._scrub(item) for key, item in value.items()}
        if isinstance(value, list | tuple | set | frozenset):
            return [self._scrub(item) for item in value]
        return redact(self._stringify(value))


def configure(fmt: Format = "json", level: str | int = "info") -> None:
    """Set up structlog (and stdlib logging) for `fmt` at `level`; idempotent, first call wins."""
    global _configured
    wanted = (fmt, _level_number(level))
    if _configured is not None:
        if _configured != wanted:
            structlog.get_logger(__name__).warning(
                "logging.reconfigure_ignored", format=fmt, level=level
            )
        return

    shared: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.processors.StackInfoRenderer(),
    ]
    renderer: Any
    if fmt == "json":
        renderer = structlog.processors.JSONRenderer(serializer=_json_dumps)
        scrub_fields = ScrubFields(str)
    elif fmt == "console":
        # Plain tracebacks: rich's pretty ones render every local variable and cost about a
        # second of CPU per failed reconcile, enough to starve the probes under errors. (They
        # arrive formatted, by format_exc_info below, so that they are scrubbed too.)
        renderer = structlog.dev.ConsoleRenderer(
            colors=sys.stderr.isatty(), exception_formatter=structlog.dev.plain_traceback
        )
        scrub_fields = ScrubFields(repr)
    else:
        raise ValueError(f"unknown log format {fmt!r}")

    structlog.configure(
        processors=[*shared, structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        wrapper_class=structlog.make_filtering_bound_logger(wanted[1]),
        logger_factory=structlog.stdlib.LoggerFactory(),
        cache_logger_on_first_use=True,
    )
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                structlog.processors.format_exc_info,
                scrub_fields,
                renderer,
            ],
            foreign_pre_chain=[structlog.stdlib.add_logger_name, *shared],
        )
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(wanted[1])
    _configured = wanted


def is_configured() -> bool:
    return _configured is not None


def _reset() -> None:
    """Forget the configuration (tests only; loggers already cached keep their settings)."""
    global _configured
    _configured = None
    structlog.reset_defaults()
    logging.getLogger().handlers.clear()
    logging.getLogger().setLevel(logging.WARNING)

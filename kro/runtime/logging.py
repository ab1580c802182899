"""kro.runtime.logging: configure structlog once, for JSON (production) or console (humans).

Library modules only do `log = structlog.get_logger(__name__)` and log constant events with
key=value fields; the entry point calls `configure` once before anything logs. Configuration is
process-wide and loggers are cached on first use (the filtering logger makes a disabled debug
call nearly free), so only the first call takes effect: later calls with the same settings are
no-ops and later calls with different settings are refused with a warning instead of leaving
half the loggers on the old settings.

Records from the standard library (`logging`, used by aiohttp and asyncio) are rendered by the
same processors, so one process writes one format.
"""

from __future__ import annotations

import logging
import sys
from typing import Any, Literal

import orjson
import structlog

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
        shared.append(structlog.processors.format_exc_info)
        renderer = structlog.processors.JSONRenderer(serializer=_json_dumps)
    elif fmt == "console":
        # Plain tracebacks: rich's pretty ones render every local variable and cost about a
        # second of CPU per failed reconcile, enough to starve the probes under errors.
        renderer = structlog.dev.ConsoleRenderer(
            colors=sys.stderr.isatty(), exception_formatter=structlog.dev.plain_traceback
        )
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
            processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, renderer],
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

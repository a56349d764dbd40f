"""Logging set-up: plain text, or one JSON object per line carrying the trace and span ids of
the span that was current when the record was made."""

from __future__ import annotations

import logging
import sys
from datetime import UTC, datetime
from typing import Any

from opentelemetry import trace
from pythonjsonlogger.json import JsonFormatter as BaseJsonFormatter

from sandlot.settings import Settings

__all__ = ["JsonFormatter", "configure_logging"]


class JsonFormatter(BaseJsonFormatter):
    """python-json-logger's formatter with our field names (``ts``, ``level``, ``logger``,
    ``message``), anything passed with ``extra=``, and the current span's ids."""

    def __init__(self) -> None:
        super().__init__(
            "%(levelname)s %(name)s %(message)s",
            rename_fields={"levelname": "level", "name": "logger", "exc_info": "exception"},
            timestamp="ts",
            json_default=str,
        )

    def add_fields(
        self, log_data: dict[str, Any], record: logging.LogRecord, message_dict: dict[str, Any]
    ) -> None:
        super().add_fields(log_data, record, message_dict)
        log_data["ts"] = datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds")
        log_data["level"] = record.levelname.lower()
        ctx = trace.get_current_span().get_span_context()
        if ctx.is_valid:
            log_data["trace_id"] = format(ctx.trace_id, "032x")
            log_data["span_id"] = format(ctx.span_id, "016x")


def configure_logging(settings: Settings) -> None:
    """Install one stderr handler on the root logger in the configured format."""
    handler = logging.StreamHandler(sys.stderr)
    if settings.log_format == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    logging.getLogger("alembic").setLevel(max(root.level, logging.WARNING))  # one line per step

    root.setLevel(settings.log_level.upper())

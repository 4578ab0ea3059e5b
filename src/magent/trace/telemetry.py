"""Where OpenTelemetry traces go, if anywhere: ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``, else
``OTEL_EXPORTER_OTLP_ENDPOINT`` (``/v1/traces`` added), else ``config/otel.yaml`` (``endpoint``,
``headers``, ``timeout_seconds``); ``OTEL_SDK_DISABLED=true`` turns it off. This module never
imports OpenTelemetry."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from magent.trace import OTEL_SETTINGS, OTEL_VARIABLES

SETTINGS_FILE = OTEL_SETTINGS
TRACES_PATH = "/v1/traces"
DEFAULT_TIMEOUT = 5.0
_FIELDS = ("endpoint", "headers", "timeout_seconds")


@dataclass(frozen=True)
class OTLPTarget:
    """An OTLP/HTTP traces endpoint and how to reach it."""

    url: str
    """The full URL spans are posted to (``.../v1/traces``)."""
    headers: dict[str, str] | None = field(default=None, repr=False)
    """Extra request headers (None: the exporter reads ``OTEL_EXPORTER_OTLP_HEADERS``)."""
    timeout: float = DEFAULT_TIMEOUT
    source: str = ""
    """Where the endpoint came from, for messages."""


def traces_url(url: str, *, base: bool = True) -> str:
    """``url`` checked, with ``/v1/traces`` added to a base URL. Raises ``UsageError``."""
    from magent.errors import UsageError

    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise UsageError(f"{url!r} is not an OTLP/HTTP endpoint: give an http:// or https:// URL "
                         "(like http://localhost:4318)")
    url = url.strip()
    if base and not parts.path.rstrip("/").endswith(TRACES_PATH):
        url = url.rstrip("/") + TRACES_PATH
    return url


def settings_file(root: Path | None = None) -> Path:
    from magent import paths

    return paths.config_dir(root) / SETTINGS_FILE


def configured(root: Path | None = None) -> OTLPTarget | None:
    """The endpoint a run exports to, or None. Raises ``ConfigError`` for a bad ``otel.yaml``
    or ``UsageError`` for an environment variable that is not a URL."""
    if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    for name, base in zip(OTEL_VARIABLES, (False, True)):
        value = os.environ.get(name, "").strip()
        if value:
            return OTLPTarget(url=traces_url(value, base=base), source=name)
    return _from_file(settings_file(root))


def _from_file(path: Path) -> OTLPTarget | None:
    if not path.is_file():
        return None
    from magent.config.yamlfile import load_file
    from magent.errors import UsageError

    source = load_file(path)
    data: Any = source.data
    if data is None:
        return None
    if not isinstance(data, dict):
        raise source.error("expected a mapping with " + ", ".join(_FIELDS))
    for key in data:
        if key not in _FIELDS:
            import difflib

            close = difflib.get_close_matches(str(key), _FIELDS, n=1)
            raise source.error("unknown field" + (f" (did you mean {close[0]!r}?)" if close else "")
                               + f"; fields: {', '.join(_FIELDS)}", (key,))
    endpoint = data.get("endpoint")
    if not endpoint:
        return None
    if not isinstance(endpoint, str):
        raise source.error("must be a URL like http://localhost:4318", ("endpoint",))
    try:
        url = traces_url(endpoint)
    except UsageError as exc:
        raise source.error(exc.message, ("endpoint",)) from None
    headers = data.get("headers")
    if headers is not None and (not isinstance(headers, dict)
                                or not all(isinstance(v, (str, int)) for v in headers.values())):
        raise source.error("must be a mapping of header names to text", ("headers",))
    timeout = data.get("timeout_seconds", DEFAULT_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        raise source.error(f"must be a number of seconds above 0, not {timeout!r}", ("timeout_seconds",))
    return OTLPTarget(url=url, headers={str(k): str(v) for k, v in headers.items()} if headers else None,
                      timeout=float(timeout), source=f"config/{SETTINGS_FILE}")


def warn(message: str) -> None:
    print(f"magent: warning: {message}", file=sys.stderr, flush=True)


CLOSE_LIMIT = 30.0
"""Seconds the end of a run waits for its exporter process at most (it bounds its own network
wait to a few seconds; this only guards against a hung process)."""


def sdk_missing() -> bool:
    """Whether the OpenTelemetry SDK or its OTLP/HTTP exporter cannot be imported (not importing them)."""
    from importlib.util import find_spec

    try:
        return any(find_spec(name) is None for name in
                   ("opentelemetry.sdk", "opentelemetry.exporter.otlp.proto.http"))
    except (ImportError, ValueError):
        return True


class LiveExport:
    """The exporter process of a live run (``trace.otellive``), seen from the run; ``close`` tells
    it the run is over, waits, then gives its one warning, if any."""

    def __init__(self, task_id: str, target: OTLPTarget, events_file: Path, after_seq: int):
        import json
        import subprocess

        self.task_id = task_id
        self.target = target
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "magent.trace.otellive"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, text=True, start_new_session=True)  # not in the terminal's Ctrl-C
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({
            "task_id": task_id, "url": target.url, "headers": target.headers, "timeout": target.timeout,
            "events_file": str(events_file), "after_seq": after_seq}) + "\n")
        self.proc.stdin.flush()

    def close(self) -> None:
        import json
        import subprocess

        try:
            out, _ = self.proc.communicate(timeout=CLOSE_LIMIT)  # closes its stdin: the run is over
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.communicate()
            warn(f"OpenTelemetry: the exporter did not finish within {CLOSE_LIMIT:.0f} s; send this run's "
                 f"spans again with magent trace {self.task_id[:8]} --otlp {self.target.url}")
            return
        except OSError:
            return
        try:
            result = json.loads(out.strip().splitlines()[-1])
        except (ValueError, IndexError):
            warn(f"OpenTelemetry: the exporter stopped unexpectedly (exit {self.proc.returncode}); send "
                 f"this run's spans again with magent trace {self.task_id[:8]} --otlp {self.target.url}")
            return
        if result.get("warning"):
            warn(str(result["warning"]))


def open_live(task_id: str, events_file: Path, after_seq: int) -> LiveExport | None:
    """The exporter of a run of ``task_id`` whose events go to ``events_file`` numbered after
    ``after_seq``, or None when no endpoint is configured. Without the OpenTelemetry SDK it
    says how to get it, once, and returns None: a run is never stopped by its telemetry."""
    target = configured()
    if target is None:
        return None
    if sdk_missing():
        warn(f"{target.source} asks for OpenTelemetry export, but the SDK is not installed "
             "(pip install 'magent-runner[otel]'); this run is not exported")
        return None
    try:
        return LiveExport(task_id, target, events_file, after_seq)
    except OSError as exc:
        warn(f"OpenTelemetry: could not start the exporter ({exc}); this run is not exported")
        return None

"""sbx_report: report to sbx-run's worker channel from Python, no subprocess.

Bound read-only into every sandbox with a channel (on PYTHONPATH). A frame
is a 4-byte big-endian length and one JSON object, written to the fd named
by SBX_CHANNEL_FD; the supervisor checks each one (sbx-formats(5)) and ends
the run as a sandbox violation on a bad one, so this module checks first,
as sbx-report(1) does, and raises ValueError instead of sending.

    import sbx_report as r
    r.progress(0.5, message="half way")
    r.metric("loss", 0.25, step=1)
    r.result({"accuracy": 0.9})

Frames from several threads or processes of one sandbox never interleave:
each send holds a lock (a thread lock, and flock on /tmp/.sbx-report.lock,
which sbx-report takes too).
"""
import fcntl
import json
import math
import os
import struct
import threading

MAX_NAME = 256
MAX_TEXT = 64 * 1024
MAX_ENTRIES = 1000
MAX_PATH = 1024
LOCK_PATH = "/tmp/.sbx-report.lock"
LEVELS = ("debug", "info", "warning", "error")

_thread_lock = threading.Lock()


def _text(what, value, cap=MAX_TEXT):
    if not isinstance(value, str):
        raise ValueError("%s: must be a string" % what)
    if len(value.encode("utf-8")) > cap:  # lone surrogates raise UnicodeEncodeError here
        raise ValueError("%s: longer than %d bytes" % (what, cap))
    return value


def _number(what, value, low=None, high=None):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError("%s: must be a finite number" % what)
    if isinstance(value, int) and not -(2 ** 63) <= value < 2 ** 63:
        raise ValueError("%s: an integer out of the 64-bit range" % what)
    if (low is not None and value < low) or (high is not None and value > high):
        raise ValueError("%s: must be a number from %s to %s" % (what, low, high))
    return value


def _step(value):
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2 ** 63:
        raise ValueError("step: must be a non-negative integer")
    return value


def _relative(what, path):
    _text(what, path, MAX_PATH)
    parts = path.split("/")
    if not path or path.startswith("/") or any(p in ("", ".", "..") for p in parts) or "\0" in path:
        raise ValueError("%s: a relative path inside its scratch folder" % what)
    return path


def _scalars(what, values, strings_only):
    if len(values) > MAX_ENTRIES:
        raise ValueError("%s: at most %d entries" % (what, MAX_ENTRIES))
    for key, value in values.items():
        _text("%s key" % what, key, MAX_NAME)
        if isinstance(value, str):
            _text("%s.%s" % (what, key), value)
        elif strings_only or not isinstance(value, (bool, int, float)):
            raise ValueError("%s.%s: must be a %s" % (what, key, "string" if strings_only else "scalar"))
        elif not isinstance(value, bool):
            _number("%s.%s" % (what, key), value)
    return values


def send(message):
    """Writes one message (a dict with a "type") as one frame."""
    fd_text = os.environ.get("SBX_CHANNEL_FD")
    if not fd_text:
        raise RuntimeError("SBX_CHANNEL_FD is not set: not running under sbx-run")
    body = json.dumps(message, separators=(",", ":"), allow_nan=False, ensure_ascii=False).encode("utf-8")
    frame = struct.pack(">I", len(body)) + body
    fd = int(fd_text)
    with _thread_lock:
        try:
            lock = os.open(LOCK_PATH, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK, 0o600)
        except OSError:
            lock = -1  # no writable /tmp: one writer is the caller's to ensure
        try:
            if lock >= 0:
                fcntl.flock(lock, fcntl.LOCK_EX)
            while frame:
                frame = frame[os.write(fd, frame):]
        finally:
            if lock >= 0:
                os.close(lock)


def _with(frame, **optional):
    for key, value in optional.items():
        if value is not None:
            frame[key] = value
    send(frame)


def state(name, message=None):
    _with({"type": "state", "state": _text("state", name)},
          message=None if message is None else _text("message", message))


def progress(fraction, message=None):
    _with({"type": "progress", "progress": _number("progress", fraction, 0, 1)},
          message=None if message is None else _text("message", message))


def metric(name, value, step=None, unit=None):
    _with({"type": "metric", "name": _text("metric name", name, MAX_NAME), "value": _number("metric value", value)},
          step=None if step is None else _step(step), unit=None if unit is None else _text("unit", unit))


def params(**values):
    send({"type": "params", "params": _scalars("params", values, False)})


def tags(**values):
    send({"type": "tags", "tags": _scalars("tags", values, True)})


def log(level, message):
    if level not in LEVELS:
        raise ValueError("log level: debug, info, warning or error")
    send({"type": "user_log", "level": level, "message": _text("message", message)})


def warning(message, code=None):
    _with({"type": "warning", "message": _text("message", message)},
          code=None if code is None else _text("code", code))


def checkpoint(path, step=None):
    _with({"type": "checkpoint", "path": _relative("checkpoint path", path)},
          step=None if step is None else _step(step))


def media(path, kind=None, caption=None):
    _with({"type": "media", "path": _relative("media path", path)},
          kind=None if kind is None else _text("kind", kind),
          caption=None if caption is None else _text("caption", caption))


def result(summary=None):
    if summary is not None:
        json.dumps(summary, allow_nan=False, ensure_ascii=False).encode("utf-8")  # raises before sending
    _with({"type": "result"}, summary=summary)


def error(message, code=None):
    _with({"type": "error", "message": _text("message", message)},
          code=None if code is None else _text("code", code))

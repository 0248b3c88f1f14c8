"""sbx_report: report to sbx-run's worker channel from Python, no subprocess.

Bound read-only into every sandbox with a channel (on PYTHONPATH). A frame
is a 4-byte big-endian length and one JSON object, written to the fd named
by SBX_CHANNEL_FD; the supervisor checks each one (sbx-formats(5)).

    import sbx_report as r
    r.progress(0.5, message="half way")
    r.metric("loss", 0.25, step=1)
    r.result({"accuracy": 0.9})
"""
import json
import os
import struct


def send(message):
    """Writes one message (a dict with a "type") as one frame."""
    fd_text = os.environ.get("SBX_CHANNEL_FD")
    if not fd_text:
        raise RuntimeError("SBX_CHANNEL_FD is not set: not running under sbx-run")
    body = json.dumps(message, separators=(",", ":"), allow_nan=False).encode("utf-8")
    frame = struct.pack(">I", len(body)) + body
    fd = int(fd_text)
    while frame:
        frame = frame[os.write(fd, frame):]


def _with(frame, **optional):
    frame.update({k: v for k, v in optional.items() if v is not None})
    send(frame)


def state(name, message=None):
    _with({"type": "state", "state": name}, message=message)


def progress(fraction, message=None):
    _with({"type": "progress", "progress": float(fraction)}, message=message)


def metric(name, value, step=None, unit=None):
    _with({"type": "metric", "name": name, "value": float(value)}, step=step, unit=unit)


def params(**values):
    send({"type": "params", "params": values})


def tags(**values):
    send({"type": "tags", "tags": {k: str(v) for k, v in values.items()}})


def log(level, message):
    send({"type": "user_log", "level": level, "message": message})


def warning(message, code=None):
    _with({"type": "warning", "message": message}, code=code)


def checkpoint(path, step=None):
    _with({"type": "checkpoint", "path": path}, step=step)


def media(path, kind=None, caption=None):
    _with({"type": "media", "path": path}, kind=kind, caption=caption)


def result(summary=None):
    _with({"type": "result"}, summary=summary)


def error(message, code=None):
    _with({"type": "error", "message": message}, code=code)

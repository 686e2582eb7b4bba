"""The package's process-wide state: the shared io_context thread, the writers still open
(closed at interpreter exit within their shutdown timeouts), and what a forked child does
with what it inherited."""

import atexit
import logging
import os
import threading
import weakref

from . import _native

_log = logging.getLogger("jsonlw")

_lock = threading.Lock()
_io = None
_open = weakref.WeakSet()  # Python writer objects with a started, not yet closed writer
_exiting = False


def default_io_context():
    """The io_context (and its thread) every writer runs on unless given its own."""
    global _io
    with _lock:
        if _io is None:
            _io = _native.IoContext()
        return _io


def track(writer):
    _open.add(writer)


def untrack(writer):
    _open.discard(writer)


def _close_at_exit():
    """atexit: close what is still open (each within its shutdown timeout, GIL released),
    log the counts, then stop the shared thread. Never raises, never hangs."""
    global _exiting, _io
    _exiting = True
    for w in list(_open):
        try:
            report = w._close_blocking(timeout=w._native.shutdown_timeout + 1.0)
            if report is None:
                _log.warning("%s: close at exit timed out", w._describe())
            else:
                s = report["stats"]
                _log.info("%s closed at exit: submitted %d, written %d, dropped %s, unknown %d",
                          w._describe(), s["submitted"], s["written"],
                          {k: v for k, v in s["dropped"].items() if v}, s["unknown"])
        except Exception:  # noqa: BLE001 - exit must go on
            pass
    _open.clear()
    io = _io
    _io = None
    if io is not None:
        try:
            io.stop()
        except Exception:  # noqa: BLE001
            pass


atexit.register(_close_at_exit)


def _after_fork_in_child():
    """A forked child inherits the parent's writers and io_context, but not their threads:
    as the C++ writers after fork(), an inherited writer never writes (its records stay
    queued, then are refused as queue_full), and it is never closed or destroyed here.
    Writers the child creates get a fresh io_context and work normally."""
    global _io, _lock
    _lock = threading.Lock()
    for w in list(_open):
        try:
            w._native.mark_inherited()
            w._inherited = True
        except Exception:  # noqa: BLE001
            pass
    _open.clear()
    if _io is not None:
        _io.forget()
        _keep_forever.append(_io)
    _io = None


_keep_forever = []  # inherited io_contexts: never destroyed in the child
os.register_at_fork(after_in_child=_after_fork_in_child)

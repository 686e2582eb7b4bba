"""What every jsonlw writer object offers Python: start/flush/close as awaitables (or
blocking calls where no asyncio loop runs), stats, and exit/fork handling."""

from . import _aio, _runtime
from ._forward import forwarded
from ._native import SubmitResult


class _Done:
    """An awaitable that is already complete (a second start(), a close of a closed writer)."""

    __slots__ = ("value",)

    def __init__(self, value=None):
        self.value = value

    def __await__(self):
        return self.value
        yield  # pragma: no cover - makes this a generator


class WriterBase:
    """Thread-safety: submit() from any thread (the event loop included): it converts the
    record with the GIL held and queues it, never blocking, never waiting for I/O. Everything
    else from any thread too; the awaitables complete on the loop that called."""

    def __init__(self, native):
        self._native = native
        self._started = False
        self._closed = False
        self._inherited = False
        self._close_report = None
        self.submit = native.submit if hasattr(native, "submit") else None

    # --- lifecycle ------------------------------------------------------------------------
    def start(self):
        """Creates the directory (on the writer's io_context thread) and starts the drain.
        Idempotent. Returns an awaitable in a coroutine, None elsewhere (done by then)."""
        loop = _aio.running_loop()
        if self._started or self._closed:
            return _Done() if loop else None
        self._started = True
        _runtime.track(self)
        if loop is None:
            self._native.start_now()
            return None
        fut, done = _aio.completion(loop)
        self._native.start_async(done)
        return fut

    def flush(self, timeout=None):
        """Completes once every record submitted before the call is written or counted as
        dropped (True), or close gave up first (False)."""
        loop = _aio.running_loop()
        if loop is None or timeout is not None:
            return self._native.flush_wait(timeout)
        fut, done = _aio.completion(loop)
        self._native.flush_async(done)
        return fut

    def close(self, timeout=None):
        """Stops intake, writes what is queued and completes with the final report (a dict:
        stats, drained) no later than the shutdown timeout. In a coroutine: an awaitable.
        With `timeout` (seconds), or where no loop runs: blocks at most that long (GIL
        released) and returns the report, or None when the time ran out."""
        loop = _aio.running_loop()
        if self._closed:
            return _Done(self._close_report) if (loop and timeout is None) else self._close_report
        if loop is None or timeout is not None:
            return self._close_blocking(timeout)
        self._closed = True
        fut, done = _aio.completion(loop)

        def finished(report):
            self._close_report = report
            _runtime.untrack(self)
            done(report)

        self._native.close_async(finished)
        return fut

    def _close_blocking(self, timeout):
        if self._closed and self._close_report is not None:
            return self._close_report
        self._closed = True
        report = self._native.close_wait(timeout)
        if report is not None:
            self._close_report = report
            _runtime.untrack(self)
        return report

    # --- state ----------------------------------------------------------------------------
    def stats(self):
        """The writer's counters: submitted, written, batches, bytes, sanitized, unknown,
        pending, dropped{queue_full, oldest_evicted, malformed, write_error, shutdown,
        unexpected, closed}. submitted == written + sum(dropped) + unknown + pending."""
        return self._native.stats()

    enabled = forwarded("_native.enabled")
    file_path = forwarded("_native.file_path")

    def _describe(self):
        return type(self).__name__


__all__ = ["WriterBase", "SubmitResult"]

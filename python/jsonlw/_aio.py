"""From the C++ writers' completions (called on the io_context thread) to asyncio: each
start/flush/close returns an awaitable completed on the calling loop with
call_soon_threadsafe, or — called where no loop runs — waits for the result."""

import asyncio


def _resolve(fut, value):
    if not fut.done():
        fut.set_result(value)


def running_loop():
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def completion(loop):
    """A future of `loop` and the callback that completes it from any thread."""
    fut = loop.create_future()

    def done(value):
        try:
            loop.call_soon_threadsafe(_resolve, fut, value)
        except RuntimeError:  # the loop is closed: nobody awaits any more
            pass

    return fut, done

"""Slow or silent clients time out: a connection whose request head is not complete within ``HEAD_TIMEOUT_S``
(after it opened, or after its last response on a kept-alive connection) is closed.

uvicorn has no such limit — its keep-alive timer starts only after a first response and any byte resets it, so
200 clients that open a connection and send nothing (or one header line every few seconds) hold 200 sockets and
their buffers for ever. These are uvicorn's own HTTP protocols with a deadline on the head; the body has its own
(``origin_guard.BODY_TIMEOUT_S``).

```python
server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=1416, http=http_protocol()))
```
"""

from __future__ import annotations

import importlib.util

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

HEAD_TIMEOUT_S = 10.0


class _HeadDeadline:
    """Close the connection when no complete request head arrived ``head_timeout`` seconds after it opened (or
    after the last response); a head that completes cancels the timer."""

    head_timeout = HEAD_TIMEOUT_S
    _head_timer = None

    def _arm_head_timer(self) -> None:
        self._cancel_head_timer()
        if not self.transport.is_closing():
            self._head_timer = self.loop.call_later(self.head_timeout, self._head_timed_out)

    def _cancel_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if not self.transport.is_closing():
            self.transport.close()

    def connection_made(self, transport) -> None:
        super().connection_made(transport)
        self._arm_head_timer()

    def connection_lost(self, exc) -> None:
        self._cancel_head_timer()
        super().connection_lost(exc)


class HeadDeadlineH11(_HeadDeadline, H11Protocol):
    """uvicorn's h11 protocol with the head deadline (used when httptools is not installed)."""

    def handle_events(self) -> None:
        super().handle_events()
        if self.conn.their_state is not h11.IDLE:  # the request's head was parsed
            self._cancel_head_timer()

    def on_response_complete(self) -> None:
        super().on_response_complete()  # may start the next cycle and take a pipelined request at once
        if self.conn.their_state is h11.IDLE:
            self._arm_head_timer()


def http_protocol() -> type:
    """The HTTP protocol class uvicorn would pick (httptools when installed, else h11), with the head deadline."""
    if importlib.util.find_spec("httptools") is None:
        return HeadDeadlineH11
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    class HeadDeadlineHttpTools(_HeadDeadline, HttpToolsProtocol):
        """uvicorn's httptools protocol with the head deadline."""

        def on_headers_complete(self) -> None:
            self._cancel_head_timer()
            super().on_headers_complete()

        def on_response_complete(self) -> None:
            waiting = not self.pipeline  # a queued pipelined request already has its head
            super().on_response_complete()
            if waiting:
                self._arm_head_timer()

    return HeadDeadlineHttpTools

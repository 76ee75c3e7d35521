"""A loopback HTTP server on a thread of its own: the base of the tests' stand-ins for outside services
(tests/connector_servers.py's FakePlatform, tests/oidc_provider.py's FakeProvider).

    class Service(LoopbackServer):
        def get(self, request): ...     # request: the BaseHTTPRequestHandler of one GET
    with Service() as service: ... service.url ...

It listens on 127.0.0.1 at a free port from construction (so `url` is known before `with`), serves while
inside `with`, and closes its socket on leaving. GET and POST go to `handle`, which by default calls
`get` or `post`; a subclass answering both alike overrides `handle`. Requests are not logged to stderr.

Each request is handled on a thread of its own (`handler_threads`). `closing` is set on leaving `with`:
a handler that keeps a client waiting on purpose (a service that hangs) waits on it rather than
sleeping, so it ends with the server instead of outliving the test; `handlers_left` says which
handlers are still running a while after.
"""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class LoopbackServer:
    protocol_version = "HTTP/1.0"  # BaseHTTPRequestHandler's; "HTTP/1.1" keeps connections open

    def __init__(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = server.protocol_version

            def log_message(self, *args):
                pass

            def do_GET(self):
                server.handler_threads.append(threading.current_thread())
                server.handle(self)

            def do_POST(self):
                server.handler_threads.append(threading.current_thread())
                server.handle(self)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.closing = threading.Event()
        self.handler_threads: list[threading.Thread] = []

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    @property
    def url(self) -> str:
        return self.origin

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.closing.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def handlers_left(self, within: float = 2.0) -> list[threading.Thread]:
        """The request handlers still running after waiting up to `within` seconds for them all."""
        deadline = time.monotonic() + within
        for thread in list(self.handler_threads):
            thread.join(max(0.0, deadline - time.monotonic()))
        return [thread for thread in self.handler_threads if thread.is_alive()]

    def handle(self, request: BaseHTTPRequestHandler) -> None:
        if request.command == "POST":
            self.post(request)
        else:
            self.get(request)

    def get(self, request: BaseHTTPRequestHandler) -> None:
        raise NotImplementedError

    def post(self, request: BaseHTTPRequestHandler) -> None:
        raise NotImplementedError

"""A loopback HTTP server that plays slurmrestd, the Kubernetes API, MLflow and the generic API, with faults.

    server = FakePlatform()
    server.route("/jobs", handler)              # handler(query: dict[str, str]) -> (status, object)
    server.fault("/jobs", "500", "429", ...)    # the next requests on exactly that path misbehave, in order
    with server: ... server.url ...

Faults: "500", "503", "429" (Retry-After: 1), "timeout" (answers after the client gave up, or not at all
when the server stops first),
"truncated" (a complete response whose JSON is cut in half), "drop" (the connection closes
half-way through a body announced at full length), "repeat" (the previous answer on that path
again). Only 127.0.0.1 is used; every request is logged in `server.requests`.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qs, urlsplit

from tests.loopback import LoopbackServer

TIMEOUT_SLEEP_S = 2.5  # longer than the client timeouts the tests set (at most 2 s)


class FakePlatform(LoopbackServer):
    protocol_version = "HTTP/1.1"

    def __init__(self):
        super().__init__()
        self.routes: list[tuple[str, object]] = []
        self.faults: dict[str, list[str]] = {}
        self.last_body: dict[str, bytes] = {}
        self.requests: list[tuple[str, str, dict]] = []  # (path, fault or "", query)
        self.lock = threading.Lock()

    def route(self, prefix: str, handler) -> None:
        """handler(path, query) -> (status, body object or bytes, headers dict)."""
        self.routes.append((prefix, handler))

    def fault(self, prefix: str, *faults: str) -> None:
        with self.lock:
            self.faults.setdefault(prefix, []).extend(faults)

    def count(self, path: str, fault: str | None = None) -> int:
        return sum(1 for p, f, _ in self.requests if p == path and (fault is None or f == fault))

    def handle(self, request: BaseHTTPRequestHandler) -> None:
        parts = urlsplit(request.path)
        length = int(request.headers.get("Content-Length") or 0)
        form = request.rfile.read(length).decode() if length else ""
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        if "json" in (request.headers.get("Content-Type") or ""):
            query["_json"] = json.loads(form or "null")  # a JSON body (MLflow's runs/search)
        else:
            query.update({k: v[-1] for k, v in parse_qs(form).items()})
        query["_headers"] = dict(request.headers)
        path = parts.path
        with self.lock:
            prefix = path if self.faults.get(path) else None
            fault = self.faults[prefix].pop(0) if prefix else ""
            self.requests.append((path, fault, query))
        if fault in ("500", "503"):
            return self._send(request, int(fault), b'{"error": "injected"}')
        if fault == "429":
            return self._send(request, 429, b'{"error": "slow down"}', {"Retry-After": "1"})
        # "timeout" waits on the server's `closing` (not a sleep), so it ends with the server rather than after the test
        if fault == "timeout" and self.closing.wait(TIMEOUT_SLEEP_S):
            request.close_connection = True
            return None
        if fault == "repeat" and path in self.last_body:
            return self._send(request, 200, self.last_body[path])
        handler = next((h for p, h in self.routes if path.startswith(p)), None)
        if handler is None:
            return self._send(request, 404, b'{"message": "not found"}')
        status, body, headers = handler(path, query)
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        if status == 200:
            self.last_body[path] = data
        if fault == "truncated":
            data = data[: len(data) // 2]
        if fault == "drop":
            try:
                request.send_response(200)
                request.send_header("Content-Type", "application/json")
                request.send_header("Content-Length", str(len(data)))
                request.end_headers()
                request.wfile.write(data[: len(data) // 2])
                request.wfile.flush()
            finally:
                request.close_connection = True
                request.connection.shutdown(2)
            return None
        return self._send(request, status, data, headers)

    @staticmethod
    def _send(request, status: int, data: bytes, headers: dict | None = None) -> None:
        try:
            request.send_response(status)
            request.send_header("Content-Type", "application/json")
            request.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                request.send_header(name, value)
            request.end_headers()
            request.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout fault)
            pass

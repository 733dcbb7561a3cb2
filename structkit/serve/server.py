"""The server on uvicorn: its socket, the guards on connections against slow clients (a read
timeout, a connection limit), and ``serve``, what ``structkit serve`` runs: bind, load and warm
the models, serve until SIGTERM/SIGINT, and stop.
"""
from __future__ import annotations

import gc
import json
import os
import threading
import time

from structkit.errors import UserError
from structkit.serve.app import create_app
from structkit.serve.inference import warm_up
from structkit.serve.limits import MAX_CONNECTIONS, READ_TIMEOUT
from structkit.serve.registry import load_models, load_tokenizers, pipeline_tokenizers


def guarded_protocol(read_timeout: float = READ_TIMEOUT, max_connections: int = MAX_CONNECTIONS):
    """uvicorn's h11 protocol with two guards against slow clients: a request's headers and
    body must arrive within ``read_timeout`` seconds of its first byte (else 408 and the
    connection is closed; a connection that sends nothing in that time is closed), and at most
    ``max_connections`` are open: a new connection over the limit closes the longest-idle
    connection that is between requests (still reading headers, or kept alive), or is itself
    closed when every connection is busy with a request."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    body408 = json.dumps({"error": f"the request did not arrive within {read_timeout:g} s"}).encode()
    raw408 = (b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\n"
              b"connection: close\r\ncontent-length: " + str(len(body408)).encode() + b"\r\n\r\n"
              + body408)
    reading = (h11.IDLE, h11.SEND_BODY)

    class Guarded(H11Protocol):
        _read_timer = None
        _idle_since = 0.0

        def connection_made(self, transport) -> None:
            super().connection_made(transport)
            self._idle_since = time.monotonic()
            if len(self.connections) > max_connections:
                idle = [c for c in self.connections
                        if c is not self and isinstance(c, Guarded) and c._between_requests()]
                if not idle:
                    self.transport.close()
                    return
                min(idle, key=lambda c: c._idle_since).transport.close()
            self._arm()

        def _between_requests(self) -> bool:
            return self.conn.their_state is h11.IDLE and not self.transport.is_closing()

        def _arm(self) -> None:
            if self._read_timer is None:
                self._read_timer = self.loop.call_later(read_timeout, self._too_slow)

        def _disarm(self) -> None:
            if self._read_timer is not None:
                self._read_timer.cancel()
                self._read_timer = None

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self.conn.their_state in reading:
                self._arm()
            else:
                self._disarm()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._idle_since = time.monotonic()
            self._disarm()   # the keep-alive timeout takes over until the next request's bytes
            if self.conn.their_state is h11.SEND_BODY or self.conn.trailing_data[0]:
                self._arm()  # a pipelined request is already arriving

        def connection_lost(self, exc) -> None:
            self._disarm()
            super().connection_lost(exc)

        def _too_slow(self) -> None:
            self._read_timer = None
            if self.transport.is_closing() or self.conn.their_state not in reading:
                return
            started = self.conn.their_state is h11.SEND_BODY or bool(self.conn.trailing_data[0])
            if started and (self.cycle is None or self.cycle.response_complete
                            or not self.cycle.response_started):
                self.transport.write(raw408)
            self.transport.close()

    return Guarded


def bind_socket(host: str, port: int):
    """The server's socket, bound (not yet listening); a UserError when it cannot be."""
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Accepted connections inherit this: without it a kept-alive connection waits for the
    # client's delayed ACK (40 ms) between the response's header and body writes (Nagle).
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((host, port))
    except OSError as e:
        sock.close()
        raise UserError(f"cannot listen on {host}:{port}: {e.strerror or e}") from None
    except (OverflowError, TypeError) as e:
        sock.close()
        raise UserError(f"cannot listen on {host}:{port}: {e}") from None
    return sock


def _fd_limit() -> int:
    """The soft limit on open files, raised to the hard limit where it is lower."""
    try:
        import resource
    except ImportError:  # not on POSIX
        return 1 << 16
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY:
        hard = 1 << 16
    if soft == resource.RLIM_INFINITY:
        return hard
    if soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError):
            pass
    return soft


def serve(specs: list[str], host: str, port: int, max_bytes: int, timeout: float,
          echo=print, allow_hosts: tuple[str, ...] = (), read_timeout: float = READ_TIMEOUT,
          max_connections: int = MAX_CONNECTIONS, tokenizer_specs: list[str] = ()) -> None:
    """``structkit serve``: bind, load and warm the models, then serve until SIGTERM/SIGINT."""
    import signal
    import sys

    import uvicorn

    sock = bind_socket(host, port)
    t0 = time.perf_counter()
    try:
        served = load_models(specs)
        tokenizers = load_tokenizers(list(tokenizer_specs))
        pipeline_tokenizers(served, tokenizers)
        warm_up(served, tokenizers)
        # The models and numba's objects stay until the server stops: frozen, the collector
        # does not scan them again each time a big request's sentences (a list per word) make
        # it run (as `tag` freezes its model: structkit.sequence.wing).
        gc.collect()
        gc.freeze()
        app = create_app(served, max_bytes, timeout, hosts=(host,), allow_hosts=tuple(allow_hosts),
                         tokenizers=tokenizers)
    except BaseException:
        sock.close()
        raise
    # connections stay below the file-descriptor limit (models, pools and the listening socket
    # need some): past it, accept() fails and nobody is served
    max_connections = max(1, min(max_connections, _fd_limit() - 64))
    sock.listen(2048)
    real_port = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    toks = ""
    if tokenizers.models:
        toks = (f" and {len(tokenizers.models)} tokenizer(s) ({', '.join(tokenizers.models)}; "
                f"{tokenizers.default} tokenises text that names no lang)")
    echo(f"structkit serve: {len(served)} model(s) ({', '.join(f'{n}: {m.task}' for n, m in served.items())})"
         f"{toks} loaded and warmed in {time.perf_counter() - t0:.1f} s; listening on "
         f"http://{shown}:{real_port}/")
    if host in ("0.0.0.0", "::", ""):
        echo(f"structkit serve: warning: listening on all interfaces ({host or '*'}) with no "
             "authentication: anyone who can reach this machine can use the server")
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off",
                            timeout_graceful_shutdown=2,
                            http=guarded_protocol(read_timeout, max_connections))

    class Server(uvicorn.Server):
        def handle_exit(self, sig, frame) -> None:
            app.state.stopping.set()   # requests in flight stop at their next check (503)
            super().handle_exit(sig, frame)

    server = Server(config)
    # uvicorn stops gracefully on SIGTERM, then raises the signal again for the caller; here a
    # SIGTERM is the ordinary way to stop a server, so that second raise must not kill us.
    old = signal.signal(signal.SIGTERM, lambda signum, frame: None)
    # A request's work drops the GIL for each numba kernel and must take it back after; with the
    # default 5 ms switch interval, under load every retake waits for another thread's 5 ms
    # (16 clients on /tag: 340 requests/s; at 0.5 ms: 640, one client's latency unchanged).
    interval = sys.getswitchinterval()
    sys.setswitchinterval(0.0005)
    try:
        server.run(sockets=[sock])
    finally:
        app.state.stopping.set()
        sys.setswitchinterval(interval)
        gc.unfreeze()   # a caller that goes on (a test, the API) collects as before
        signal.signal(signal.SIGTERM, old)
        for pool in (app.state.pool, app.state.big):
            pool.shutdown(wait=False, cancel_futures=True)
        sock.close()
    # Work in flight stops within one chunk of sentences (well under a second); should a
    # thread still be inside one long step, the process does not wait for it past this.
    deadline = time.monotonic() + 2.0
    for t in threading.enumerate():
        if t.name.startswith("structkit-serve"):
            t.join(max(0.0, deadline - time.monotonic()))
    if any(t.name.startswith("structkit-serve") and t.is_alive() for t in threading.enumerate()):
        echo("structkit serve: stopped (a request's work was cut short)")
        sys.stderr.flush()
        sys.stdout.flush()
        os._exit(0)
    echo("structkit serve: stopped")

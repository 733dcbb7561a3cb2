"""The web application (Starlette): the routes, the limits on a request's body and time, the
worker pools (small requests; big bodies in a lane of their own), the guard on Host and Origin
against DNS rebinding, and the OpenAPI description.
"""
from __future__ import annotations

import asyncio
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from structkit import __version__
from structkit.errors import UserError
from structkit.serve.inference import answer
from structkit.serve.inputs import Options, check_request, decode_body
from structkit.serve.limits import (
    BIG_BYTES,
    MAX_BYTES,
    TIMEOUT,
    TIMEOUT_WORDS,
    Cancelled,
    Job,
    RequestError,
)
from structkit.serve.registry import Served, Tokenizers, endpoints


def release_memory() -> None:
    """Give freed heap pages back to the system (glibc's malloc_trim; a no-op elsewhere)."""
    global _libc
    if _libc is None:
        try:
            import ctypes

            _libc = ctypes.CDLL("libc.so.6")
            _libc.malloc_trim.argtypes = [ctypes.c_size_t]
        except (OSError, AttributeError):
            _libc = False
    if _libc:
        _libc.malloc_trim(0)


_libc: Any = None


def openapi(served: dict[str, Served]) -> dict:
    """The OpenAPI 3 description of the endpoints (hand-written: the schema is small)."""
    inp = {"type": "object", "additionalProperties": False, "properties": {
        "text": {"type": "string", "description": "Raw text: tokenised and split into sentences."},
        "tokens": {"type": "array", "description": "Sentences of words, or of [word, POS] pairs.",
                   "items": {"type": "array", "items": {"oneOf": [
                       {"type": "string"},
                       {"type": "array", "items": {"type": "string"}, "minItems": 2, "maxItems": 2}]}}},
        "conllu": {"type": "string", "description": "CoNLL-U sentences."},
        "model": {"type": "string", "description": "The model (optional when one of the task is loaded)."},
        "tagger": {"type": "string", "description": "/parse only: a pos model to tag with first."},
        "models": {"type": "array", "items": {"type": "string"},
                   "description": "/pipeline only: models to run (taggers, then the parser)."},
        "scores": {"type": "boolean", "default": True, "description": "Per-token margins (Viterbi models)."},
        "explain": {"type": "boolean", "default": False,
                    "description": "Per-token runner-up, margin and top features."},
        "format": {"type": "string", "enum": ["json", "conllu"], "default": "json"},
        "render": {"type": "boolean", "default": False,
                   "description": "Add each sentence's picture (\"svg\": words, tags, spans and "
                                  "arcs, as the page and structkit.render draw them) and a "
                                  "\"legend\" of the span colours."},
        "lang": {"type": "string", "description": "The text's tokenizer: a --tokenizer model's name or a "
                                                  "language with rules (en); default: the first "
                                                  "--tokenizer, else en (GET /models lists them)."}}}
    err = {"description": "An error", "content": {"application/json": {"schema": {
        "type": "object", "properties": {"error": {"type": "string"}}}}}}
    result = {"description": "Sentences with tokens (offsets, labels and scores per model, head "
                             "and deprel after a parser) and spans; text/plain CoNLL-U with "
                             "format=conllu",
              "content": {"application/json": {"schema": {"type": "object"}},
                          "text/plain": {"schema": {"type": "string"}}}}
    post = {"requestBody": {"required": True, "content": {"application/json": {"schema": inp}}},
            "responses": {"200": result, "400": err, "403": err, "404": err, "408": err, "413": err,
                          "503": err}}
    paths = {f"/{ep}": {"post": {**post, "summary": f"Run a {task} model"}} for ep, task in endpoints().items()}
    paths["/pipeline"] = {"post": {**post, "summary": "Tokenise, tag, then parse with several models"}}
    paths["/models"] = {"get": {"summary": "Each model's metadata (task, labels, algorithm, training "
                                           "data checksum)", "responses": {"200": {"description": "models"}}}}
    paths["/health"] = {"get": {"summary": "For monitoring", "responses": {"200": {"description": "ok"}}}}
    paths["/"] = {"get": {"summary": "The web page", "responses": {"200": {"description": "HTML"}}}}

    return {"openapi": "3.0.3", "info": {"title": "structkit serve", "version": __version__},
            "paths": paths}


LOCAL_NAMES = ("localhost", "127.0.0.1", "::1")


def _host_name(value: str) -> str | None:
    """The host of a Host header (``name``, ``name:port``, ``[v6]:port``), lower-case and
    without brackets or a trailing dot; None when it is not one."""
    value = value.strip().lower()
    if value.startswith("["):
        name, bracket, rest = value[1:].partition("]")
        if not bracket or (rest and not (rest[0] == ":" and rest[1:].isdigit())):
            return None
    else:
        name, colon, port = value.partition(":")
        if colon and not port.isdigit():
            return None
    name = name.rstrip(".")
    return name or None


def _is_ip(name: str) -> bool:
    import ipaddress

    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


class HostGuard:
    """ASGI middleware against DNS rebinding: the Host header must name this server (localhost,
    an IP address, the ``--host`` value or an ``--allow-host`` name; ``*`` allows any), and a
    POST that carries an Origin must come from the server's own origin (or an ``--allow-host``
    name). A web page on another domain can make a browser send requests to 127.0.0.1 (by
    re-pointing its own name there); the browser then sends that domain in Host, or its own
    origin in Origin. An IP address in Host cannot be such a rebinding, so any is accepted."""

    def __init__(self, app, hosts: tuple[str, ...] = (), allow: tuple[str, ...] = (), on_refuse=None):
        self.app = app
        self.allow = {h.lower().strip("[]").rstrip(".") for h in allow}
        self.hosts = {h.lower().strip("[]").rstrip(".") for h in (*LOCAL_NAMES, *hosts)} | self.allow
        self.on_refuse = on_refuse

    def refusal(self, scope) -> str | None:
        host = origin = None
        for k, v in scope.get("headers", ()):
            if k == b"host" and host is None:
                host = v.decode("latin-1")
            elif k == b"origin" and origin is None:
                origin = v.decode("latin-1")
        if host is not None and "*" not in self.hosts:
            name = _host_name(host)
            if name is None or not (name in self.hosts or _is_ip(name)):
                return (f"Host {host!r} is not this server's name: start it with --allow-host "
                        "NAME to accept it")
        if origin is not None and scope.get("method") not in ("GET", "HEAD", "OPTIONS"):
            from urllib.parse import urlsplit

            try:
                o = urlsplit(origin)
                o_host = o.hostname
            except ValueError:
                o, o_host = None, None
            same = o is not None and o.scheme in ("http", "https") and host is not None \
                and o.netloc.lower() == host.strip().lower()
            if not same and not (o_host and ("*" in self.allow or o_host.rstrip(".") in self.allow)):
                return (f"a cross-origin request (Origin {origin!r}) is refused: start the server "
                        "with --allow-host NAME to accept one from NAME")
        return None

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            why = self.refusal(scope)
            if why is not None:
                await self.on_refuse(403, why)(scope, receive, send)
                return
        await self.app(scope, receive, send)


def create_app(served: dict[str, Served], max_bytes: int = MAX_BYTES, timeout: float = TIMEOUT,
               workers: int | None = None, hosts: tuple[str, ...] = (),
               allow_hosts: tuple[str, ...] = (), tokenizers: Tokenizers | None = None):
    """The Starlette application over the loaded models. ``app.state.stopping`` (an Event) stops
    the requests in flight at their next check; ``app.state.pool`` and ``app.state.big`` are the
    worker pools (small requests; bodies over BIG_BYTES, one at a time)."""
    from importlib.resources import files

    from starlette.applications import Starlette
    from starlette.background import BackgroundTask
    from starlette.exceptions import HTTPException
    from starlette.middleware import Middleware
    from starlette.requests import ClientDisconnect, Request
    from starlette.responses import HTMLResponse, JSONResponse, Response
    from starlette.routing import Route

    page = files("structkit").joinpath("web/index.html").read_text(encoding="utf-8")
    pool = ThreadPoolExecutor(max_workers=workers or min(8, (os.cpu_count() or 2) + 2),
                              thread_name_prefix="structkit-serve")
    big = ThreadPoolExecutor(max_workers=1, thread_name_prefix="structkit-serve-big")
    stopping = threading.Event()
    stats = {"started": time.time(), "requests": 0, "errors": 0, "working": 0, "stopped": 0}
    tokenizers = tokenizers or Tokenizers()
    models_doc = {"models": [sv.meta for sv in served.values()], "tokenizers": tokenizers.listing()}
    api_doc = openapi(served)

    def error(status: int, message: str) -> JSONResponse:
        stats["errors"] += 1
        # one line, and writable as UTF-8 whatever a message quoted
        line = " ".join(str(message).split()).encode("utf-8", "backslashreplace").decode("utf-8")
        return JSONResponse({"error": line}, status_code=status)

    async def read_body(request: Request) -> bytes:
        length = request.headers.get("content-length")
        if length is not None:
            if not length.isdigit():
                raise RequestError(400, "bad Content-Length")
            if int(length) > max_bytes:
                raise RequestError(413, f"the request body has {length} bytes; the limit is {max_bytes}")
        chunks, size = [], 0
        try:
            async for chunk in request.stream():
                size += len(chunk)
                if size > max_bytes:
                    raise RequestError(413, f"the request body is over the limit of {max_bytes} bytes")
                chunks.append(chunk)
        except ClientDisconnect:
            raise RequestError(400, "the client went away") from None
        return b"".join(chunks)

    counting = threading.Lock()

    def count(key: str, by: int) -> None:
        with counting:
            stats[key] += by

    def work(body: bytes | dict, name: str, job: Job, opts: Options | None = None,
             trim: bool = False) -> tuple[bytes, str]:
        count("working", 1)
        try:
            return answer(body, name, served, job, opts, tokenizers)
        except Cancelled:
            count("stopped", 1)
            raise
        finally:
            count("working", -1)
            if trim:
                release_memory()   # the request's sentences and tables are freed by now

    def late() -> Response:
        if stopping.is_set():
            return error(503, "the server is stopping")
        return error(503, f"the request took longer than the limit of {timeout:g} s")

    def late_for(job: Job | None) -> Response:
        if stopping.is_set() or job is None or job.limit == timeout:
            return late()
        return error(503, f"the request took longer than its limit of {job.limit:g} s ({timeout:g} s "
                          f"per {TIMEOUT_WORDS:,} words)")

    async def finished(fut, job: Job):
        """The worker's answer, waited for until the request's deadline (which grows once its
        words are counted: ``Job.words``)."""
        while True:
            left = job.deadline - time.monotonic()
            try:
                return await asyncio.wait_for(asyncio.shield(fut), max(left, 0.0))
            except asyncio.TimeoutError:
                if time.monotonic() >= job.deadline:
                    raise

    def endpoint(name: str):
        async def handle(request: Request) -> Response:
            stats["requests"] += 1
            job, trim = None, False
            try:
                if stopping.is_set():
                    raise Cancelled()
                body = await read_body(request)
                job = Job(timeout, stopping)
                loop = asyncio.get_running_loop()
                if len(body) > BIG_BYTES:
                    trim = True
                    fut = loop.run_in_executor(big, work, body, name, job, None, True)
                else:
                    # a small body is checked at once: a mistake is its 4xx whatever the load
                    data = decode_body(body)
                    opts = check_request(data, name, served, tokenizers)
                    fut = loop.run_in_executor(pool, work, data, name, job, opts)
                    del data
                del body
                content, media = await finished(fut, job)
            except RequestError as e:
                return error(e.status, e.message)
            except (asyncio.TimeoutError, Cancelled):
                if job is not None:
                    job.cancel()  # the worker stops at its next check
                return late_for(job)
            except UserError as e:
                return error(400, str(e))
            if not trim:
                return Response(content, media_type=media)
            # and again once the answer is written (the transport's buffer held a copy)
            return Response(content, media_type=media,
                            background=BackgroundTask(release_memory))
        return handle

    async def models(request: Request) -> Response:
        return JSONResponse(models_doc)

    async def health(request: Request) -> Response:
        return JSONResponse({"status": "ok", "models": len(served),
                             "uptime_s": round(time.time() - stats["started"], 1),
                             "requests": stats["requests"], "errors": stats["errors"],
                             "working": stats["working"], "stopped": stats["stopped"]})

    async def index(request: Request) -> Response:
        return HTMLResponse(page)

    async def api(request: Request) -> Response:
        return JSONResponse(api_doc)

    async def http_error(request: Request, exc: HTTPException) -> Response:
        messages = {404: f"no such endpoint: {request.url.path}",
                    405: f"{request.method} is not allowed on {request.url.path}"}
        return error(exc.status_code, messages.get(exc.status_code, exc.detail))

    async def internal(request: Request, exc: Exception) -> Response:
        return error(500, f"internal error: {type(exc).__name__}")

    routes = [Route("/", index, methods=["GET"]), Route("/models", models, methods=["GET"]),
              Route("/health", health, methods=["GET"]),
              Route("/openapi.json", api, methods=["GET"])]
    routes += [Route(f"/{ep}", endpoint(ep), methods=["POST"]) for ep in (*endpoints(), "pipeline")]
    app = Starlette(routes=routes, exception_handlers={HTTPException: http_error, Exception: internal},
                    middleware=[Middleware(HostGuard, hosts=tuple(hosts), allow=tuple(allow_hosts),
                                           on_refuse=error)])
    app.state.pool = pool
    app.state.big = big
    app.state.stopping = stopping
    return app

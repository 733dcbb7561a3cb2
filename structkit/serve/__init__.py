"""`structkit serve`: models loaded once behind a small JSON API, and a web page that draws
the result (``structkit/web/index.html``).

The server is Starlette on uvicorn (the ``serve`` extra). Starlette because it is a thin,
well-kept ASGI toolkit with no opinions about models or validation (we check the few JSON fields
ourselves, to give structkit's one-line messages), and uvicorn because it is the reference ASGI
server: it handles keep-alive, SIGTERM (a graceful stop) and needs nothing compiled. Inference is
plain synchronous Python and numba; it runs in a thread pool so that the event loop keeps
accepting and timing requests, with one lock per model (the decoders' work arrays are not meant
to be shared by two threads at once).

One request cannot stall the others: its work (JSON decoding, tokenising, each model, writing the
answer) runs in chunks of sentences, and between chunks it checks its deadline and the server's
stop flag, so a request past its time, or a server told to stop, stops within one chunk instead
of running on unseen; a model's lock is a first-come first-served lock taken per chunk, so small
requests take their turn between a big request's chunks; and big bodies have their own lane (one
thread), so several at once cannot occupy every worker. Slow clients are bounded at the
connection: a request's headers and body must arrive within ``--read-timeout`` and at most
``--max-connections`` connections are open (a new one closes the longest-idle connection that
is between requests). A Host header naming someone else's domain, or a cross-origin Origin on
a POST, is refused (DNS rebinding).

Requests never name files: the models are the ones given on the command line, by name.
Every error is ``{"error": "one line"}`` with its status code; never a traceback.

The package, from the ground up: ``limits`` (the limits, a request's deadline, a model's lock),
``registry`` (the models and tokenizers loaded), ``inputs`` (a request's fields checked and its
sentences read), ``views`` (a sentence as JSON, CoNLL-U or a picture), ``inference`` (running
the models; a request's whole work), ``app`` (the Starlette application) and ``server``
(uvicorn: the socket, the guards on connections, and the command's start and stop). Their
names are handed on here (``from structkit.serve import answer``).
"""
from __future__ import annotations

from structkit.serve.app import LOCAL_NAMES, HostGuard, create_app, openapi, release_memory
from structkit.serve.inference import WARM_TEXT, answer, infer, run, warm_up
from structkit.serve.inputs import Options, check_request, decode_body, parse_request, read_sentences
from structkit.serve.limits import (BIG_BYTES, CHUNK_WORDS, MAX_BYTES, MAX_CONNECTIONS,
                                    MAX_SENTENCE_WORDS, MAX_WORDS, PIECE_CHARS, READ_TIMEOUT,
                                    TIMEOUT, TIMEOUT_WORDS, Cancelled, FairLock, Job, RequestError)
from structkit.serve.registry import (Served, ServedTokenizer, Tokenizers, endpoints, load_models,
                                      load_tokenizers, pipeline_tokenizers)
from structkit.serve.server import bind_socket, guarded_protocol, serve
from structkit.serve.views import sentence_view, span_colours, to_conllu, to_json

__all__ = ["MAX_BYTES", "TIMEOUT", "TIMEOUT_WORDS", "MAX_SENTENCE_WORDS", "MAX_WORDS", "PIECE_CHARS", "CHUNK_WORDS",
           "BIG_BYTES", "READ_TIMEOUT", "MAX_CONNECTIONS", "RequestError", "Cancelled", "Job",
           "FairLock", "endpoints", "Served", "load_models", "ServedTokenizer", "Tokenizers",
           "load_tokenizers", "pipeline_tokenizers", "Options", "parse_request",
           "decode_body", "check_request", "read_sentences", "to_json", "span_colours",
           "sentence_view", "to_conllu", "WARM_TEXT", "run", "infer",
           "answer", "warm_up", "release_memory", "openapi", "LOCAL_NAMES", "HostGuard",
           "create_app", "guarded_protocol", "bind_socket", "serve"]

"""`structkit serve`: the JSON API and web page."""
from __future__ import annotations

import click

from structkit.errors import UserError


@click.command(short_help="A JSON API and a web page over models loaded once (the serve extra).")
@click.option("-m", "--model", "models", multiple=True, required=True, metavar="[NAME=]PATH",
              help="A pos, chunk, ner, parse or morph model, or a pipeline (`structkit train "
                   "--task pipeline`); repeat for more. Named by the file's stem, or NAME=PATH.")
@click.option("--tokenizer", "tokenizers", multiple=True, metavar="[NAME=]PATH",
              help="A tokenizer trained with `structkit train --task tokenize`, for the text of "
                   "requests: a request's \"lang\" names it (by the file's stem, or NAME), and the "
                   "first given tokenises text that names no lang, in place of the English rules. "
                   "Repeatable.")
@click.option("--host", default="127.0.0.1", show_default=True, help="The address to listen on.")
@click.option("--port", type=click.IntRange(0, 65535), default=8080, show_default=True,
              help="The port (0: any free one; the line on stderr says which).")
@click.option("--max-bytes", type=click.IntRange(min=1), default=1 << 20, show_default=True,
              help="Largest request body (413 above it).")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=10.0,
              show_default=True, help="Seconds a request of up to 10,000 words may take, queueing "
                                      "included (503 after); a larger one has as many times that as it "
                                      "has 10,000 words (100,000 words: ten times).")
@click.option("--allow-host", "allow_hosts", multiple=True, metavar="NAME",
              help="Also accept this name in the Host header, and cross-origin POSTs from pages "
                   "on it (repeatable; '*' for any). By default only localhost names, IP "
                   "addresses and the --host value.")
@click.option("--read-timeout", type=click.FloatRange(min=0, min_open=True), default=15.0,
              show_default=True, help="Seconds for a request's headers and body to arrive (408 after).")
@click.option("--max-connections", type=click.IntRange(min=1), default=1000, show_default=True,
              help="Open connections at most (and below the open-file limit).")
def serve(models, tokenizers, host, port, max_bytes, timeout, allow_hosts, read_timeout,
          max_connections) -> None:
    """Serve models over HTTP: POST /tag, /chunk, /ner, /parse, /morph and /pipeline take JSON (text,
    token lists or CoNLL-U) and return tokens with offsets, labels, scores, spans and trees
    (or CoNLL-U); text is tokenised by the English rules or a --tokenizer model; GET /models,
    /health, /openapi.json; GET / is a web page that draws the result.
    Each model is loaded once and run once before the first request; SIGTERM stops cleanly."""
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        raise UserError("structkit serve needs the serve extra: pip install 'structkit-nlp[serve]'") from None
    from structkit.serve import serve as run_server

    run_server(list(models), host, port, max_bytes, timeout,
               echo=lambda line: click.echo(line, err=True), allow_hosts=tuple(allow_hosts),
               read_timeout=read_timeout, max_connections=max_connections,
               tokenizer_specs=list(tokenizers))

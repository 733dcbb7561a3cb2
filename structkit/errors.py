"""The one exception a user's mistake raises: the CLI prints it as a single line and exits 1."""
from __future__ import annotations

MAX_MESSAGE = 1000   # characters of a message shown; the rest is cut (a message quotes input)


def quote(value: str, n: int = 40) -> str:
    """``repr(value)`` of at most ``n`` characters of it, saying how long it is when cut: what a
    message quotes of the input (a 10 MB line stays a line)."""
    if len(value) <= n:
        return repr(value)
    return f"{value[:n]!r}... ({len(value):,} characters)"


class UserError(Exception):
    """A problem caused by user input (bad file, bad option, wrong model).

    ``str(err)`` is the one line shown to the user: ``path:line: message`` when a
    location is known.
    """

    def __init__(self, message: str, path: str | None = None, line: int | None = None):
        self.message = message
        self.path = path
        self.line = line
        super().__init__(self.format())

    def __reduce__(self):  # pickled whole (batch workers send errors back to the writer)
        return (type(self), (self.message, self.path, self.line))

    def format(self) -> str:
        where = ""
        if self.path is not None:
            where = str(self.path)
            if self.line is not None:
                where += f":{self.line}"
            where += ": "
        message = self.message
        if len(message) > MAX_MESSAGE:
            message = message[:MAX_MESSAGE] + f"... (message cut: {len(message):,} characters)"
        return where + message

"""The one exception a user's mistake raises: the CLI prints it as a single line and exits 1."""
from __future__ import annotations


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
        return where + self.message

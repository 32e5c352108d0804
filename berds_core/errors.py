"""One error type for bad input: it names the file, the line and the field."""
from __future__ import annotations


class InputError(ValueError):
    """Bad user input. ``str(err)`` is the one-line message the CLI prints.

    ``line`` is 1-based (``None`` when the problem is the whole file) and
    ``field`` names the offending field (``None`` when no field applies).
    """

    def __init__(self, path, line: int | None, field: str | None, message: str):
        self.path = str(path)
        self.line = line
        self.field = field
        self.message = message
        super().__init__(str(self))

    def __str__(self) -> str:
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        what = f" field '{self.field}':" if self.field else ""
        return f"{where}:{what} {self.message}"

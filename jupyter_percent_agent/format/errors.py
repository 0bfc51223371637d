"""The one error the format core raises: bad input, naming the line it is on; and its kind for
a file refused for safety (a link out of its folder, a FIFO, a device, /proc)."""

from __future__ import annotations

from jupyter_percent_agent.errors import Kind, PercentAgentError


class FormatError(PercentAgentError, ValueError):
    """A message file that cannot be read as meant.

    ``line`` is 1-based (``None`` when no single line is at fault); ``path`` is the file, when
    known. The message names both, so it can be shown to a user as is.
    """

    error_kind = Kind.BAD_FILE

    def __init__(self, message: str, *, line: int | None = None, path: str | None = None):
        self.reason = message
        self.line = line
        self.path = path
        where = ""
        if path is not None and line is not None:
            where = f"{path}:{line}: "
        elif line is not None:
            where = f"line {line}: "
        elif path is not None:
            where = f"{path}: "
        super().__init__(where + message)

    def with_path(self, path: str | None) -> FormatError:
        """The same error, naming ``path`` too."""
        if path is None or self.path is not None:
            return self
        return type(self)(self.reason, line=self.line, path=path)


class RefusedFile(FormatError):
    """A path refused for safety, not for its text: a symbolic link leading out of its
    folder, or not a regular file. Front ends report it as a refusal (``tce`` exit 6)."""

    error_kind = Kind.REFUSED

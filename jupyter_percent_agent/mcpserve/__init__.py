"""``tce mcp serve``: message files and task documents offered to other agents over MCP.

The tools (a front end over the same use cases as ``tce``): list and read conversations,
append a message and get the reply (``runtime.send``, the turn ``tce chat`` runs), run a task
document (``tasks.api.arun_task``), search a SOP folder's index. With one folder served,
paths are relative to it (``sub/file.msg.md``; the folder's own name in front is still
understood); with several, they start with the folder's own name (``NAME/sub/file.msg.md``).
The tools answer with paths written the same way. They stay inside the folders served; the
trust rules are those of ``tce`` (a file in an untrusted folder gets no toolbox, no endpoint
of its own, no MCP servers of its own).

The SDK's ``MCPServer`` speaks the protocol, over stdio or streamable HTTP. Over HTTP it
listens on 127.0.0.1 only, answers only requests bearing the token (the user's own, from
``--token-file``, ``PERCENT_AGENT_MCP_TOKEN`` or ``<config>/mcp-serve-token``, else a new one
printed at start), and the SDK's transport security
refuses other Hosts and any browser Origin not allowed by name: no other local process or
web page may spend the user's keys.
"""

from __future__ import annotations

import hmac
import os
import re
import secrets
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from jupyter_percent_agent import format as fmt
from jupyter_percent_agent import trust
from jupyter_percent_agent.errors import Kind, PercentAgentError, report

TOKEN_NAME = "mcp-serve-token"
TOKEN_ENV = "PERCENT_AGENT_MCP_TOKEN"
BEARER = re.compile(r"[A-Za-z0-9._~+/-]+=*")
SKIP_DIRS = {".git", ".ipynb_checkpoints", "node_modules", "__pycache__", ".venv"}


class ServeError(PercentAgentError, ValueError):
    """A request to the served folders that cannot be answered (unknown folder or file)."""

    error_kind = Kind.USAGE


class Folders:
    """The folders served, by name; paths inside them, both ways."""

    def __init__(self, dirs: Sequence[Path]) -> None:
        self.by_name: dict[str, Path] = {}
        for d in dirs:
            real = Path(d).resolve()
            if not real.is_dir():
                raise ServeError(f"{d}: no such folder")
            name, n = real.name or "root", 2
            while name in self.by_name:
                name, n = f"{real.name}-{n}", n + 1
            self.by_name[name] = real

    @property
    def single(self) -> tuple[str, Path] | None:
        """The one folder served (its name and path), or None when there are several."""
        return next(iter(self.by_name.items())) if len(self.by_name) == 1 else None

    def how_paths_go(self) -> str:
        """How paths are written, for the other agent."""
        if self.single:
            name, root = self.single
            return f"Paths are relative to the served folder {name} ({root})."
        return "Paths start with a served folder's name: " + ", ".join(self.by_name)

    def shown(self, path: Path) -> str:
        for name, root in self.by_name.items():
            if path.is_relative_to(root):
                inside = path.relative_to(root).as_posix()
                return inside if self.single else f"{name}/{inside}"
        raise ServeError(f"{path} is not in a served folder")

    def resolve(self, shown: str, *, suffix: str | None = ".md", directory: bool = False) -> Path:
        """``NAME/rest`` as a real path inside the served folder NAME; with one folder served,
        also ``rest`` alone, or an absolute path inside it (``TrustError`` for a path that
        leaves it)."""
        if self.single:
            return self._resolve_in_single(str(shown).strip(), suffix=suffix,
                                           directory=directory)
        name, _, rest = str(shown).strip().lstrip("/").partition("/")
        if name not in self.by_name:
            known = ", ".join(self.by_name)
            raise ServeError(f"{shown!r}: paths start with a served folder's name ({known})")
        root = self.by_name[name]
        if not rest:
            if directory:
                return root
            raise ServeError(f"{shown!r} names a folder, not a file")
        return trust.resolve_inside(root, rest, what="path", suffix=suffix, directory=directory)

    def _resolve_in_single(self, text: str, *, suffix: str | None, directory: bool) -> Path:
        """A path in the one folder served: relative to it; ``NAME/rest`` as before, unless
        the folder holds an entry called NAME itself (then it is that entry's path)."""
        assert self.single is not None
        name, root = self.single
        if os.path.isabs(text):
            inside = os.path.abspath(text)
            if not Path(inside).is_relative_to(root):
                raise trust.TrustError(f"path {text!r} is outside the served folder {root}",
                                       "write it relative to the served folder", kind="path")
            text = os.path.relpath(inside, root)
        first, _, rest = text.partition("/")
        if first == name and not os.path.lexists(root / first):
            text = rest
        if text in ("", "."):
            if directory:
                return root
            raise ServeError(f"{text or name!r} names the served folder, not a file")
        return trust.resolve_inside(root, text, what="path", suffix=suffix, directory=directory)

    def conversations(self) -> list[Path]:
        found = []
        for root in self.by_name.values():
            for here, dirs, files in os.walk(root):
                dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("."))
                found += [Path(here) / f for f in sorted(files) if fmt.is_message_path(f)]
        return found


def list_conversations(folders: Folders) -> list[dict[str, Any]]:
    """Every message file served: its path and its number of messages."""
    from jupyter_percent_agent.runtime.history import conversation_cells

    out = []
    for path in folders.conversations():
        try:
            count: int | str = len(conversation_cells(fmt.read(path)))
        except (PercentAgentError, OSError, ValueError) as exc:
            count = f"unreadable: {exc}"
        out.append({"path": folders.shown(path), "messages": count})
    return out


def read_conversation(folders: Folders, path: str) -> str:
    """The text of a message file (Markdown, as written)."""
    real = folders.resolve(path)
    if not real.is_file():
        raise ServeError(f"{path!r}: no such file")
    return fmt.read_text(real, real=True)  # as checked: no link followed along it


async def send_message(
    folders: Folders, path: str, message: str, agent: str | None = None
) -> dict[str, Any]:
    """Append ``message`` to the file and run the turn ``tce chat`` runs; its reply."""
    from jupyter_percent_agent.runtime.conversation import FileConversation, send
    from jupyter_percent_agent.runtime.transport import LocalTransport
    from jupyter_percent_agent.runtime.turn import RunOptions

    if not message.strip():
        raise ServeError("the message is empty")
    real = folders.resolve(path)
    conversation = FileConversation(real, message)
    run = await send(
        conversation, RunOptions(agent=agent, base_dir=real.parent), transport=LocalTransport()
    )
    return {"path": folders.shown(real), **run.to_json()}  # its error: the line a file keeps


async def run_task(
    folders: Folders, sop: str, task_id: str, context: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Run a task document of a served SOP folder, as ``tce run`` does."""
    from jupyter_percent_agent.tasks.api import arun_task

    root = folders.resolve(sop, suffix=None, directory=True)
    if root in folders.by_name.values():  # its runs/ and toolbox/ would be those above it
        raise ServeError(f"{sop!r} is a served folder itself; name a SOP folder inside it")
    result = await arun_task(root, task_id, context or {})
    assert result.transcript is not None  # a run that began has one
    # what tce run --json prints, the transcript shown as a path in the served folders
    return {**result.to_json(), "transcript": folders.shown(result.transcript)}


def search_sops(folders: Folders, sop: str, query: str, k: int = 5) -> list[dict[str, Any]]:
    """The documents of a served SOP folder that best match ``query``."""
    from jupyter_percent_agent.tasks.index import Index

    if not query.strip():
        raise ServeError("the query is empty")
    root = folders.resolve(sop, suffix=None, directory=True)
    with Index.open(root) as index:
        return [hit.to_json() for hit in index.search(query, max(1, min(k, 50)))]


def build_server(dirs: Sequence[Path]) -> Any:
    """The SDK's ``MCPServer`` with the tools above, over ``dirs``."""
    from mcp.server.mcpserver import MCPServer

    folders = Folders(dirs)
    server = MCPServer(
        "jupyter-percent-agent",
        instructions=(
            "Agent conversations kept as Markdown message files (.msg.md) and task documents. "
            + folders.how_paths_go()
        ),
    )

    from mcp.server.mcpserver.exceptions import ToolError

    def told(exc: BaseException) -> ToolError:
        """Our errors reach the other agent as their one line (the SDK hides others)."""
        shown = report(exc)
        return ToolError(shown.message if shown is not None else str(exc))

    @server.tool(name="list_conversations")
    def _list() -> list[dict[str, Any]]:
        """The message files (.msg.md) under the served folders, with their numbers of messages."""
        return list_conversations(folders)

    @server.tool(name="read_conversation")
    def _read(path: str) -> str:
        """The Markdown text of one message file (path as list_conversations gives it)."""
        try:
            return read_conversation(folders, path)
        except (PercentAgentError, OSError) as exc:
            raise told(exc) from None

    @server.tool(name="send_message")
    async def _send(path: str, message: str, agent: str | None = None) -> dict[str, Any]:
        """Append a message to a message file (a new file if there is none) and get the
        agent's reply, as `tce chat` does; the file keeps both."""
        try:
            return await send_message(folders, path, message, agent)
        except (PercentAgentError, OSError) as exc:
            raise told(exc) from None

    @server.tool(name="run_task")
    async def _run(sop: str, task_id: str, context: dict[str, Any] | None = None) -> dict[str, Any]:
        """Run task document TASK_ID of the SOP folder SOP on a context, as `tce run` does."""
        try:
            return await run_task(folders, sop, task_id, context)
        except (PercentAgentError, OSError) as exc:
            raise told(exc) from None

    @server.tool(name="search_sops")
    def _search(sop: str, query: str, k: int = 5) -> list[dict[str, Any]]:
        """The task documents of the SOP folder SOP that best match QUERY (by words and
        meaning), best first."""
        try:
            return search_sops(folders, sop, query, k)
        except (PercentAgentError, OSError) as exc:
            raise told(exc) from None

    return server


def serve_token(env: Any = None, token_file: Path | None = None) -> tuple[str, str | None]:
    """The bearer token, and where it came from (None: made now; print it so a client can
    use it): ``token_file`` (``-``: standard input), else ``PERCENT_AGENT_MCP_TOKEN``, else
    the user's own (``<config>/mcp-serve-token``), else a new one. Never from the command
    line, where other local users' process lists show it. ``ServeError`` for a source that
    holds no bearer token."""
    env = os.environ if env is None else env
    if token_file is not None:
        where = "standard input" if str(token_file) == "-" else str(token_file)
        try:
            text = sys.stdin.read() if str(token_file) == "-" else token_file.read_text("utf-8")
        except OSError as exc:
            raise ServeError(f"{where}: cannot read the token ({exc.strerror or exc})") from None
        except UnicodeDecodeError:
            raise ServeError(f"{where}: the token is not UTF-8 text") from None
        return _bearer(text, where), where
    if env.get(TOKEN_ENV, "").strip():
        return _bearer(env[TOKEN_ENV], TOKEN_ENV), TOKEN_ENV
    path = trust.config_dir(env) / TOKEN_NAME
    try:
        saved = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        saved = ""
    if saved:
        return _bearer(saved, str(path)), str(path)
    return secrets.token_urlsafe(32), None


def _bearer(text: str, where: str) -> str:
    """The token ``text`` holds (surrounding blank space ignored), checked to be one an HTTP
    ``Authorization: Bearer`` header can carry (RFC 6750)."""
    token = text.strip()
    if not token:
        raise ServeError(f"{where}: no token (it is empty)")
    if not BEARER.fullmatch(token):
        raise ServeError(
            f"{where}: not a bearer token (one line of letters, digits and -._~+/, "
            "then any = padding)"
        )
    return token


def bearer_only(app: Any, token: str) -> Any:
    """An ASGI app that answers 401 to any HTTP request without ``Authorization: Bearer
    TOKEN`` (compared in constant time), before the MCP app sees it."""
    expected = f"Bearer {token}".encode()

    async def guarded(scope: Any, receive: Any, send: Any) -> None:
        if scope.get("type") == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(given, expected):
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [
                            (b"content-type", b"text/plain"),
                            (b"www-authenticate", b"Bearer"),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": b"a bearer token is needed"})
                return
        await app(scope, receive, send)

    return guarded


def http_app(
    dirs: Sequence[Path], token: str, port: int, allowed_origins: Sequence[str] = ()
) -> Any:
    """The streamable HTTP app: bearer token, Host and Origin checked."""
    from mcp.server.transport_security import TransportSecuritySettings

    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[f"127.0.0.1:{port}", f"localhost:{port}"],
        allowed_origins=list(allowed_origins),
    )
    app = build_server(dirs).streamable_http_app(transport_security=security, host="127.0.0.1")
    return bearer_only(app, token)

"""The notebook a cell runs against: the file on disk, plus what the front end knows better.

The kernel never writes the file (JupyterLab owns the document and saves it), so the disk copy
may lag behind the editor: the running cell may be new or edited, and cells run earlier in
this session may not be saved yet. ``KernelMemory.prepare`` lays over the file the running
cell's live source and what this kernel ran and has not seen saved; ``LiveConversation`` is
the kernel's side of ``runtime.send``: that notebook in, the run's outputs and summaries kept
for the rest of the session. Only the format core and the runtime's light modules are
imported here (no nbformat, jupytext or litellm).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jupyter_percent_agent import format as fmt
from jupyter_percent_agent.errors import PercentAgentError
from jupyter_percent_agent.format.notebook import is_json_mime, join_source
from jupyter_percent_agent.trust.withholding import Withheld

EMPTY = ""

if TYPE_CHECKING:
    from jupyter_percent_agent.runtime import Plan, Run, RunOptions


def notebook_path(env: Mapping[str, str] | None = None) -> Path | None:
    """The notebook this kernel serves, from ``JPY_SESSION_NAME`` (an absolute path when
    JupyterLab starts the kernel; a relative one is taken from the working directory)."""
    env = os.environ if env is None else env
    name = (env.get("JPY_SESSION_NAME") or "").strip()
    if not name:
        return None
    path = Path(name)
    if not path.is_absolute():
        path = Path.cwd() / path
        if not path.exists() and (Path.cwd() / Path(name).name).exists():
            path = Path.cwd() / Path(name).name  # a path relative to the server root
    return path


def live_notebook_path(state: Any, path: Path | None) -> Path | None:
    """The notebook's path as the live state names it (``path`` under the server's ``root``)
    when it differs from ``path`` (``JPY_SESSION_NAME``, fixed when the kernel started): the
    user renamed or moved the open notebook. ``path`` when the state names none, or a file
    that is not there. Whether the kernel follows it is ``ServedNotebook``'s decision."""
    if not isinstance(state, dict):
        return path
    rel, root = state.get("path"), state.get("root")
    if not (isinstance(rel, str) and rel and isinstance(root, str) and root):
        return path
    parts = [p for p in rel.split("/") if p]
    if not parts or ".." in parts:
        return path
    named = Path(os.path.expanduser(root)).joinpath(*parts)
    return named if named != path and named.is_file() else path


def file_identity(path: Path | None) -> tuple[int, int] | None:
    """The device and inode of the file at ``path`` (None: no file there): what a rename
    keeps, and a save that replaces the file changes."""
    if path is None:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


class ServedNotebook:
    """The notebook this kernel serves (``JPY_SESSION_NAME`` at start), and its device and
    inode when last seen. The live state names the notebook's path too, when the user renamed
    or moved it; but the state comes from the client (on a comm, ``_comm``), so it is
    followed only to the same file (a rename keeps device and inode) or when both folders
    are trusted: it never moves a conversation into a folder whose trust it would borrow, nor
    makes another file the conversation."""

    def __init__(self, path: Path | None) -> None:
        self.path, self.identity = path, file_identity(path)

    def resolve(self, live: Any) -> tuple[Path | None, Withheld | None]:
        """The notebook to read for a request whose live state is ``live``; and why trust is
        withheld when the state names another file (then the served one is read)."""
        named = live_notebook_path(live, self.path)
        withheld = None
        if named is not None and named != self.path:
            if self._follows(named):
                self.path = named
            else:
                withheld = Withheld(
                    f"the notebook is now {named}, not the file this kernel was started for "
                    f"({self.path or 'none'})", "restart the kernel")
        self.identity = file_identity(self.path) or self.identity
        return self.path, withheld

    def _follows(self, named: Path) -> bool:
        if self.path is None:
            return False
        if self.identity is not None and file_identity(named) == self.identity:
            return True
        from jupyter_percent_agent import trust

        return trust.is_trusted(self.path.parent) and trust.is_trusted(named.parent)


def read_notebook(path: Path | None) -> dict[str, Any]:
    """The saved notebook: a message file through the format core, an ``.ipynb`` as JSON,
    a missing or empty file as an empty conversation. ``FormatError`` for a bad file."""
    if path is None or not os.path.lexists(path):
        return fmt.reads(EMPTY, path="untitled.msg.md")
    text = fmt.read_text(path)  # a link out of its folder, a FIFO, a device: FormatError
    if not text.strip():
        return fmt.reads(EMPTY, path="untitled.msg.md")
    if path.suffix == ".ipynb":  # sources and texts as lists of lines, as nbformat saves
        try:
            nb = json.loads(text)
        except ValueError as exc:
            raise fmt.FormatError(f"not a notebook (not JSON: {getattr(exc, 'msg', exc)})",
                                  line=getattr(exc, "lineno", None), path=str(path)) from None
        if not isinstance(nb, dict):
            raise fmt.FormatError("not a notebook (not a JSON object)", path=str(path))
        return joined(nb)
    return fmt.reads(text, path=str(path))


def joined(nb: dict[str, Any]) -> dict[str, Any]:
    """``nb`` (an ``.ipynb`` as saved) with every cell's source and every output's text and
    data as one string, as the format core holds them (changed in place)."""
    for cell in nb.get("cells") or []:
        if isinstance(cell, dict):
            cell["source"] = join_source(cell.get("source") or "")
            for out in cell.get("outputs") or []:
                if isinstance(out, dict) and isinstance(out.get("text"), list):
                    out["text"] = join_source(out["text"])
                data = out.get("data") if isinstance(out, dict) else None
                for mime, value in (data or {}).items():
                    if isinstance(value, list) and not is_json_mime(mime):
                        data[mime] = join_source(value)
    return nb


@dataclass
class _Ran:
    source: str
    outputs: list[dict[str, Any]] = field(default_factory=list)


class KernelMemory:
    """What this kernel ran, by nbformat cell id, in the order it ran it, and the summaries
    it made (stored with their cells, as ``tce`` stores them in the file)."""

    def __init__(self) -> None:
        self.ran: dict[str, _Ran] = {}
        self.summaries: dict[str, tuple[str, str]] = {}

    def record(self, nb_id: str, source: str, outputs: list[dict[str, Any]]) -> None:
        """Remember a cell that ran and what it produced. A re-run replaces it but keeps the
        place it first ran in: cells are usually run top to bottom the first time, so that
        order is the kernel's best guess at the notebook's for cells not saved yet (re-running
        an earlier message must not put it after the ones below it)."""
        self.ran[nb_id] = _Ran(source, [dict(o) for o in outputs])

    def prepare(self, nb: dict[str, Any], nb_id: str | None, source: str, *,
                rerun: bool = False) -> tuple[dict[str, Any], str, str]:
        """Lay the live state over ``nb`` (changed in place); returns it, the nbformat id of
        the running cell and its footnote id (what ``run_cell`` takes).

        - cells this kernel ran that the file lacks are appended, in the order they first ran
          (the running cell among them, if it ran before);
        - such a cell found in the file with its source unchanged and no outputs gets the
          outputs this kernel gave it (it ran after the last save); with ``rerun`` (a client
          that runs a saved file's cells again and saves them all at the end: nbclient), it
          gets them whatever outputs the file has;
        - the running cell is found by id (a JupyterLab UUID by the short id a save gives it;
          with no nbformat id, by its text), given its live source and no outputs (the front
          end clears them; a ``[task]`` cell keeps its last ones), or appended when new.
        """
        cells = nb.setdefault("cells", [])
        by_id = {c.get("id"): c for c in cells}
        if nb_id is not None and not fmt.NBFORMAT_ID.fullmatch(nb_id):
            nb_id = None  # not an nbformat id (VS Code sends a cell URI): match by text
        if nb_id is None:
            nb_id = _match_by_text(cells, source, set(self.ran)) or fmt.new_id()
        else:  # JupyterLab's UUID ids are saved short (contents.tidy_cells): the same form
            nb_id = next((f for f in fmt.short_ids(nb_id) if f in by_id or f in self.ran),
                         fmt.short_id(nb_id, set(by_id)))
        for rid, ran in self.ran.items():
            if rid == nb_id:
                if nb_id not in by_id:  # unsaved, run before: back in its first place
                    by_id[nb_id] = fmt.new_message(source, cell_id=nb_id)
                    cells.append(by_id[nb_id])
                continue
            cell = by_id.get(rid)
            if cell is None:
                cell = fmt.new_message(ran.source, cell_id=rid)
                cell["outputs"] = [dict(o) for o in ran.outputs]
                cells.append(cell)
                by_id[rid] = cell
            elif (rerun or not cell.get("outputs")) and fmt.message_text(cell) == ran.source:
                cell["outputs"] = [dict(o) for o in ran.outputs]
        cell = by_id.get(nb_id)
        if cell is None:
            cell = fmt.new_message(source, cell_id=nb_id)
            cells.append(cell)
        else:
            cell["source"] = source
            if cell.get("cell_type") == "code":
                cell["outputs"] = self._outputs_kept(cell)
        return nb, cell["id"], fmt.cell_id(cell)

    def _outputs_kept(self, cell: dict[str, Any]) -> list[dict[str, Any]]:
        """What the running cell starts from: nothing (the front end cleared its outputs), but
        a ``[task]`` cell keeps its last ones, as in the file: an interrupted workflow's
        output names its transcript, and running the cell again continues it."""
        if fmt.cell_kind(cell) != "task":
            return []
        ran = self.ran.get(cell.get("id"))
        return [dict(o) for o in (ran.outputs if ran is not None else cell.get("outputs") or [])]


def _match_by_text(cells: list[dict[str, Any]], source: str, skip: set[str]) -> str | None:
    """The id of a code cell whose text is ``source`` (a front end that sends no cell id):
    the first not already run in this session, else the first."""
    found = [c.get("id") for c in cells
             if c.get("cell_type") == "code" and fmt.message_text(c) == source]
    for cid in found:
        if cid not in skip:
            return cid
    return found[0] if found else None


LIVE_KEYS = ("agent", "history", "summary", "summary_hash", "definition", "name")
"""The cell attributes the live state is authoritative for (present: set; absent: unset)."""


def lay_live_state(nb: dict[str, Any], state: Any) -> dict[str, Any]:
    """``nb`` (the saved file) made into the notebook on screen (changed in place): the cells
    in the state's order, deleted ones gone, new ones added, sources the state sends (cells
    not as saved) and the ``LIVE_KEYS`` attributes as the state says. Outputs stay the file's
    (and the kernel's, laid over by ``KernelMemory.prepare``), but for a cell the state sends
    ``outputs`` for (unsaved, made by a kernel before a restart). A state the kernel does not
    understand is ignored: the file is the fallback, as for front ends that send none."""
    if not isinstance(state, dict) or state.get("version") != 1:
        return nb
    entries = state.get("cells")
    if not isinstance(entries, list) or not all(
            isinstance(e, dict) and isinstance(e.get("id"), str) for e in entries):
        return nb
    saved = nb.get("cells") or []
    by_id = {c.get("id"): c for c in saved}
    taken = {c.get("id") for c in saved}
    cells = []
    for entry in entries:
        cid = entry["id"]
        cell = by_id.get(cid) or by_id.get(
            next((f for f in fmt.short_ids(cid) if f in by_id), None))
        source = entry.get("source")
        if cell is None:
            if not isinstance(source, str):
                continue  # neither in the file nor sent: nothing to show the model
            cell = _new_cell(str(entry.get("cell_type") or "code"), source,
                             fmt.short_id(cid, taken), entry)
            taken.add(cell["id"])
        elif isinstance(source, str):
            cell["source"] = source
        outputs = entry.get("outputs")
        if isinstance(outputs, list) and cell.get("cell_type") == "code":
            # unsaved outputs a kernel made before a restart: this one never saw them
            cell["outputs"] = [dict(o) for o in outputs
                               if isinstance(o, dict) and isinstance(o.get("output_type"), str)]
        fmt.set_cell_attrs(cell, {key: entry.get(key) for key in LIVE_KEYS})
        cells.append(cell)
    nb["cells"] = cells
    return nb


def _new_cell(cell_type: str, source: str, cid: str,
              entry: dict[str, Any] | None = None) -> dict[str, Any]:
    if cell_type == "code" and (entry or {}).get("kind") == "code":  # a [code] cell added
        lang = (entry or {}).get("lang")                               # on screen (proposed)
        return fmt.new_code_cell(source, language=lang if isinstance(lang, str) else None,
                                 cell_id=cid)
    if cell_type == "raw":
        return fmt.new_message(source, cell_id=cid, kind="raw")
    if cell_type == "markdown":  # a note, as JupyterLab itself makes one (never sent)
        return fmt.new_message(source, cell_id=cid, kind="note")
    return fmt.new_message(source, cell_id=cid)


class ProposedNotRun(PercentAgentError):
    """The cell a client that names no cell runs (nbclient: ``jupytext --execute``, papermill,
    ``nbconvert --execute``) is code a reply proposed: it is left, as a plain ``tce exec``
    leaves it. The user reads it first and runs it by name (``tce exec FILE --cell N``, or
    Shift+Enter, which names the cell)."""

    def __init__(self, cell_id: str) -> None:
        super().__init__(
            f"not run: cell {cell_id}, code a reply proposed; read it, then run it with "
            "tce exec FILE --cell N (or all of them with --proposed)"
        )


class LiveConversation:
    """The running cell of the notebook this kernel serves (``runtime.conversation``)."""

    def __init__(self, memory: KernelMemory, path: Path | None, nb_id: str | None,
                 source: str, live: Any = None) -> None:
        self.memory, self.path, self.nb_id, self.source = memory, path, nb_id, source
        self.live = live  # the notebook on screen (``lay_live_state``), when the front end sent it
        self.rerun = False  # found by its text (nbclient): this session's outputs win
        self.left: ProposedNotRun | None = None  # why the cell was left unrun (nbclient)
        self.kind = "message"

    def begin(self, options: RunOptions) -> tuple[dict[str, Any], Plan]:
        from jupyter_percent_agent.runtime.summaries import apply_summaries
        from jupyter_percent_agent.runtime.turn import find_cell, plan

        nb = lay_live_state(read_notebook(self.path), self.live)
        nb, self.nb_id, footnote_id = self.memory.prepare(nb, self.nb_id, self.source,
                                                          rerun=self.rerun)
        apply_summaries(nb, self.memory.summaries)
        cell = find_cell(nb, footnote_id)[1]
        self.kind = fmt.cell_kind(cell)
        if self.rerun and self.kind == "code" and fmt.cell_attrs(cell).get("proposed") is not None:
            self.left = ProposedNotRun(footnote_id)
            raise self.left
        return nb, plan(nb, footnote_id, options)

    def finish(self, run: Run) -> None:
        if self.nb_id is not None:
            self.memory.record(self.nb_id, self.source, list(run.outputs))
        self.memory.summaries.update(run.summaries)

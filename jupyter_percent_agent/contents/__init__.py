"""Contents manager and server extension that open message files as notebooks.

The contents manager is jupytext's own (``build_async_jupytext_contents_manager_class`` or its
sync twin) derived from whatever contents manager class the user configured, so that every
jupytext format and pairing keeps working. On top of it, message files (``NAME.msg.md``, and
a plain ``NAME.md`` whose content says so) go through the format core, by way of the jupytext
adapter (``jupyter_percent_agent.jupytext_format``). What this layer adds:

- the file's path reaches format detection, so an empty ``x.msg.md`` opens and saves as a
  message file (jupytext alone only sees the ``.md`` extension and the content);
- a malformed message file is an HTTP 400 whose message names the line, not a 500;
- a notebook that cannot be written as a message file is refused with a 400; the text is
  made before anything touches the disk, and an existing file is replaced by a rename
  (jupyter_server's own "atomic" writing truncates in place), so the old file stays whole;
- a message file paired with nothing is saved straight through the core, skipping jupytext's
  conversion of the whole notebook to NotebookNodes (pairs still go through jupytext);
- a new ``.msg.md`` notebook starts with what an empty message file reads as (agent kernel);
- a message notebook always opens on the agent kernel (``format.DEFAULT_KERNELSPEC``),
  whatever kernelspec its file names: "running a message" must never run it as another
  language's code. The file's own ``kernelspec`` and ``language_info`` ride along in
  ``metadata.percent_agent.file_metadata`` and are what a save writes back; the kernel picked
  in JupyterLab is never written into a message file (docs/format.md, "Opened in
  JupyterLab");
- a message notebook is handed out with the agent kernel's ``language_info``
  (``jupyter_percent_agent.kernel.LANGUAGE_INFO``) and saved without it. JupyterLab writes
  what the kernel says into the open notebook, which marked every message file modified as
  soon as it opened; given it up front, the kernel's answer changes nothing;
- a message notebook whose file is a symbolic link out of its folder, a FIFO, a device or a
  ``/proc`` file is refused (403) before anything reads or writes it (``format.safe_path``);
  a save through a link inside the folder writes the link's target and keeps the link;
- a jupytext configuration written in Python (``.jupytext.py``, read when hidden files are
  allowed) in a folder the user has not trusted is skipped with a warning in the server's
  log (``jupytext_format.python_config_refusal``), for every file, not only message files:
  jupytext would run it in the server, with the user's keys;
- a message notebook paired (front matter or ``jupytext.toml``) with a file out of its folder,
  or in a version-control, hidden or ``toolbox/`` folder, is refused (403) before jupytext reads
  or writes any of its pairs (``contents.pairing``);

The server extension (``_link_jupyter_server_extension``) sets
``ServerApp.contents_manager_class`` before the contents manager is created, and keeps it
derived if a later extension reloads the configured class; jupyter_server finds it through
``jupyter-config/jupyter_server_config.d/jupyter_percent_agent.json``, installed (wheel and
editable) into ``etc/jupyter/jupyter_server_config.d``.
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import os
from typing import Any

__all__ = [
    "MESSAGE_CM_MARKER",
    "build_message_contents_manager_class",
]

# Set on every class built here, so that building on top of one again is a no-op.
MESSAGE_CM_MARKER = "_percent_agent_message_files"


def _is_md(path: str) -> bool:
    return path.lower().endswith(".md")


def _translate(err: Exception, path: str, action: str) -> Exception | None:
    """A 400 for errors caused by a message file's text or by a notebook the core refuses."""
    from tornado.web import HTTPError

    from jupyter_percent_agent.format import FormatError

    cause: BaseException | None = err
    while cause is not None and not isinstance(cause, FormatError):
        cause = cause.__cause__ or cause.__context__
    if cause is None:
        return None
    line = getattr(cause, "line", None)
    where = f" at line {line}" if line is not None else ""
    message = f"Cannot {action} {path.strip('/')}{where}: {cause}"
    return HTTPError(400, message, reason=f"Malformed message file{where}")


def _replaceable(os_path: str, format: str | None) -> bool:
    """An existing Markdown file in a writable folder: the case where a rename is possible.

    A new file has no reader yet; jupyter_server's writing (and its modes) is right for it.
    """
    from jupyter_percent_agent.format import FormatError, safe_path

    if not (format == "text" and _is_md(os_path) and os.path.isfile(os_path)):
        return False
    try:
        target = safe_path(os_path)
    except FormatError:
        # a text file (a message notebook was refused before): jupyter_server's own writing
        return False
    return os.access(os.path.dirname(target) or ".", os.W_OK)


# Where a message notebook opened in JupyterLab keeps its file's kernelspec and language_info.
FILE_METADATA = "file_metadata"
_KERNEL_KEYS = ("kernelspec", "language_info")


def _message_metadata(model: dict[str, Any] | None, path: str) -> dict[str, Any] | None:
    """The notebook metadata of a message notebook, else None."""
    from jupyter_percent_agent.jupytext_format import FORMAT_NAME, is_message_path

    if not isinstance(model, dict) or model.get("type") != "notebook":
        return None
    content = model.get("content")
    meta = content.get("metadata") if isinstance(content, dict) else None
    if not isinstance(meta, dict):
        return None
    if is_message_path(path):
        return meta
    jupytext_meta = meta.get("jupytext")
    reading = jupytext_meta.get("text_representation") if isinstance(jupytext_meta, dict) else None
    if isinstance(reading, dict) and reading.get("format_name") == FORMAT_NAME:
        return meta
    return None


def _is_agent(kernelspec: Any) -> bool:
    from jupyter_percent_agent.format import DEFAULT_KERNELSPEC

    return isinstance(kernelspec, dict) and kernelspec.get("name") == DEFAULT_KERNELSPEC["name"]


def _for_jupyterlab(model: dict[str, Any], path: str) -> dict[str, Any]:
    """An opened message notebook as JupyterLab gets it: on the agent kernel, with the
    ``language_info`` that kernel reports, the file's own values of both kept aside.

    JupyterLab starts the kernel the notebook's ``kernelspec`` names, so a file naming
    ``python3`` would make "running a message" run Python. And it writes the kernel's
    ``language_info`` into the open notebook as soon as the kernel is up, which marks the
    document modified unless it is already there.
    """
    meta = _message_metadata(model, path.strip("/"))
    if meta is None:
        return model
    from jupyter_percent_agent.format import DEFAULT_KERNELSPEC, NS
    from jupyter_percent_agent.kernel import LANGUAGE_INFO

    kept = {}
    if not _is_agent(meta.get("kernelspec")):
        kept["kernelspec"] = meta.get("kernelspec")  # None: the file names none
        meta["kernelspec"] = dict(DEFAULT_KERNELSPEC)
    if "language_info" in meta:
        kept["language_info"] = meta["language_info"]
    meta["language_info"] = dict(LANGUAGE_INFO)
    if kept:
        ns = meta.get(NS)
        meta[NS] = {**(ns if isinstance(ns, dict) else {}), FILE_METADATA: kept}
    return model


def _for_the_file(model: dict[str, Any], path: str) -> dict[str, Any]:
    """A message notebook to save, with the kernelspec and language_info its file had.

    What JupyterLab holds is the agent kernel (or a kernel the user picked for this session):
    neither is written. The file's own values (kept aside by :func:`_for_jupyterlab`) are
    restored; with none kept, the file had the agent kernelspec (or none) and no
    ``language_info``. So what was read saves back to the same text. The caller's model is
    left as it is (the model, content and metadata dicts are copied before any change).
    """
    meta = _message_metadata(model, path.strip("/"))
    if meta is None:
        return model
    from jupyter_percent_agent.format import DEFAULT_KERNELSPEC, NS

    meta = copy.copy(meta)
    ns = meta.get(NS)
    kept: Any = None
    if isinstance(ns, dict) and FILE_METADATA in ns:
        ns = dict(ns)
        kept = ns.pop(FILE_METADATA)
        if ns:
            meta[NS] = ns
        else:
            del meta[NS]
    kept = kept if isinstance(kept, dict) else {}
    for key in _KERNEL_KEYS:
        if key in kept:
            if kept[key] is None:
                meta.pop(key, None)
            else:
                meta[key] = kept[key]
        elif key == "language_info":
            meta.pop(key, None)
        elif not _is_agent(meta.get(key)):
            meta[key] = dict(DEFAULT_KERNELSPEC)
    content = copy.copy(model["content"])
    content["metadata"] = meta
    content["cells"] = tidy_cells(content.get("cells") or [])
    return {**model, "content": content}


# What JupyterLab keeps in a cell's metadata for itself (not footnote attributes).
_LAB_KEYS = frozenset({"trusted", "execution", "scrolled", "collapsed", "jupyter", "tags"})


def _empty_message(cell: Any) -> bool:
    source = cell.get("source", "")
    if isinstance(source, list) and all(isinstance(s, str) for s in source):
        source = "".join(source)
    return (cell.get("cell_type") == "code" and isinstance(source, str) and not source.strip()
            and not cell.get("outputs")
            and not set(cell.get("metadata") or {}) - _LAB_KEYS)


def tidy_cells(cells: list[Any]) -> list[Any]:
    """What a save from JupyterLab leaves out of a message file: the empty message JupyterLab
    adds after the last run, execution counts on messages (running a message is no Out[n]),
    and its 36-character UUID cell ids (a cell gets the short id ``tce`` would, which the
    kernel derives the same way). Cells are copied, not changed."""
    from jupyter_percent_agent import format as fmt

    cells = [dict(c) if isinstance(c, dict) else c for c in cells]
    while cells and isinstance(cells[-1], dict) and _empty_message(cells[-1]):
        cells.pop()
    taken = {c.get("id") for c in cells
             if isinstance(c, dict) and fmt.short_ids(str(c.get("id"))) == [c.get("id")]}
    for cell in cells:
        if not isinstance(cell, dict):
            continue
        cid = cell.get("id")
        if isinstance(cid, str) and fmt.short_ids(cid) != [cid]:
            cell["id"] = fmt.short_id(cid, taken)
            taken.add(cell["id"])
        if cell.get("cell_type") == "code" and cell.get("execution_count") is not None \
                and fmt.cell_kind(cell) == "message":
            cell["execution_count"] = None
    return cells


def _refuse_unsafe_path(os_path: str, path: str) -> None:
    """A 403 for a message notebook whose file leads out of its folder or is not a file."""
    from tornado.web import HTTPError

    from jupyter_percent_agent.format import FormatError, safe_path

    try:
        safe_path(os_path)
    except FormatError as err:
        # err.reason, not str(err): that names the server's own absolute path
        raise HTTPError(403, f"Cannot open {path.strip('/')}: {err.reason}",
                        reason="Refused") from None


def _refuse_pairs(path: str, nb: Any, config: Any, os_path: str, action: str) -> None:
    """A 403 for a message notebook paired with a file it may not name (``contents.pairing``)."""
    from tornado.web import HTTPError

    from jupyter_percent_agent import trust
    from jupyter_percent_agent.contents.pairing import refuse_outside_notebook_pairs

    try:
        refuse_outside_notebook_pairs(path, nb, config, os.path.dirname(os_path))
    except trust.TrustError as err:
        raise HTTPError(403, f"Cannot {action} {path}: {err}", reason="Refused") from None


def _opened_pairs(path: str, os_path: str, config: Any) -> None:
    """Before a message file opens: refuse it if it names a pairing it may not (jupytext
    would read that file). Files that name no pairing are not parsed twice."""
    from jupyter_percent_agent import format as core
    from jupyter_percent_agent.contents.pairing import names_a_pairing
    from jupyter_percent_agent.jupytext_format import is_message_path, looks_like_message_text

    try:
        text = core.read_text(os_path)
    except (OSError, UnicodeDecodeError, core.FormatError):
        return  # jupytext's own reading reports it
    if not names_a_pairing(text, config):
        return
    if not (is_message_path(path) or looks_like_message_text(text)):
        return
    try:
        nb = core.reads(text, path=path)
    except core.FormatError:
        return  # reported, with its line, by the read that follows
    _refuse_pairs(path, nb, config, os_path, "open")


def _wants_notebook(path: str, type: str | None) -> bool:
    return _is_md(path) and type not in ("file", "directory")


class _MessageFilesMixin:
    """The parts shared by the sync and the async classes."""

    # The jupytext class this one derives from (set by build_message_contents_manager_class).
    _jupytext_cls: type

    def _single_message_file(self, model: dict[str, Any], path: str, config: Any) -> bool:
        """A notebook saved to NAME.msg.md and paired with nothing: no need for jupytext.

        jupytext's save converts the whole notebook to NotebookNodes before writing it, which
        costs more than writing the message file itself.
        """
        from jupytext.config import notebook_formats

        from jupyter_percent_agent.jupytext_format import is_message_path

        if model.get("type") != "notebook" or not is_message_path(path):
            return False
        content = model.get("content")
        if not isinstance(content, dict) or not isinstance(content.get("metadata"), dict):
            return False
        formats = notebook_formats(content, config, path)
        return not formats or len(formats) <= 1

    def _text_model(self, model: dict[str, Any], path: str) -> dict[str, Any]:
        from jupyter_percent_agent.jupytext_format import message_text

        try:
            text = message_text(model["content"], path=path)
        except Exception as err:
            translated = _translate(err, path, "save")
            if translated is None:
                raise
            raise translated from err
        self.drop_paired_notebook(path)  # type: ignore[attr-defined]
        return {"type": "file", "format": "text", "content": text}

    def _seed_new(self, model: dict[str, Any] | None, path: str) -> dict[str, Any] | None:
        """A new message notebook starts as an empty message file reads: the agent kernel."""
        from jupyter_percent_agent.jupytext_format import is_message_path

        if model is None or model.get("type") != "notebook" or "content" in model:
            return model
        if not is_message_path(path):
            return model
        import nbformat

        from jupyter_percent_agent import format as core

        return {**model, "format": "json", "content": nbformat.from_dict(core.reads("", path=path))}

    def _hint(self, path: str) -> Any:
        from jupyter_percent_agent.jupytext_format import path_hint

        return path_hint(path.strip("/") if _is_md(path) else None)

    def _skips_config(self, config_file: Any, is_os_path: bool) -> bool:
        """A jupytext configuration written in Python in an untrusted folder: logged, not run."""
        if not isinstance(config_file, str) or not config_file.endswith(".py"):
            return False
        from jupyter_percent_agent.jupytext_format import python_config_refusal

        os_path = config_file if is_os_path else self._get_os_path(config_file)  # type: ignore[attr-defined]
        refusal = python_config_refusal(os_path)
        if refusal is None:
            return False
        self.log.warning("[jupyter-percent-agent] %s", refusal)  # type: ignore[attr-defined]
        return True


class _SyncMessageFiles(_MessageFilesMixin):
    def get(
        self,
        path: str,
        content: bool = True,
        type: str | None = None,
        format: str | None = None,
        **kwargs: Any,
    ) -> dict[str, Any]:
        if not _is_md(path):
            return super().get(path, content=content, type=type, format=format, **kwargs)
        if _wants_notebook(path, type):
            plain = path.strip("/")
            os_path = self._get_os_path(plain)  # type: ignore[attr-defined]
            _refuse_unsafe_path(os_path, path)
            if content and os.path.isfile(os_path):
                _opened_pairs(plain, os_path, self.get_config(plain))  # type: ignore[attr-defined]
        with self._hint(path):
            try:
                model = super().get(path, content=content, type=type, format=format, **kwargs)
            except Exception as err:
                translated = _translate(err, path, "open")
                if translated is None:
                    raise
                raise translated from err
        return _for_jupyterlab(model, path)

    def save(self, model: dict[str, Any], path: str = "") -> dict[str, Any]:
        if not _is_md(path):
            return super().save(model, path)
        plain = path.strip("/")
        if model.get("type") == "notebook":
            _refuse_unsafe_path(self._get_os_path(plain), path)  # type: ignore[attr-defined]
        model = _for_the_file(model, plain)
        config = self.get_config(plain)  # type: ignore[attr-defined]
        if _message_metadata(model, plain) is not None:
            _refuse_pairs(plain, model["content"], config,
                          self._get_os_path(plain), "save")  # type: ignore[attr-defined]
        if self._single_message_file(model, plain, config):
            text_model = self._text_model(model, plain)
            return super(self._jupytext_cls, self).save(text_model, path)
        with self._hint(path):
            try:
                return super().save(model, path)
            except Exception as err:
                translated = _translate(err, path, "save")
                if translated is None:
                    raise
                raise translated from err

    def _save_file(self, os_path: str, content: Any, format: str | None) -> None:
        if not _replaceable(os_path, format):
            return super()._save_file(os_path, content, format)
        from jupyter_percent_agent.format import write_text

        write_text(os_path, content)
        return None

    def new(self, model: dict[str, Any] | None = None, path: str = "") -> dict[str, Any]:
        return super().new(self._seed_new(model, path.strip("/")), path)

    def load_config_file(self, config_file: Any, *, prev_config_file: Any, prev_config: Any,
                         is_os_path: bool = False) -> Any:
        if self._skips_config(config_file, is_os_path):
            return None
        return super().load_config_file(config_file, prev_config_file=prev_config_file,
                                        prev_config=prev_config, is_os_path=is_os_path)


class _AsyncMessageFiles(_MessageFilesMixin):
    async def get(
        self,
        path: str,
        content: bool = True,
        type: str | None = None,
        format: str | None = None,
        **kwargs: Any,
    ) -> dict[str, Any]:
        if not _is_md(path):
            return await super().get(path, content=content, type=type, format=format, **kwargs)
        if _wants_notebook(path, type):
            plain = path.strip("/")
            os_path = self._get_os_path(plain)  # type: ignore[attr-defined]
            _refuse_unsafe_path(os_path, path)
            if content and os.path.isfile(os_path):
                config = await self.get_config(plain)  # type: ignore[attr-defined]
                _opened_pairs(plain, os_path, config)
        with self._hint(path):
            try:
                model = await super().get(path, content=content, type=type, format=format, **kwargs)
            except Exception as err:
                translated = _translate(err, path, "open")
                if translated is None:
                    raise
                raise translated from err
        return _for_jupyterlab(model, path)

    async def save(self, model: dict[str, Any], path: str = "") -> dict[str, Any]:
        if not _is_md(path):
            return await super().save(model, path)
        plain = path.strip("/")
        if model.get("type") == "notebook":
            _refuse_unsafe_path(self._get_os_path(plain), path)  # type: ignore[attr-defined]
        model = _for_the_file(model, plain)
        config = await self.get_config(plain)  # type: ignore[attr-defined]
        if _message_metadata(model, plain) is not None:
            _refuse_pairs(plain, model["content"], config,
                          self._get_os_path(plain), "save")  # type: ignore[attr-defined]
        if self._single_message_file(model, plain, config):
            text_model = self._text_model(model, plain)
            return await super(self._jupytext_cls, self).save(text_model, path)
        with self._hint(path):
            try:
                return await super().save(model, path)
            except Exception as err:
                translated = _translate(err, path, "save")
                if translated is None:
                    raise
                raise translated from err

    async def new(self, model: dict[str, Any] | None = None, path: str = "") -> dict[str, Any]:
        return await super().new(self._seed_new(model, path.strip("/")), path)

    async def load_config_file(self, config_file: Any, *, prev_config_file: Any,
                               prev_config: Any, is_os_path: bool = False) -> Any:
        if self._skips_config(config_file, is_os_path):
            return None
        return await super().load_config_file(config_file, prev_config_file=prev_config_file,
                                              prev_config=prev_config, is_os_path=is_os_path)

    async def _save_file(self, os_path: str, content: Any, format: str | None) -> None:
        if not _replaceable(os_path, format):
            return await super()._save_file(os_path, content, format)
        from jupyter_percent_agent.format import write_text

        await asyncio.to_thread(write_text, os_path, content)
        return None


def build_message_contents_manager_class(base: type) -> type:
    """A contents manager class that opens message files, derived from ``base``.

    ``base`` is any jupyter_server contents manager class, sync or async; when it is already
    a jupytext contents manager it is used as is, otherwise jupytext's is derived from it.
    """
    from jupytext.async_contentsmanager import build_async_jupytext_contents_manager_class
    from jupytext.config import JupytextConfiguration
    from jupytext.sync_contentsmanager import build_sync_jupytext_contents_manager_class

    from jupyter_percent_agent.jupytext_format import register

    register()
    if getattr(base, MESSAGE_CM_MARKER, False):
        return base
    is_async = inspect.iscoroutinefunction(base.get)
    if issubclass(base, JupytextConfiguration):
        jupytext_cls = base
    elif is_async:
        jupytext_cls = build_async_jupytext_contents_manager_class(base)
    else:
        jupytext_cls = build_sync_jupytext_contents_manager_class(base)
    mixin = _AsyncMessageFiles if is_async else _SyncMessageFiles
    name = ("Async" if is_async else "") + "MessageContentsManager"
    return type(
        name,
        (mixin, jupytext_cls),
        {
            MESSAGE_CM_MARKER: True,
            "_jupytext_cls": jupytext_cls,
            "__module__": __name__,
            "__doc__": f"Message files as notebooks, on jupytext's manager over {base.__name__}.",
        },
    )


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "jupyter_percent_agent.contents"}]


def _link_jupyter_server_extension(serverapp: Any) -> None:
    """Runs before the contents manager is created: derive ours from the configured class.

    Extensions linked after this one (JupyterLab, any ``ExtensionApp``) load their config into
    the server again, which sets ``contents_manager_class`` back to the configured class; so
    the trait is watched, and whatever class it is set to is derived from in turn.
    """

    def derive(_change: Any = None) -> None:
        base = serverapp.contents_manager_class
        if getattr(base, MESSAGE_CM_MARKER, False):
            return
        serverapp.contents_manager_class = _derived(base)
        serverapp.log.info(
            "[jupyter-percent-agent] message files (.msg.md) open as notebooks "
            "(contents manager derived from %s)",
            base.__name__,
        )

    serverapp.observe(derive, names=["contents_manager_class"])
    derive()


_DERIVED: dict[type, type] = {}


def _derived(base: type) -> type:
    if base not in _DERIVED:
        _DERIVED[base] = build_message_contents_manager_class(base)
    return _DERIVED[base]


def _load_jupyter_server_extension(serverapp: Any) -> None:
    """The contents manager was set up at link time; add the trust and keys APIs for
    JupyterLab."""
    from jupyter_percent_agent.contents import keys_api, trust_api

    trust_api.register(serverapp)
    keys_api.register(serverapp)

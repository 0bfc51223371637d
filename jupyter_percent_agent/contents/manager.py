"""The contents manager classes: jupytext's manager (sync or async, over the class the user
configured) with message files opened through the format core.

Each class does only its I/O (``await`` or not); what it does to a message file is the plain
functions of ``contents.messages``, shared by both.
"""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

from jupyter_percent_agent.contents import messages as m

# Set on every class built here, so that building on top of one again is a no-op.
MESSAGE_CM_MARKER = "_percent_agent_message_files"


class _MessageFilesMixin:
    """What the sync and the async classes share beyond ``contents.messages``."""

    # The jupytext class this one derives from (set by build_message_contents_manager_class).
    _jupytext_cls: type

    def _os_path(self, path: str) -> str:
        return self._get_os_path(path.strip("/"))  # type: ignore[attr-defined]

    def _root(self) -> str:
        return str(self.root_dir)  # type: ignore[attr-defined]

    def _skips_config(self, config_file: Any, is_os_path: bool) -> bool:
        """A jupytext configuration written in Python in an untrusted folder: logged, not run."""
        if not isinstance(config_file, str) or not config_file.endswith(".py"):
            return False
        refusal = m.config_refusal(config_file if is_os_path else self._os_path(config_file))
        if refusal is None:
            return False
        self.log.warning("[jupyter-percent-agent] %s", refusal)  # type: ignore[attr-defined]
        return True


class _SyncMessageFiles(_MessageFilesMixin):
    def get(self, path: str, content: bool = True, type: str | None = None,
            format: str | None = None, **kwargs: Any) -> dict[str, Any]:
        if not m.is_md(path):
            return super().get(path, content=content, type=type, format=format, **kwargs)
        os_path, root = self._os_path(path), self._root()
        parsed = None
        if m.check_open(os_path, path, type, content, root,
                        bool(kwargs.get("require_hash"))):
            plain = path.strip("/")
            parsed = m.read_ahead(plain, os_path, self.get_config(plain), root)  # type: ignore[attr-defined]
        with m.reading(path, root, parsed):
            model = super().get(path, content=content, type=type, format=format, **kwargs)
        return m.for_jupyterlab(model, path)

    def save(self, model: dict[str, Any], path: str = "") -> dict[str, Any]:
        if not m.is_md(path):
            return super().save(model, path)
        os_path, root = self._os_path(path), self._root()
        model = m.prepare_save(model, path, os_path, root)
        config = self.get_config(path.strip("/"))  # type: ignore[attr-defined]
        text_model = m.check_save(model, path, os_path, config, root)
        if text_model is not None:
            self.drop_paired_notebook(path.strip("/"))  # type: ignore[attr-defined]
            return super(self._jupytext_cls, self).save(text_model, path)
        with m.reading(path, root):
            return super().save(model, path)

    def _save_file(self, os_path: str, content: Any, format: str | None) -> None:
        if not m.replaceable(os_path, format):
            return super()._save_file(os_path, content, format)
        from jupyter_percent_agent.format import write_text

        write_text(os_path, content)
        return None

    def new(self, model: dict[str, Any] | None = None, path: str = "") -> dict[str, Any]:
        return super().new(m.seed_new(model, path.strip("/")), path)

    def load_config_file(self, config_file: Any, *, prev_config_file: Any, prev_config: Any,
                         is_os_path: bool = False) -> Any:
        if self._skips_config(config_file, is_os_path):
            return None
        return super().load_config_file(config_file, prev_config_file=prev_config_file,
                                        prev_config=prev_config, is_os_path=is_os_path)


class _AsyncMessageFiles(_MessageFilesMixin):
    async def get(self, path: str, content: bool = True, type: str | None = None,
                  format: str | None = None, **kwargs: Any) -> dict[str, Any]:
        if not m.is_md(path):
            return await super().get(path, content=content, type=type, format=format, **kwargs)
        os_path, root = self._os_path(path), self._root()
        parsed = None
        if m.check_open(os_path, path, type, content, root,
                        bool(kwargs.get("require_hash"))):
            plain = path.strip("/")
            config = await self.get_config(plain)  # type: ignore[attr-defined]
            # in a worker thread: a large or hostile file never holds the event loop, which
            # serves every other request of every user and tab
            parsed = await asyncio.to_thread(m.read_ahead, plain, os_path, config, root)
        with m.reading(path, root, parsed):
            model = await super().get(path, content=content, type=type, format=format, **kwargs)
        return m.for_jupyterlab(model, path)

    async def save(self, model: dict[str, Any], path: str = "") -> dict[str, Any]:
        if not m.is_md(path):
            return await super().save(model, path)
        os_path, root = self._os_path(path), self._root()
        model = m.prepare_save(model, path, os_path, root)
        config = await self.get_config(path.strip("/"))  # type: ignore[attr-defined]
        # writing the text is the size of the notebook: off the event loop, as reading is
        text_model = await asyncio.to_thread(m.check_save, model, path, os_path, config, root)
        if text_model is not None:
            self.drop_paired_notebook(path.strip("/"))  # type: ignore[attr-defined]
            return await super(self._jupytext_cls, self).save(text_model, path)
        with m.reading(path, root):
            return await super().save(model, path)

    async def _save_file(self, os_path: str, content: Any, format: str | None) -> None:
        if not m.replaceable(os_path, format):
            return await super()._save_file(os_path, content, format)
        from jupyter_percent_agent.format import write_text

        await asyncio.to_thread(write_text, os_path, content)
        return None

    async def new(self, model: dict[str, Any] | None = None, path: str = "") -> dict[str, Any]:
        return await super().new(m.seed_new(model, path.strip("/")), path)

    async def load_config_file(self, config_file: Any, *, prev_config_file: Any,
                               prev_config: Any, is_os_path: bool = False) -> Any:
        if self._skips_config(config_file, is_os_path):
            return None
        return await super().load_config_file(config_file, prev_config_file=prev_config_file,
                                              prev_config=prev_config, is_os_path=is_os_path)


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
    from traitlets import default

    from jupyter_percent_agent.contents.checkpoints import inside_root

    base_default = getattr(jupytext_cls, "_checkpoints_class_default", None)

    @default("checkpoints_class")
    def _checkpoints_class_default(self: Any) -> Any:  # checkpoints stay in the root
        found = (base_default(self) if base_default is not None
                 else jupytext_cls.class_traits()["checkpoints_class"].default_value)
        return inside_root(found)

    return type(
        name,
        (mixin, jupytext_cls),
        {
            MESSAGE_CM_MARKER: True,
            "_checkpoints_class_default": _checkpoints_class_default,
            "_jupytext_cls": jupytext_cls,
            "__module__": __name__,
            "__doc__": f"Message files as notebooks, on jupytext's manager over {base.__name__}.",
        },
    )

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

Where each job is: ``contents.manager`` (the manager classes: only their I/O, sync or async),
``contents.messages`` (what is done to message files, as plain functions both share),
``contents.extension`` (the jupyter_server extension points), ``contents.pairing`` and
``contents.trust_api``. Errors go through the package's one table (``errors.report``): the
HTTP status and message are those every front end shows for the same failure.

The server extension (``contents.extension``) sets
``ServerApp.contents_manager_class`` before the contents manager is created, and keeps it
derived if a later extension reloads the configured class; jupyter_server finds it through
``jupyter-config/jupyter_server_config.d/jupyter_percent_agent.json``, installed (wheel and
editable) into ``etc/jupyter/jupyter_server_config.d``.
"""

from __future__ import annotations

from jupyter_percent_agent.contents.manager import (
    MESSAGE_CM_MARKER,
    build_message_contents_manager_class,
)
from jupyter_percent_agent.contents.messages import tidy_cells

__all__ = [
    "MESSAGE_CM_MARKER",
    "build_message_contents_manager_class",
    "tidy_cells",
]


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "jupyter_percent_agent.contents.extension"}]

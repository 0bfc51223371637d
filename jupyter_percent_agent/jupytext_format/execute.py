"""``jupytext --execute`` runs a message file on the agent kernel, as JupyterLab opens it.

A message file may name any kernelspec in its ``jupyter:`` entry (a file shared as
``{"kernelspec": {"name": "python3"}}``), and jupytext executes a notebook on the kernel its
metadata names, sending it every cell's source: a message cell's source is its text, so a
cloned file whose message is Python would run as the user, outside the sandbox and the trust
rules. So, for a message file (by its name, its ``msg`` format, or its content) and unless the
user picks a kernel (``--set-kernel``), the command executes it on the agent kernel, exactly as
if ``--set-kernel percent-agent`` had been given. The file itself keeps what it names.
"""

from __future__ import annotations

import functools
import os
from types import ModuleType
from typing import Any

_PATCHED = "__jupyter_percent_agent_execute__"


def _is_message_file(nb_file: str, args: Any, format_name: str) -> bool:
    from jupyter_percent_agent import format as fmt

    if (getattr(args, "input_format", None) or {}).get("format_name") == format_name:
        return True
    if nb_file == "-" or not os.path.isfile(nb_file):
        return False  # stdin is read by jupytext alone; its format decides (above)
    if fmt.is_message_path(nb_file) or fmt.is_script_path(nb_file):  # .msg.md, .msg.py...
        return True
    if not nb_file.lower().endswith(".md"):
        return False
    try:
        return fmt.is_message_text(fmt.read_text(nb_file))
    except (OSError, fmt.FormatError):
        return False  # jupytext's own read says what is wrong with it


def patch_execute(cli: ModuleType, format_name: str) -> None:
    """Make ``jupytext_single_file`` execute a message file on the agent kernel unless the
    user set a kernel (idempotent)."""
    single = cli.jupytext_single_file
    if getattr(single, _PATCHED, False):
        return

    @functools.wraps(single)
    def jupytext_single_file(nb_file: str, args: Any, *rest: Any, **kwargs: Any) -> Any:
        if not (
            getattr(args, "execute", False)
            and not getattr(args, "set_kernel", None)
            and _is_message_file(nb_file, args, format_name)
        ):
            return single(nb_file, args, *rest, **kwargs)
        from jupyter_percent_agent.format import DEFAULT_KERNELSPEC

        args.set_kernel = DEFAULT_KERNELSPEC["name"]
        try:
            return single(nb_file, args, *rest, **kwargs)
        finally:  # the next file of the same command is judged on its own
            args.set_kernel = None

    setattr(jupytext_single_file, _PATCHED, True)
    cli.jupytext_single_file = jupytext_single_file

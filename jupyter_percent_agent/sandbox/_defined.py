"""Tools written in a message file (``[tool]`` cells), parent side; they run in the sandbox.

A ``[tool]`` cell's code is untrusted text, like model code: it never runs in this process.
:class:`DefinedTool` holds the cell's attributes and what its source defines, read from the
syntax tree by the tools package (``describe_defined_tool``: the function, the ATTP stub, the
signature); a broken definition fails here, before any run, with a ``ToolLoadError`` naming the
tool and the line. The worker compiles and runs the code under the sandbox policy (``_stubs``).
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from jupyter_percent_agent.tools import (
    DefinedToolInfo,
    ToolArgumentError,
    ToolLoadError,
    arguments_problem,
    describe_defined_tool,
    to_json,
)

from . import _limits
from ._names import check_tool_name


@dataclass(frozen=True)
class DefinedTool:
    """A tool defined in a message file; its code runs only in the sandbox.

    ``name``: what model code calls (the cell's ``name``). ``source``: the cell's Python fence.
    ``description``, ``parameters`` (a JSON Schema object, or its JSON text, as the cell
    attribute holds it): from the cell. ``function``: which function of the source is the tool;
    by default the one named like the tool, else the only public one (``function`` holds the
    resolved name after construction). Raises :class:`ToolLoadError` for a broken definition.
    """

    name: str
    source: str
    description: str = ""
    parameters: Mapping[str, Any] | str | None = None
    function: str | None = None
    info: DefinedToolInfo = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        try:
            check_tool_name(self.name)
        except ValueError as exc:
            raise ToolLoadError(str(exc), tool=str(self.name)[:100]) from None
        if not isinstance(self.source, str):
            raise ToolLoadError("the code must be text", tool=self.name)
        if len(self.source) > _limits.MAX_CODE_CHARS:
            raise ToolLoadError(
                f"the code is longer than {_limits.MAX_CODE_CHARS} characters", tool=self.name
            )
        parameters = self.parameters
        if isinstance(parameters, str):
            try:
                parameters = json.loads(parameters)
            except ValueError as exc:
                raise ToolLoadError(f"parameters is not JSON: {exc}", tool=self.name) from None
        info = describe_defined_tool(
            self.name,
            self.source,
            description=self.description or "",
            parameters=parameters,
            function=self.function,
        )
        object.__setattr__(self, "parameters", parameters)
        object.__setattr__(self, "function", info.function)
        object.__setattr__(self, "info", info)

    @property
    def stub(self) -> str:
        """How the model sees the tool (ATTP): ``def name(...):``, docstring, ``pass``."""
        return self.info.stub

    @property
    def signature(self) -> inspect.Signature:
        """The function's parameters (annotations and defaults as source text), as a registry
        ``Tool.signature``: for checking arguments and feeding a ``[toolchain]``."""
        return self.info.signature

    def arguments_problem(self, args: Mapping[str, Any]) -> str | None:
        """What is wrong with keyword ``args`` for the cell's ``parameters`` (None if fine)."""
        if not isinstance(self.parameters, Mapping):
            return None
        return arguments_problem(args, self.parameters)

    def check_arguments(self, args: Mapping[str, Any] | None) -> dict[str, Any]:
        """JSON keyword arguments for a direct call, checked against ``parameters`` and the
        function's signature; :class:`ToolArgumentError` says what does not fit."""
        if args is None:
            args = {}
        if not isinstance(args, Mapping):
            raise ToolArgumentError(f"{self.name}: arguments must be a JSON object")
        try:
            kwargs = to_json(dict(args), "arguments")
        except (TypeError, RecursionError) as exc:
            raise ToolArgumentError(f"{self.name}: {exc}") from None
        if len(json.dumps(kwargs)) > _limits.MAX_TOOL_ARGS_BYTES:
            raise ToolArgumentError(
                f"{self.name}: arguments larger than {_limits.MAX_TOOL_ARGS_BYTES} bytes"
            )
        problem = self.arguments_problem(kwargs)
        if problem is None:
            try:
                self.info.signature.bind(**kwargs)
            except TypeError as exc:
                problem = str(exc)
        if problem is not None:
            raise ToolArgumentError(f"{self.name}: {problem}")
        return kwargs

    def job(self) -> dict[str, str]:
        """What the worker needs to run it."""
        return {"name": self.name, "source": self.source, "function": str(self.function)}

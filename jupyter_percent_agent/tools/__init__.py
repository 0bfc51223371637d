"""Tool registry (Jarvis style): loads tool modules, describes their tools, calls them.

A tool is a public function of a tool module (a ``*.py`` file in a toolbox folder, or a module
named by the ``jupyter_percent_agent.tools`` entry-point group) whose Google-style docstring
describes it. ``Tool.run`` / ``Tool.arun`` are the one way tools are called (the sandbox's
bridge included). Tools defined in a message file (``[tool]`` cells) are described here from
their source text alone (``describe_defined_tool``); they run in the sandbox. See
``docs/tools.md``.
"""

from ._docstring import ArgDoc, Docstring, DocstringError, parse_docstring
from ._registry import ENTRY_POINT_GROUP, Registry, import_file, tools_of_module
from ._render import render_tool, render_tools
from ._schema import arguments_problem, schema_problem
from ._source import DefinedToolInfo, describe_defined_tool, describe_source, render_source_tools
from ._tool import (
    OnChunk,
    Tool,
    ToolArgumentError,
    ToolCallError,
    ToolLoadError,
    acall_tool,
    as_tool,
    call_tool,
    check_docstring,
    in_thread,
)
from .results import (
    STREAM_CHUNK,
    ToolImage,
    ToolResult,
    collecting_images,
    normalize_result,
    show_image,
    to_json,
)

__all__ = [
    "ENTRY_POINT_GROUP",
    "STREAM_CHUNK",
    "ArgDoc",
    "DefinedToolInfo",
    "Docstring",
    "DocstringError",
    "OnChunk",
    "Registry",
    "Tool",
    "ToolArgumentError",
    "ToolCallError",
    "ToolImage",
    "ToolLoadError",
    "ToolResult",
    "acall_tool",
    "arguments_problem",
    "as_tool",
    "call_tool",
    "check_docstring",
    "collecting_images",
    "describe_defined_tool",
    "describe_source",
    "import_file",
    "in_thread",
    "normalize_result",
    "parse_docstring",
    "render_source_tools",
    "render_tool",
    "render_tools",
    "schema_problem",
    "show_image",
    "to_json",
    "tools_of_module",
]

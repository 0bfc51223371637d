"""The registry: tool modules found in a toolbox folder and through entry points, loaded by name."""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import inspect
import os
import sys
import types
from collections.abc import Callable, Iterable, Iterator, Mapping
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from typing import Any

from jupyter_percent_agent.errors import Kind

from ._render import render_tools
from ._tool import Tool, ToolLoadError

ENTRY_POINT_GROUP = "jupyter_percent_agent.tools"


class Registry(Mapping[str, Tool]):
    """Tools by name, in load order; built by :meth:`load` or from tools directly."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            other = self._tools.get(tool.name)
            if other is not None:
                raise ToolLoadError(
                    f"defined twice, in module {other.module!r} and in module {tool.module!r}",
                    module=tool.module,
                    tool=tool.name,
                    path=tool.path,
                )
            self._tools[tool.name] = tool

    @classmethod
    def load(
        cls,
        toolbox: str | os.PathLike[str] | None = None,
        *,
        modules: Iterable[str] | None = None,
        entry_points: bool = True,
    ) -> Registry:
        """Load the tool modules of ``toolbox`` (a folder of ``*.py``) and of entry points.

        ``modules`` selects modules by name (file stem or entry-point name); ``None`` loads all.
        A toolbox module shadows an entry-point module of the same name. Raises
        :class:`ToolLoadError` for a missing toolbox folder, an unknown module name, a module
        that fails to import, or a tool whose docstring does not parse.
        """
        if isinstance(modules, str):
            modules = [modules]  # one name, not its letters
        sources = _find_sources(toolbox, entry_points)
        wanted = list(sources) if modules is None else list(dict.fromkeys(modules))
        unknown = [name for name in wanted if name not in sources]
        if unknown:
            known = ", ".join(sorted(sources)) or "none"
            raise ToolLoadError(
                f"no tool module named {', '.join(map(repr, unknown))} (known: {known})",
                kind=Kind.USAGE)
        tools: list[Tool] = []
        for name in wanted:
            module, path = sources[name]()
            tools.extend(tools_of_module(module, name=name, path=path))
        return cls(tools)

    @staticmethod
    def module_names(
        toolbox: str | os.PathLike[str] | None = None, *, entry_points: bool = True
    ) -> list[str]:
        """The names ``load`` takes in ``modules`` (nothing is imported)."""
        return sorted(_find_sources(toolbox, entry_points))

    @classmethod
    def from_functions(cls, *funcs: Callable[..., Any], module: str = "") -> Registry:
        """Tools made directly of functions (checked like any other tool)."""
        return cls(Tool.from_function(f, module=module) for f in funcs)

    def merged(self, other: Iterable[Tool]) -> Registry:
        """A new registry: these tools, then ``other``'s; a repeated name is an error."""
        return Registry(
            [*self.values(), *(other.values() if isinstance(other, Mapping) else other)]
        )

    def __getitem__(self, name: str) -> Tool:
        return self._tools[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._tools)

    def __len__(self) -> int:
        return len(self._tools)

    def __repr__(self) -> str:
        return f"Registry({list(self._tools)})"

    @property
    def modules(self) -> dict[str, list[str]]:
        """Module name -> names of its tools, in load order."""
        out: dict[str, list[str]] = {}
        for tool in self._tools.values():
            out.setdefault(tool.module, []).append(tool.name)
        return out

    def describe(self, defined: Iterable[str] = ()) -> str:
        """Every tool as ATTP shows it to the model: signature, docstring, ``pass``.

        ``defined``: stubs of tools defined in the message file (``sandbox.DefinedTool.stub``),
        shown after these under the same header.
        """
        return render_tools(list(self._tools.values()), defined)


def tools_of_module(module: types.ModuleType, *, name: str, path: str | None = None) -> list[Tool]:
    """The tools of a module: its ``__all__`` if set, else public functions defined in it."""
    exported = getattr(module, "__all__", None)
    if exported is not None:
        funcs = []
        for attr in exported:
            obj = getattr(module, attr, None)
            if not inspect.isfunction(obj):
                raise ToolLoadError(
                    f"__all__ names {attr!r}, which is not a function", module=name, path=path
                )
            funcs.append(obj)
    else:
        funcs = [
            obj
            for attr, obj in vars(module).items()
            if not attr.startswith("_")
            and inspect.isfunction(obj)
            and obj.__module__ == module.__name__
        ]
    return [Tool.from_function(f, module=name, path=path) for f in funcs]


Loader = Callable[[], tuple[types.ModuleType, str | None]]


def _find_sources(
    toolbox: str | os.PathLike[str] | None, use_entry_points: bool
) -> dict[str, Loader]:
    """Module name -> a function importing it; toolbox files override entry points."""
    sources: dict[str, Loader] = {}
    if use_entry_points:
        for ep in entry_points(group=ENTRY_POINT_GROUP):
            sources[ep.name] = _entry_point_loader(ep)
    if toolbox is not None:
        folder = Path(toolbox)
        if not folder.is_dir():
            raise ToolLoadError(f"toolbox folder {str(folder)!r} does not exist",
                                kind=Kind.USAGE)
        for file in sorted(folder.glob("*.py")):
            if not file.stem.startswith("_"):
                sources[file.stem] = _file_loader(file)
    return sources


def _entry_point_loader(ep: EntryPoint) -> Loader:
    def load() -> tuple[types.ModuleType, str | None]:
        try:
            module = ep.load()
        except Exception as exc:
            raise ToolLoadError(
                f"entry point {ep.value!r} failed to import: {type(exc).__name__}: {exc}",
                module=ep.name,
            ) from exc
        if not isinstance(module, types.ModuleType):
            raise ToolLoadError(f"entry point {ep.value!r} is not a module", module=ep.name)
        return module, getattr(module, "__file__", None)

    return load


def _file_loader(file: Path) -> Loader:
    def load() -> tuple[types.ModuleType, str | None]:
        return import_file(file), str(file)

    return load


class SourceOnlyLoader(importlib.machinery.SourceFileLoader):
    """Runs the source file, never a cached ``__pycache__/*.pyc``: a folder that travels as
    an archive keeps its files' times, so it could ship bytecode that Python takes for the
    source's (same time, same size) and runs instead of the code the user read. Nothing is
    written to ``__pycache__`` either."""

    def get_code(self, fullname: str) -> types.CodeType:
        path = self.get_filename(fullname)
        return self.source_to_code(self.get_data(path), path)


def import_file(file: str | os.PathLike[str]) -> types.ModuleType:
    """Import one toolbox file as a fresh module, from its source (:class:`SourceOnlyLoader`);
    :class:`ToolLoadError` names file and error."""
    path = Path(file).resolve()
    # A name unique per file, so two toolboxes with a weather.py do not meet in sys.modules.
    digest = hashlib.sha1(str(path.parent).encode()).hexdigest()[:10]
    module_name = f"_tce_toolbox_{digest}_{path.stem}"
    spec = importlib.util.spec_from_file_location(
        module_name, path, loader=SourceOnlyLoader(module_name, str(path)))
    if spec is None or spec.loader is None:
        raise ToolLoadError("cannot be imported", module=path.stem, path=str(file))
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException as exc:
        sys.modules.pop(module_name, None)
        if isinstance(exc, KeyboardInterrupt):
            raise
        line = _error_line(exc, str(path))
        where = f" (line {line})" if line else ""
        raise ToolLoadError(
            f"failed to import{where}: {type(exc).__name__}: {exc}",
            module=path.stem,
            path=str(file),
        ) from exc
    return module


def _error_line(exc: BaseException, path: str) -> int | None:
    if isinstance(exc, SyntaxError):
        return exc.lineno
    line = None
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == path:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line

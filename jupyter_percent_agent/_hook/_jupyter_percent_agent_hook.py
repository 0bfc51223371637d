"""Startup hook: teach the plain ``jupytext`` command the message format (``.msg.md``).

jupytext has no plugin mechanism, so the format has to be registered when jupytext's own
modules are imported. This module is installed at the root of site-packages and loaded by
``jupyter_percent_agent_hook.pth`` (or, on Python 3.15+, by the PEP 829 entry point in
``jupyter_percent_agent_hook.start``). It uses the standard library only and never imports
jupytext: ``install()`` puts a meta-path finder first on ``sys.meta_path`` that does nothing
but compare module names, until ``jupytext.formats``, ``jupytext.config``, ``jupytext.jupytext``,
``jupytext.combine`` or ``jupytext.cli`` is imported; right after such a module has run,
``jupyter_percent_agent.jupytext_format`` patches it, before another module can import
its names.

Set ``JUPYTER_PERCENT_AGENT_NO_HOOK=1`` to turn the hook off.
"""

import os
import sys

ENV_DISABLE = "JUPYTER_PERCENT_AGENT_NO_HOOK"
WATCHED = frozenset(("jupytext.cli", "jupytext.combine", "jupytext.config", "jupytext.formats",
                     "jupytext.jupytext"))


def disabled():
    """True when the environment turns the hook off: the package's one on/off rule
    (``envflags.env_flag``; this file may not import the package, so it repeats the rule and
    a test holds the two equal): unset, "", "0", "false", "no", "off" are off."""
    return os.environ.get(ENV_DISABLE, "").strip().lower() not in ("", "0", "false", "no",
                                                                   "off")


def _register(module):
    try:
        from jupyter_percent_agent.jupytext_format import on_jupytext_module_loaded
    except ImportError:  # the package is gone but the hook file stayed behind
        return
    try:
        on_jupytext_module_loaded(module)
    except Exception as err:  # never break `import jupytext` because of us
        import warnings

        warnings.warn(
            f"jupyter-percent-agent could not register the msg format with jupytext: {err!r}",
            RuntimeWarning,
            stacklevel=2,
        )


class _Loader:
    """Wraps jupytext's own loader and registers the format once the module has run."""

    def __init__(self, loader):
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        _register(module)

    def __getattr__(self, name):  # get_source, get_filename, get_resource_reader, ...
        return getattr(self._loader, name)


class MsgFormatFinder:
    """A meta-path finder that only ever answers for the jupytext modules it watches."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in WATCHED:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        if spec.loader is not None and hasattr(spec.loader, "exec_module"):
            spec.loader = _Loader(spec.loader)
        return spec

    def invalidate_caches(self):
        pass


def install():
    """Put the finder on ``sys.meta_path`` (once); register at once if jupytext is loaded."""
    if disabled():
        return
    if not any(isinstance(f, MsgFormatFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, MsgFormatFinder())
    for name in ("jupytext.formats", "jupytext.config", "jupytext.jupytext", "jupytext.combine",
                 "jupytext.cli"):
        module = sys.modules.get(name)
        if module is not None:
            _register(module)

"""Which installed kernelspec runs a language: ``python`` -> the user's ``python3``; another
language -> the kernelspec whose ``language`` it is (the agent kernel's own is never one)."""

from __future__ import annotations

from jupyter_percent_agent.codekernel.errors import NoKernelSpec

AGENT_KERNEL = "percent-agent"
ALIASES = {
    "py": "python",
    "python3": "python",
    "ipython": "python",
    "ipython3": "python",
    "sh": "bash",
    "shell": "bash",
    "js": "javascript",
    "node": "javascript",
}


def kernel_name(language: str) -> str:
    """The kernelspec name for ``language`` (``NoKernelSpec`` naming it when none is
    installed)."""
    from jupyter_client.kernelspec import KernelSpecManager

    lang = ALIASES.get(language.lower(), language.lower())
    specs = KernelSpecManager().get_all_specs()
    if lang == "python" and "python3" in specs:
        return "python3"
    found = sorted(
        name
        for name, entry in specs.items()
        if name != AGENT_KERNEL
        and str((entry.get("spec") or {}).get("language", "")).lower() == lang
    )
    if not found:
        raise NoKernelSpec(
            f"no Jupyter kernel for {language!r} is installed (no kernelspec "
            f"with language {lang!r}; see jupyter kernelspec list)"
        )
    return found[0]

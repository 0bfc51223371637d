"""The environment of a process a test starts against the local model server.

A kernel, ``tce`` or ``jupyter`` started by a test gets this process's environment without the
user's own ``PERCENT_AGENT_*`` settings, the local server as its only model, no retries, no
back-off, no warm helper and litellm's bundled cost map (never the network).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from jupyter_percent_agent.testing.openai_server import OpenAIServer


def model_env(server: OpenAIServer, config_dir: Path, **extra: str) -> dict[str, str]:
    """This process's environment, ``PERCENT_AGENT_*`` removed, pointed at ``server`` with
    ``config_dir`` as the user config dir; ``extra`` added last (it may override)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PERCENT_AGENT_")}
    env.update(
        {
            "PERCENT_AGENT_CONFIG_DIR": str(config_dir),
            "PERCENT_AGENT_API_BASE": server.url,
            "PERCENT_AGENT_MODEL": "test-model",
            "PERCENT_AGENT_BACKOFF": "0",
            "PERCENT_AGENT_RETRIES": "0",
            "PERCENT_AGENT_TIMEOUT": "20",
            "PERCENT_AGENT_WARM": "0",
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        }
    )
    env.update(extra)
    return env


def run_tce(
    *args: str, cwd: Path, env: Mapping[str, str], timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """``tce ARGS`` as the user runs it: the ``tce`` script of this interpreter, in ``cwd``,
    with ``env``; its output captured as text."""
    return subprocess.run(
        [str(Path(sys.executable).parent / "tce"), *args],
        cwd=cwd,
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=timeout,
    )

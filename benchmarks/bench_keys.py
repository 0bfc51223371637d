"""``tce keys`` and ``tce models`` against Simon Willison's ``llm keys`` and ``llm models``:
the cold start of each command, as a user runs it.

Run with ``.venv/bin/python -m benchmarks.bench_keys`` (``make bench-peers`` installs llm in
``.venv-llm``; ``LLM_BIN`` points elsewhere). Each tool gets its own empty config directory.

Target: each <= 1.0x llm's time. None imports litellm: ``tce keys set`` checks the provider's
name, and ``tce models`` lists models, from litellm's installed files.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from benchmarks._timing import median_seconds, print_table
from benchmarks.bench_chat import _llm_bin, _run, _tce

ROOT = Path(__file__).resolve().parent.parent


def _llm() -> str | None:
    local = ROOT / ".venv-llm" / "bin" / "llm"
    return os.environ.get("LLM_BIN") or (str(local) if local.exists() else _llm_bin())


def _piped(cmd: list[str], env: dict[str, str], text: str) -> None:
    import subprocess

    p = subprocess.run(cmd, env=env, input=text, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{cmd} failed ({p.returncode}): {p.stderr.strip()[-300:]}")


def main() -> None:
    llm = _llm()
    with tempfile.TemporaryDirectory() as tmp:
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        tce_env = {**env, "PERCENT_AGENT_CONFIG_DIR": str(Path(tmp) / "tce"),
                   "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
        llm_env = {**env, "LLM_USER_PATH": str(Path(tmp) / "llm")}
        tce = _tce()
        cases = [
            ("keys set openai (key on stdin)",
             lambda: _piped([*tce, "keys", "set", "openai"], tce_env, "sk-bench\n"),
             (lambda: _piped([llm, "keys", "set", "openai"], llm_env, "sk-bench\n"))
             if llm else None, 1.0),
            ("keys list", lambda: _run([*tce, "keys", "list"], tce_env),
             (lambda: _run([llm, "keys", "list"], llm_env)) if llm else None, 1.0),
            ("models default gpt-4o", lambda: _run([*tce, "models", "default", "gpt-4o"],
                                                   tce_env),
             (lambda: _run([llm, "models", "default", "gpt-4o"], llm_env)) if llm else None,
             1.0),
            ("models (list)", lambda: _run([*tce, "models"], tce_env),
             (lambda: _run([llm, "models"], llm_env)) if llm else None, 1.0),
        ]
        rows: list[list[object]] = []
        for name, ours, theirs, target in cases:
            t = median_seconds(ours, repeat=5)
            row: list[object] = [f"tce {name}", t]
            if theirs is not None:
                peer = median_seconds(theirs, repeat=5)
                ratio = t / peer
                ok = "" if target is None else ("yes" if ratio <= target else "NO")
                row += [peer, ratio, target if target is not None else "", ok]
            else:
                row += ["", "", target or "", "(no llm)"]
            rows.append(row)
    print_table("tce keys / models vs llm keys / models (cold process, seconds)", rows,
                ["command", "tce", "llm", "ratio", "target", "met"])


if __name__ == "__main__":
    sys.exit(main())

"""The Jupyter project's own kernel conformance suite (``jupyter_kernel_test``) against the
agent kernel, over the real protocol, with the project's local model server.

What applies to a chat kernel, and what it is run with:

- kernel_info: language ``markdown``, extension ``.md``;
- is_complete: a message is complete unless blank or inside an unclosed code fence; no
  Markdown is *invalid*, so there are no invalid samples;
- display_data: a message, answered by the model, is a ``text/markdown`` display;
- error: a message whose model call fails (the server answers 500) is one ``error`` output;
- execute_result and history: the value of a ``[code]`` cell (``__result__``) is its
  ``Out[n]``; the kernel serves a message file holding that cell, and the suite's request
  (which carries no cell id, as ``nbclient`` sends none) finds it by its text. History:
  tail, range and search.

Not applicable, and why: stdout/stderr samples (a message's output is the model's reply; a
``[code]`` cell's stdout needs its cell in the file, which the suite's fixed sample code
cannot name twice), completion and inspection (nothing to complete in prose), the pager and
clear_output (the kernel has neither), the iopub welcome (ipykernel's base kernel sends none).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import unittest
from pathlib import Path
from typing import ClassVar

import jupyter_kernel_test
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager

from jupyter_percent_agent.kernel import KERNEL_NAME
from jupyter_percent_agent.testing.kernels import copy_kernelspec
from jupyter_percent_agent.testing.openai_server import OpenAIServer, Reply

CODE = "__result__ = 6 * 7"
NOTEBOOK = ("# %% The answer[^c1]\n[^c1]: [code] language=\"python\"\n\n"
            f"```python\n{CODE}\n```\n")
FAIL = "Please fail."


def _reply(body: dict) -> Reply | str:
    last = body["messages"][-1]["content"]
    return Reply.http_error(500, "the model is down") if FAIL in last else "Hello, world."


class AgentKernelTests(jupyter_kernel_test.KernelTests):
    kernel_name = KERNEL_NAME
    language_name = "markdown"
    file_extension = ".md"

    complete_code_samples: ClassVar[list[str]] = [
        "Hello", "Compare:\n```python\nx = 1\n```", "# A heading"]
    incomplete_code_samples: ClassVar[list[str]] = [
        "Look at this:\n```python\nx = 1", "   ", "~~~\nopen"]
    invalid_code_samples: ClassVar[list[str]] = []

    code_display_data: ClassVar[list[dict[str, str]]] = [
        {"code": "Say hello.", "mime": "text/markdown"}]
    code_generate_error = FAIL
    code_execute_result: ClassVar[list[dict[str, str]]] = [
        {"code": CODE, "mime": "text/plain", "result": "42"}]
    code_history_pattern = "__result__*"
    supported_history_operations = ("tail", "range", "search")

    @classmethod
    def setUpClass(cls) -> None:
        cls.server = OpenAIServer()
        cls.server.__enter__()
        cls.server.responder = _reply
        cls.tmp = Path(tempfile.mkdtemp(prefix="kernel-conformance-"))
        copy_kernelspec(cls.tmp / "kernels")
        notebook = cls.tmp / "answer.msg.md"
        notebook.write_text(NOTEBOOK)
        env = {k: v for k, v in os.environ.items() if not k.startswith("PERCENT_AGENT_")}
        env.update({"PERCENT_AGENT_API_BASE": cls.server.url, "PERCENT_AGENT_MODEL": "m",
                    "PERCENT_AGENT_RETRIES": "0", "PERCENT_AGENT_BACKOFF": "0",
                    "PERCENT_AGENT_WARM": "0", "PERCENT_AGENT_PRELOAD": "0",
                    "PERCENT_AGENT_CONFIG_DIR": str(cls.tmp / "config"),
                    "LITELLM_LOCAL_MODEL_COST_MAP": "True", "JPY_SESSION_NAME": str(notebook)})
        ksm = KernelSpecManager(kernel_dirs=[str(cls.tmp / "kernels")])
        cls.km = KernelManager(kernel_name=KERNEL_NAME, kernel_spec_manager=ksm)
        cls.km.start_kernel(env=env, cwd=str(cls.tmp))
        cls.kc = cls.km.client()
        cls.kc.start_channels()
        cls.kc.wait_for_ready(timeout=60)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.kc.stop_channels()
        cls.km.shutdown_kernel(now=True)
        cls.server.__exit__(None, None, None)
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def execute_helper(self, code: str, timeout: int = 60, **kw):  # type: ignore[override]
        # a model reply takes longer than the suite's 15 s default on a busy machine
        return super().execute_helper(code, timeout=timeout, **kw)


if __name__ == "__main__":
    unittest.main()

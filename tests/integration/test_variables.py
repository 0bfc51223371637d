"""``@var:NAME`` in a message: the value from the conversation's code kernel, as that kernel
shows it, goes with the message (the Agent kernel over the Jupyter protocol, ``tce exec``);
an unknown name or no kernel is one line and the message is still sent; untrusted folders
and what is not a name are refused before anything starts. The local model server records
what the model got."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_percent_agent.testing.environment import run_tce
from jupyter_percent_agent.testing.kernels import execute, kernel_env, start, stop, trust_for_kernel
from jupyter_percent_agent.testing.openai_server import OpenAIServer
from tests.helpers.images import PNG

FRONT = "---\nagents:\n  a: {models: [test-model], vision: true}\ndefault_agent: a\n---\n\n"
SETUP = (
    "import base64\nfrom IPython.display import Image\n"
    "try:\n    import pandas as pd\n"
    "    table = pd.DataFrame({'city': ['Lyon', 'Nice'], 'people': [522250, 342669]})\n"
    "except ImportError:\n    table = {'Lyon': 522250, 'Nice': 342669}\n"
    f"pic = Image(data=base64.b64decode({PNG!r}))\nsecret_count = 0"
)
ASK = "What do @var:table and @var:pic show? Is @var:missing there?"
FILE = (
    FRONT + f"# %% Setup[^c1]\n[^c1]: [code]\n\n```python\n{SETUP}\n```\n\n"
    f"# %% Ask[^m1]\n[^m1]: [markdown]\n\n{ASK}\n"
)


def sent_text(server: OpenAIServer) -> tuple[str, list[str]]:
    """The last user message the model got: its text, and its images' data URLs."""
    content = server.last_messages[-1]["content"]
    if isinstance(content, str):
        return content, []
    text = "".join(p.get("text", "") for p in content if p.get("type") == "text")
    return text, [p["image_url"]["url"] for p in content if p.get("type") == "image_url"]


def assert_values_sent(text: str, images: list[str]) -> None:
    assert ASK in text  # the message itself, as written
    assert "Lyon" in text and "522250" in text  # the table as the kernel shows it
    assert "[The value of `table` in the user's code kernel (text/plain)" in text
    assert "[@var:missing: not available in the code kernel (NameError:" in text
    assert len(images) == 1 and images[0].startswith("data:image/png;base64,")


@pytest.fixture
def agent_kernel(
    spec_dir: Path, server: OpenAIServer, tmp_path: Path
) -> Iterator[tuple[Any, OpenAIServer]]:
    notebook = tmp_path / "vars.msg.md"
    notebook.write_text(FILE)
    trust_for_kernel(tmp_path)
    km, kc = start(spec_dir, kernel_env(server, JPY_SESSION_NAME=str(notebook)), cwd=str(tmp_path))
    server.reset()
    yield kc, server
    stop(km, kc)


def test_the_agent_kernel_sends_the_values_a_message_names(
    agent_kernel: tuple[Any, OpenAIServer],
) -> None:
    kc, server = agent_kernel
    reply, _ = execute(kc, SETUP, "c1")  # the code kernel's cell 1
    assert reply["content"]["status"] == "ok", reply["content"]
    reply, _ = execute(kc, ASK, "m1")
    assert reply["content"]["status"] == "ok", reply["content"]
    assert_values_sent(*sent_text(server))
    # looking the values up ran no cell: the next cell is the code kernel's cell 2
    _, iopub = execute(kc, "secret_count", "c1")
    (result,) = [m["content"] for m in iopub if m["msg_type"] == "execute_result"]
    assert result["execution_count"] == 2 and result["data"]["text/plain"] == "0"


def test_with_no_code_kernel_running_the_message_goes_with_one_line(
    agent_kernel: tuple[Any, OpenAIServer],
) -> None:
    kc, server = agent_kernel
    reply, _ = execute(kc, "Anything in @var:table?", "m1")
    assert reply["content"]["status"] == "ok", reply["content"]
    text, images = sent_text(server)
    assert "Anything in @var:table?" in text and not images
    assert "[@var:table: no code kernel is running in this conversation" in text


def test_tce_exec_sends_the_values_from_the_kernel_that_ran_the_cells(
    tmp_path: Path, env: dict[str, str], local_model: OpenAIServer, trusted: Callable[[Path], Path]
) -> None:
    trusted(tmp_path)
    path = tmp_path / "vars.msg.md"
    path.write_text(FILE)
    done = run_tce("exec", str(path), env=env)
    assert done.returncode == 0, done.stderr
    assert_values_sent(*sent_text(local_model))


def test_an_untrusted_folder_refuses_var_and_starts_nothing(
    tmp_path: Path, env: dict[str, str], local_model: OpenAIServer
) -> None:
    path = tmp_path / "vars.msg.md"
    path.write_text(FRONT)
    before = path.read_bytes()
    done = run_tce("chat", str(path), "-m", "Show @var:table", env=env)
    assert done.returncode == 6, done.stderr
    assert done.stderr.strip() == (
        f"tce: refused: @var:table reads the code kernel, and "
        f"{tmp_path} is not trusted; to allow it: tce trust {tmp_path}"
    )
    assert local_model.chat_requests == [] and path.read_bytes() == before


@pytest.mark.parametrize("token", ["os.system('x')", "table[0]", "import", "1st"])
def test_what_is_not_a_name_is_refused(
    tmp_path: Path,
    env: dict[str, str],
    local_model: OpenAIServer,
    trusted: Callable[[Path], Path],
    token: str,
) -> None:
    trusted(tmp_path)
    path = tmp_path / "vars.msg.md"
    path.write_text(FRONT)
    done = run_tce("chat", str(path), "-m", f"Show @var:{token} now", env=env)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().startswith(f"tce: @var:{token}: not a variable name")
    assert local_model.chat_requests == []

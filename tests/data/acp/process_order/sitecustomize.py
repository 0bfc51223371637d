"""Run by Python at start in the processes of a test that puts this folder on ``PYTHONPATH``
(tests/integration/test_acp_chat_startup.py): whenever a process starts a program, one line on
stderr saying whether the ACP SDK's models (``acp.schema``) were imported by then."""

import sys


def _told(event: str, args: tuple) -> None:
    if event == "subprocess.Popen":
        command = " ".join(str(a) for a in args[1] or ())
        sys.stderr.write(f"started-process: sdk_imported={'acp.schema' in sys.modules} "
                         f"{command}\n")


sys.addaudithook(_told)

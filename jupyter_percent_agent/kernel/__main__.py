"""``python -m jupyter_percent_agent.kernel -f CONNECTION_FILE``: start the agent kernel.

The kernelspec starts it through ``jupyter_percent_agent.safe_start``, so that nothing of the
notebook's folder is on ``sys.path``; IPython is told not to put it back (``ignore_cwd``: it
inserts the working folder unless told so, and older IPythons ignore ``-P``).
"""

from __future__ import annotations


def main() -> None:
    """Launch the kernel (ipykernel's application with ``AgentKernel``)."""
    from ipykernel.kernelapp import IPKernelApp

    from jupyter_percent_agent.kernel.kernel import AgentKernel

    IPKernelApp.launch_instance(kernel_class=AgentKernel, ignore_cwd=True)


if __name__ == "__main__":
    main()

"""``python -m jupyter_percent_agent.kernel -f CONNECTION_FILE``: start the agent kernel."""

from __future__ import annotations


def main() -> None:
    """Launch the kernel (ipykernel's application with ``AgentKernel``)."""
    from ipykernel.kernelapp import IPKernelApp

    from jupyter_percent_agent.kernel.kernel import AgentKernel

    IPKernelApp.launch_instance(kernel_class=AgentKernel)


if __name__ == "__main__":
    main()

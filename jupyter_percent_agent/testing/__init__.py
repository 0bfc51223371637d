"""Test tooling shipped with the package: a local OpenAI-compatible model server, the
environment of the processes a test points at it and the one way to run ``tce``
(``environment``), and the one way to start and drive a kernel (``kernels``)."""

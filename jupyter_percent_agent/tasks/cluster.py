"""Many inputs on a Dask distributed cluster (``pip install "jupyter-percent-agent[dask]"``).

The user starts the scheduler and workers (``dask scheduler``, ``dask worker tcp://HOST:8786``);
this sends one job per input (``batch.run_remote``), at most N in flight, and hands each result
back as it arrives. Workers read the SOP folder and write the transcripts by path, so the
folder and the runs folder must be reachable there under the same paths (a shared filesystem,
as for any data Dask reads); the results and transcripts are those of a local run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jupyter_percent_agent.errors import Kind, PercentAgentError
from jupyter_percent_agent.tasks.batch import Job, OnResult, failed, run_remote
from jupyter_percent_agent.tasks.runner import DEFAULT_MAX_STEPS

CONNECT_TIMEOUT = "10s"


class ClusterError(PercentAgentError, RuntimeError):
    """Dask is not installed, or the scheduler cannot be reached."""

    error_kind = Kind.USAGE


def run_on_cluster(address: str, sop_root: Path, task_id: str, jobs: list[Job], *,
                   runs_dir: Path, concurrency: int = 8, max_steps: int = DEFAULT_MAX_STEPS,
                   model: str | None = None, on_result: OnResult | None = None
                   ) -> list[dict[str, Any]]:
    """Run every job on the cluster at ``address``; results in input order."""
    try:
        from distributed import Client, as_completed
    except ImportError:
        raise ClusterError('--cluster needs Dask distributed: pip install '
                           '"jupyter-percent-agent[dask]"') from None
    try:
        client = Client(address, timeout=CONNECT_TIMEOUT, set_as_default=False)
    except (OSError, TimeoutError) as exc:
        raise ClusterError(f"cannot reach the Dask scheduler at {address}: {exc}") from None
    specs = {job.index: {"sop": str(sop_root.resolve()), "task_id": task_id,
                         "index": job.index, "context": job.context, "error": job.error,
                         "runs_dir": str(runs_dir.resolve()), "max_steps": max_steps,
                         "model": model} for job in jobs}
    by_index = {job.index: job for job in jobs}
    results: dict[int, dict[str, Any]] = {}
    try:
        waiting = iter(specs.values())
        running = as_completed(loop=client.loop)
        owner: dict[str, int] = {}

        def submit() -> None:
            spec = next(waiting, None)
            if spec is not None:
                future = client.submit(run_remote, spec, pure=False,
                                       key=f"tce-run-{task_id}-{spec['index']}-{id(spec)}")
                owner[future.key] = spec["index"]
                running.add(future)

        for _ in range(max(1, concurrency)):
            submit()
        for future in running:
            index = owner.pop(future.key)
            try:
                result = future.result()
            except Exception as exc:  # the worker died, or the job could not be sent
                result = failed(by_index[index], f"on the cluster: {type(exc).__name__}: "
                                f"{exc}", "cluster_error", task_id=task_id)
            results[index] = result
            if on_result is not None:
                on_result(result)
            submit()
    finally:
        client.close()
    return [results[job.index] for job in jobs]

"""Managing a durable run with its node steps: resume it after its worker died, cancel it.

A run's node steps are DBOS workflows of their own (ids below the run's, `{run id}/...`), so
what is done to a run is done to those of its node steps it concerns. Each function takes
the DBOS API to use: the `DBOS` class (launched, called outside any workflow, with no event
loop running in the thread) or a `DBOSClient`, which have the same calls.

Example:
    >>> from dbos import DBOSClient  # doctest: +SKIP
    >>> resume_run(DBOSClient(system_database_url="sqlite:///runs.sqlite"), "team:c:0")  # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

from raf.errors import DurableRunError

__all__ = ["cancel_node_steps", "cancel_run", "resume_run"]


def resume_run(api: Any, run_id: str) -> None:
    """Have a live worker go on with run `run_id`, whose worker died, and with each of its
    node steps that was running on that worker (DBOS `resume_workflow` queues them for any
    worker); node steps running on live workers go on there.

    Raises:
        DurableRunError: when the system database has no run `run_id`.
    """
    found = api.list_workflows(workflow_ids=[run_id], load_input=False, load_output=False)
    if not found:
        raise DurableRunError(f"no durable run {run_id!r} in this system database", path=())
    running = api.list_workflows(
        workflow_id_prefix=f"{run_id}/",
        status="PENDING",
        executor_id=found[0].executor_id,
        load_input=False,
        load_output=False,
    )
    for step in running:
        api.resume_workflow(step.workflow_id)
    api.resume_workflow(run_id)


def cancel_run(api: Any, run_id: str) -> None:
    """Cancel run `run_id` and its node steps that have not ended."""
    api.cancel_workflow(run_id)
    cancel_node_steps(api, run_id)


def cancel_node_steps(api: Any, run_id: str) -> None:
    """Cancel the node steps of run `run_id` that have not ended, on any worker."""
    running = api.list_workflows(
        workflow_id_prefix=f"{run_id}/",
        status=["PENDING", "ENQUEUED"],
        load_input=False,
        load_output=False,
    )
    for step in running:
        api.cancel_workflow(step.workflow_id)

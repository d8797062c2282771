"""Ingestion as jobs: a queue in the catalog with leases, retries on the seed's backoff, a DLQ."""

from .backoff import DEFAULT_MAX_ATTEMPTS, delay_bounds, retry_delay
from .queue import DEFAULT_LEASE_S, JobPage, JobQueue, NewJob, Pruned, Retention
from .table import DLQ, DONE, FAILED, PENDING, RUNNING, STATUSES
from .worker import JobOutcome, Worker, jobs_for_paths

__all__ = [
    "DEFAULT_LEASE_S", "DEFAULT_MAX_ATTEMPTS", "DLQ", "DONE", "FAILED", "PENDING", "RUNNING",
    "STATUSES", "JobOutcome", "JobPage", "JobQueue", "NewJob", "Pruned", "Retention", "Worker", "delay_bounds", "jobs_for_paths",
    "retry_delay",
]

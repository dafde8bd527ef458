"""Managed Spot training: the instances can be reclaimed mid-job, and the job resumes from its checkpoints.

As on SageMaker (Managed Spot Training): when Spot capacity is reclaimed, the job's secondary status
goes Interrupted; what the script wrote to its checkpoint directory (CheckpointConfig.LocalPath, synced to
CheckpointConfig.S3Uri) is kept; once capacity is back, fresh instances get the checkpoints from S3 and
run the script again, which resumes from them. The job is stopped (MaxWaitTimeExceeded) if that would pass
StoppingCondition.MaxWaitTimeInSeconds. BillableTimeInSeconds counts only the seconds instances ran.

Spot capacity is never reclaimed here by itself: `POST /moto-api/mlscale-faults/spot-interruption/<job>`
(mlscale_emulator.faults) is the fault switch that does it, so a test or a person chooses when.
"""

from __future__ import annotations

import shutil
import threading
import time
from typing import Any

from mlscale_emulator.executors import checkpoints

INTERRUPTED = object()  # what TrainingRun._train answers when the instances were reclaimed
CAPACITY_WAIT_SECONDS = 3  # until Spot capacity is back (minutes or more on AWS)


class Spot:
    def __init__(self, job: Any):
        self.job = job
        self.enabled = bool(getattr(job, "enable_managed_spot_training", False))
        self.reclaim = threading.Event()
        self.interruptions = 0
        self.ran_seconds = 0.0  # instance time, the billable part

    def interrupt(self) -> None:
        """The fault switch: reclaim the job's instances now."""
        if not self.enabled:
            raise ValueError(
                f"{self.job.training_job_name} is not a Managed Spot training job (EnableManagedSpotTraining)"
            )
        self.reclaim.set()

    def billable(self, training_seconds: int) -> int:
        return max(1, min(training_seconds, round(self.ran_seconds))) if self.enabled else training_seconds

    def restart(self, run: Any, s3: Any, layouts: list) -> bool:
        """After an interruption: keep the checkpoints, wait for capacity, give fresh instances the checkpoints.

        False when the job must not go on (stopped meanwhile, or MaxWaitTimeInSeconds would pass).
        """
        self.reclaim.clear()
        self.interruptions += 1
        for layout in layouts:
            checkpoints.sync_up(s3, self.job, layout)
        run._set_status(
            "InProgress",
            "Interrupted",
            f"The Spot instances were interrupted: waiting for Spot capacity (interruption {self.interruptions})",
        )
        deadline = time.monotonic() + CAPACITY_WAIT_SECONDS
        while time.monotonic() < deadline:
            if run._stop_requested.is_set():
                return False
            time.sleep(0.1)
        max_wait = (self.job.stopping_condition or {}).get("MaxWaitTimeInSeconds")
        waited = time.time() - self.job.creation_time.timestamp()
        if max_wait and waited >= int(max_wait):
            run.stop("MaxWaitTimeExceeded")
            return False
        run._set_status("InProgress", "Starting", "Launching requested ML instances (Spot)")
        for layout in layouts:  # new instances: only what reached S3 comes back
            shutil.rmtree(layout.checkpoint_dir, ignore_errors=True)
            layout.checkpoint_dir.mkdir(parents=True)
            checkpoints.sync_down(s3, self.job, layout)
        run._set_status("InProgress", "Training", "Training resumed on new Spot instances from the checkpoints")
        return True

"""Each emulated resource moves only between the statuses its service moves between."""

from __future__ import annotations

import pytest

from mlscale_emulator import transitions
from mlscale_emulator.transitions import IllegalTransition, Status, arm


class Job:
    status = Status(transitions.SAGEMAKER_JOB)

    def __init__(self):
        self.status = "Completed"  # what moto's constructor sets first
        self.status = "InProgress"  # then the emulated model's own start
        arm(self)


def test_a_status_moves_only_along_its_table():
    job = Job()
    job.status = "InProgress"  # the same status again (a new secondary status) is no move
    job.status = "Stopping"
    job.status = "Stopped"
    with pytest.raises(IllegalTransition, match="Stopped -> InProgress is not a transition of its service"):
        job.status = "InProgress"
    assert job.status == "Stopped"


def test_an_unset_status_is_an_attribute_error_so_getattr_defaults_work():
    class Model:
        lifecycle = Status(transitions.FSX_TASK)

    assert getattr(Model(), "lifecycle", "AVAILABLE") == "AVAILABLE"


def test_records_kept_as_dicts_move_the_same_way():
    deployment = {"deploymentStatus": "ACTIVE"}
    transitions.move(deployment, "deploymentStatus", "INACTIVE", transitions.GREENGRASS_DEPLOYMENT, "deployment d")
    with pytest.raises(IllegalTransition, match="deployment d: INACTIVE -> COMPLETED"):
        transitions.move(deployment, "deploymentStatus", "COMPLETED", transitions.GREENGRASS_DEPLOYMENT, "deployment d")


@pytest.mark.parametrize("table", [v for k, v in vars(transitions).items() if k.isupper() and isinstance(v, dict)])
def test_every_status_in_a_table_leads_somewhere_else(table):
    for source, targets in table.items():
        assert targets and source not in targets

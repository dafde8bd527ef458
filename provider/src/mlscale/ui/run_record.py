"""What the run view shows about one DAG run, read from Airflow's metadata database."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

# Which operator classes make each stage's result: the view finds results by what a task is, not its id.
STAGE_OPERATORS: dict[str, tuple[str, ...]] = {
    "quality": ("DataQualityOperator",),
    "processing": ("SageMakerProcessingScriptOperator", "ProcessingJobSensor"),
    "fsx": ("FSxLustreStageOperator",),
    "training": (
        "SageMakerScriptTrainingOperator",
        "TrainingJobSensor",
        "BatchMultiNodeTrainingOperator",
        "BatchJobSensor",
    ),
    "diagnosis": ("TrainingDiagnosisOperator",),
    "evaluation": ("SageMakerBatchEvaluationOperator",),
    "compilation": ("SageMakerNeoCompilationOperator", "CompilationJobSensor"),
    "endpoint": ("SageMakerEndpointDeployOperator", "EndpointSensor"),
    "edge": ("GreengrassEdgeDeployOperator", "GreengrassDeploymentSensor"),
}


@dataclass
class TaskRow:
    task_id: str
    state: str | None
    start: datetime | None
    end: datetime | None
    operator: str | None = None  # the task's class name, as Airflow records it

    @property
    def seconds(self) -> float | None:
        return (self.end - self.start).total_seconds() if self.start and self.end else None


@dataclass
class RunRecord:
    dag_id: str
    run_id: str
    state: str | None
    tasks: list[TaskRow]
    xcoms: dict[str, Any] = field(default_factory=dict)  # task_id -> return value
    extra: dict[str, Any] = field(default_factory=dict)  # (task_id, key) pushes such as the failed quality result
    curves: dict[str, list[float]] = field(default_factory=dict)  # metric -> values per epoch, from the job's log
    curves_error: str | None = None

    def stage(self, kind: str) -> dict[str, Any]:
        """The result of the run's last task of this stage kind (a sensor's counts: it waited for the stage)."""
        classes = STAGE_OPERATORS[kind]
        found: dict[str, Any] = {}
        for task in self.tasks:  # in start order: a later sensor completes what its submit task began
            value = self.xcoms.get(task.task_id)
            if task.operator in classes and isinstance(value, dict):
                found = {**found, **value}
        return found

    def has_stages(self) -> bool:
        known = {name for names in STAGE_OPERATORS.values() for name in names}
        return any(task.operator in known for task in self.tasks)

    def s3_uris(self) -> set[str]:
        """Every s3:// string in the run's XComs: the only objects the view will fetch."""
        found: set[str] = set()

        def walk(value: Any) -> None:
            if isinstance(value, str) and value.startswith("s3://"):
                found.add(value)
            elif isinstance(value, dict):
                for item in value.values():
                    walk(item)
            elif isinstance(value, (list, tuple)):
                for item in value:
                    walk(item)

        walk(self.xcoms)
        walk(self.extra)
        return found


def load_run(dag_id: str, run_id: str) -> RunRecord | None:
    """The run's task instances and XComs (the API server has the database)."""
    from airflow.models.dagrun import DagRun
    from airflow.models.taskinstance import TaskInstance
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    with create_session() as session:
        run = session.query(DagRun).filter(DagRun.dag_id == dag_id, DagRun.run_id == run_id).one_or_none()
        if run is None:
            return None
        instances = session.query(TaskInstance).filter(TaskInstance.dag_id == dag_id, TaskInstance.run_id == run_id)
        tasks = sorted(
            (
                TaskRow(t.task_id, str(t.state) if t.state else None, t.start_date, t.end_date, t.operator)
                for t in instances
            ),
            key=lambda t: (t.start is None, t.start.timestamp() if t.start else 0.0, t.task_id),
        )
        rows = session.query(XComModel).filter(XComModel.dag_id == dag_id, XComModel.run_id == run_id).all()
        xcoms = {r.task_id: XComModel.deserialize_value(r) for r in rows if r.key == "return_value"}
        extra = {f"{r.task_id}.{r.key}": XComModel.deserialize_value(r) for r in rows if r.key != "return_value"}
        return RunRecord(dag_id, run_id, str(run.state) if run.state else None, tasks, xcoms, extra)

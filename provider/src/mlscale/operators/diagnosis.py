"""Diagnose a finished training job from its CloudWatch utilisation and recommend the next configuration."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

from airflow.providers.amazon.aws.hooks.sagemaker import SageMakerHook

from mlscale.operators.stage import StageOperator, Wait
from mlscale.specs.diagnosis import DiagnosisSpec

if TYPE_CHECKING:
    from airflow.sdk import Context

NAMESPACE = "/aws/sagemaker/TrainingJobs"
METRICS = ("CPUUtilization", "MemoryUtilization", "DiskUtilization", "GPUUtilization", "GPUMemoryUtilization")


class TrainingDiagnosisOperator(StageOperator):
    """Classify a training job (data-, I/O-, compute- or memory-bound) and propose the next rung of the ladder.

    Reads /aws/sagemaker/TrainingJobs (Host=<job>/algo-N) with GetMetricData
    over the job's training time, plus the loader's data-wait fraction when a
    metric definition captured it. XCom: verdict, reasons, stats,
    recommendation (instance type and count, changes, reason). Nothing to
    wait for: the job has ended and its metrics are read once.
    """

    aws_hook_class = SageMakerHook
    ui_color = "#fff2cc"

    def __init__(self, *, spec: DiagnosisSpec, **kwargs: Any):
        super().__init__(spec=spec, **kwargs)

    def advance(self, context: Context, settled: dict[str, Any] | None) -> dict[str, Any] | Wait:
        from mlscale.advisors.instances import INSTANCES
        from mlscale.advisors.scaling import Evidence, classify, next_step

        spec = self.spec
        job = self.hook.describe_training_job(spec.job_name)
        instance_type = job["ResourceConfig"]["InstanceType"]
        count = job["ResourceConfig"]["InstanceCount"]
        cloudwatch = self.aws_client("cloudwatch")
        series = self._metrics(cloudwatch, job, count)
        final = {m["MetricName"]: m["Value"] for m in job.get("FinalMetricDataList", [])}
        points = sum(len(v) for v in series.values())
        if not points:
            reason = (
                "no utilisation metrics for the job in CloudWatch: it ran for less than a period, "
                "or its metrics have expired"
            )
            self.log.warning(reason)
            return {
                "job_name": spec.job_name,
                "verdict": "unknown",
                "reasons": [reason],
                "stats": {},
                "recommendation": None,
            }
        instance = INSTANCES.get(instance_type)
        if instance is None:
            from mlscale.advisors.instances import InstanceType

            instance = InstanceType(instance_type, 0, "-", 0, 1, 0, 0, 0)  # unknown type: CPU shares as reported
        evidence = Evidence.from_sagemaker(series, instance, final.get(spec.data_wait_metric))
        verdict = classify(evidence, has_gpu=bool(series.get("GPUUtilization")))
        recommendation = (
            next_step(verdict, instance_type, count, spec.loader_workers).to_dict()
            if instance_type in INSTANCES
            else None
        )
        self.log.info("Training job %s is %s: %s", spec.job_name, verdict.bound, "; ".join(verdict.reasons))
        self.log.info("Evidence (%d points): %s", points, {k: round(v, 1) for k, v in verdict.stats.items()})
        if recommendation:
            self.log.info(
                "Next step (%s): %s x %s; %s. %s",
                recommendation["step"],
                recommendation["instance_count"],
                recommendation["instance_type"],
                "; ".join(recommendation["changes"]),
                recommendation["reason"],
            )
        return {
            "job_name": spec.job_name,
            "instance_type": instance_type,
            "instance_count": count,
            "verdict": verdict.bound,
            "reasons": verdict.reasons,
            "stats": {k: round(v, 3) for k, v in verdict.stats.items()},
            "points": points,
            "recommendation": recommendation,
        }

    def _metrics(self, cloudwatch, job: dict, count: int) -> dict[str, list[float]]:
        spec = self.spec
        start = job.get("TrainingStartTime") or job["CreationTime"]
        end = (job.get("TrainingEndTime") or job["LastModifiedTime"]) + timedelta(seconds=spec.period)
        queries = [
            {
                "Id": f"m{h}_{i}",
                "Label": name,
                "MetricStat": {
                    "Metric": {
                        "Namespace": NAMESPACE,
                        "MetricName": name,
                        "Dimensions": [{"Name": "Host", "Value": f"{spec.job_name}/algo-{h}"}],
                    },
                    "Period": spec.period,
                    "Stat": "Average",
                },
            }
            for h in range(1, count + 1)
            for i, name in enumerate(METRICS)
        ]
        series: dict[str, list[float]] = {name: [] for name in METRICS}
        for batch in range(0, len(queries), 500):
            paginator = cloudwatch.get_paginator("get_metric_data")
            for page in paginator.paginate(
                MetricDataQueries=queries[batch : batch + 500], StartTime=start, EndTime=end
            ):
                for result in page["MetricDataResults"]:
                    series[result["Label"]].extend(result["Values"])
        return {name: values for name, values in series.items() if values}

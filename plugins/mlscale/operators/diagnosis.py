"""Diagnose a finished training job from its CloudWatch utilisation and recommend the next configuration."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from airflow.providers.amazon.aws.hooks.sagemaker import SageMakerHook
from airflow.providers.amazon.aws.operators.base_aws import AwsBaseOperator
from airflow.providers.amazon.aws.utils.mixins import aws_template_fields

if TYPE_CHECKING:
    from airflow.sdk import Context

NAMESPACE = "/aws/sagemaker/TrainingJobs"
METRICS = ("CPUUtilization", "MemoryUtilization", "DiskUtilization", "GPUUtilization", "GPUMemoryUtilization")


class TrainingDiagnosisOperator(AwsBaseOperator[SageMakerHook]):
    """Classify a training job (data-, I/O-, compute- or memory-bound) and propose the next rung of the ladder.

    Reads /aws/sagemaker/TrainingJobs (Host=<job>/algo-N) with GetMetricData
    over the job's training time, plus the loader's data-wait fraction when a
    metric definition captured it. XCom: verdict, reasons, stats,
    recommendation (instance type and count, changes, reason).
    """

    aws_hook_class = SageMakerHook
    template_fields: Sequence[str] = (*aws_template_fields(), "job_name", "loader_workers", "period")
    ui_color = "#fff2cc"

    def __init__(self, *, job_name: str, loader_workers: int = 1, period: int = 60,
                 data_wait_metric: str = "data:wait_fraction", **kwargs: Any):  # fmt: skip
        super().__init__(**kwargs)
        self.job_name, self.loader_workers, self.period = job_name, loader_workers, period
        self.data_wait_metric = data_wait_metric

    def execute(self, context: Context) -> dict[str, Any]:
        from airflow.providers.amazon.aws.hooks.base_aws import AwsBaseHook

        from mlscale.advisors.instances import INSTANCES
        from mlscale.advisors.scaling import Evidence, classify, next_step

        job = self.hook.describe_training_job(self.job_name)
        instance_type = job["ResourceConfig"]["InstanceType"]
        count = job["ResourceConfig"]["InstanceCount"]
        cloudwatch = AwsBaseHook(aws_conn_id=self.aws_conn_id, region_name=self.region_name, verify=self.verify,
                                 config=self.botocore_config, client_type="cloudwatch").get_conn()  # fmt: skip
        series = self._metrics(cloudwatch, job, count)
        final = {m["MetricName"]: m["Value"] for m in job.get("FinalMetricDataList", [])}
        points = sum(len(v) for v in series.values())
        if not points:
            reason = ("no utilisation metrics for the job in CloudWatch: it ran for less than a period, "
                      "or its metrics have expired")  # fmt: skip
            self.log.warning(reason)
            return {"job_name": self.job_name, "verdict": "unknown", "reasons": [reason], "stats": {},
                    "recommendation": None}  # fmt: skip
        spec = INSTANCES.get(instance_type)
        if spec is None:
            from mlscale.advisors.instances import InstanceType

            spec = InstanceType(instance_type, 0, "-", 0, 1, 0, 0, 0)  # unknown type: CPU shares as reported
        evidence = Evidence.from_sagemaker(series, spec, final.get(self.data_wait_metric))
        verdict = classify(evidence, has_gpu=bool(series.get("GPUUtilization")))
        recommendation = (next_step(verdict, instance_type, count, int(self.loader_workers)).to_dict()
                          if instance_type in INSTANCES else None)  # fmt: skip
        self.log.info("Training job %s is %s: %s", self.job_name, verdict.bound, "; ".join(verdict.reasons))
        self.log.info("Evidence (%d points): %s", points, {k: round(v, 1) for k, v in verdict.stats.items()})
        if recommendation:
            self.log.info("Next step (%s): %s x %s; %s. %s", recommendation["step"], recommendation["instance_count"],
                          recommendation["instance_type"], "; ".join(recommendation["changes"]),
                          recommendation["reason"])  # fmt: skip
        return {"job_name": self.job_name, "instance_type": instance_type, "instance_count": count,
                "verdict": verdict.bound, "reasons": verdict.reasons,
                "stats": {k: round(v, 3) for k, v in verdict.stats.items()}, "points": points,
                "recommendation": recommendation}  # fmt: skip

    def _metrics(self, cloudwatch, job: dict, count: int) -> dict[str, list[float]]:
        start = job.get("TrainingStartTime") or job["CreationTime"]
        end = (job.get("TrainingEndTime") or job["LastModifiedTime"]) + timedelta(seconds=int(self.period))
        queries = [
            {"Id": f"m{h}_{i}", "Label": name,
             "MetricStat": {"Metric": {"Namespace": NAMESPACE, "MetricName": name,
                                       "Dimensions": [{"Name": "Host", "Value": f"{self.job_name}/algo-{h}"}]},
                            "Period": int(self.period), "Stat": "Average"}}
            for h in range(1, count + 1) for i, name in enumerate(METRICS)
        ]  # fmt: skip
        series: dict[str, list[float]] = {name: [] for name in METRICS}
        for batch in range(0, len(queries), 500):
            paginator = cloudwatch.get_paginator("get_metric_data")
            for page in paginator.paginate(MetricDataQueries=queries[batch : batch + 500], StartTime=start,
                                           EndTime=end):  # fmt: skip
                for result in page["MetricDataResults"]:
                    series[result["Label"]].extend(result["Values"])
        return {name: values for name, values in series.items() if values}

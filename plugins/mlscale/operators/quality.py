"""Data quality gate: Athena aggregates over the interval, a profile of the ETL output, plots, a verdict."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from airflow.providers.amazon.aws.hooks.athena import AthenaHook
from airflow.providers.amazon.aws.operators.base_aws import AwsBaseOperator
from airflow.providers.amazon.aws.utils.mixins import aws_template_fields
from airflow.sdk.exceptions import AirflowException

if TYPE_CHECKING:
    from airflow.sdk import Context

from mlscale.specs.errors import SpecError


class DataQualityOperator(AwsBaseOperator[AthenaHook]):
    """Profile a dataset and stop the pipeline when a check fails.

    Counts, missing values and duplicate keys come from one Athena aggregate
    query over `table` filtered by `where` (the interval ETL read); label
    balance, per-feature summaries and drift (Population Stability Index
    against the last run that passed) come from the ETL output at
    `data_prefix`. Plots (PNG) and an HTML report go to
    `<report_prefix>/<run>/`; a failed check fails the task naming the check,
    the value and the threshold, after the report is written.

    XCom: verdict, report_uri, checks, drift, rows.
    """

    aws_hook_class = AthenaHook
    template_fields: Sequence[str] = (*aws_template_fields(), "database", "table", "where", "data_prefix",
                                      "report_prefix", "output_location", "thresholds")  # fmt: skip
    ui_color = "#e6ccff"

    def __init__(self, *, database: str, table: str, where: str, data_prefix: str, report_prefix: str,
                 output_location: str, key_column: str = "record_id", columns: Sequence[str] = ("label", "pixels"),
                 thresholds: dict | None = None, workgroup: str = "primary", sleep_time: float = 2,
                 **kwargs: Any):  # fmt: skip
        super().__init__(**kwargs)
        self.database, self.table, self.where = database, table, where
        self.data_prefix, self.report_prefix, self.output_location = data_prefix, report_prefix, output_location
        self.key_column, self.columns = key_column, list(columns)
        self.thresholds = thresholds or {}
        self.workgroup, self.sleep_time = workgroup, sleep_time

    def aggregate_query(self) -> str:
        missing = ", ".join(f"sum(CASE WHEN {c} IS NULL THEN 1 ELSE 0 END) AS missing_{c}" for c in self.columns)
        return (f"SELECT count(*) AS row_count, count(DISTINCT {self.key_column}) AS distinct_keys, {missing} "
                f"FROM {self.database}.{self.table} WHERE {self.where}")  # fmt: skip

    def _athena_row(self, query: str) -> dict[str, str]:
        query_id = self.hook.run_query(query, {"Database": self.database}, {"OutputLocation": self.output_location},
                                       workgroup=self.workgroup)  # fmt: skip
        state = self.hook.poll_query_status(query_id, sleep_time=self.sleep_time)
        if state != "SUCCEEDED":
            raise AirflowException(f"Athena query {query_id} {state}: {self.hook.get_state_change_reason(query_id)}")
        rows = self.hook.get_query_results(query_id)["ResultSet"]["Rows"]
        header, values = ([d.get("VarCharValue") for d in row["Data"]] for row in rows[:2])
        return dict(zip(header, values))

    def execute(self, context: Context) -> dict[str, Any]:
        from airflow.providers.amazon.aws.hooks.s3 import S3Hook

        from mlscale.quality.data import load_images
        from mlscale.quality.profile import Profile, QualityThresholds, drift, feature_profile, run_checks
        from mlscale.quality.report import render_html, render_plots

        try:
            thresholds = QualityThresholds(**self.thresholds)
        except TypeError as error:
            raise SpecError("thresholds", f"unknown threshold: {error}") from None
        thresholds.validate()
        counts = self._athena_row(self.aggregate_query())
        rows = int(counts["row_count"])
        s3 = S3Hook(aws_conn_id=self.aws_conn_id, region_name=self.region_name, verify=self.verify,
                    config=self.botocore_config)  # fmt: skip
        labels, images = load_images(s3.get_conn(), self.data_prefix)
        profile = Profile(
            rows=rows,
            missing_fraction={c: int(counts[f"missing_{c}"] or 0) / max(rows, 1) for c in self.columns},
            duplicate_fraction=(rows - int(counts["distinct_keys"])) / max(rows, 1),
            **feature_profile(labels, images),
        )
        baseline_uri = f"{self.report_prefix.rstrip('/')}/baseline/profile.json"
        previous = self._read_json(s3, baseline_uri)
        previous_profile = Profile.from_dict(previous) if previous else None
        drift_values = drift(profile, previous_profile)
        checks = run_checks(profile, drift_values, thresholds)
        passed = all(c.passed for c in checks)

        run_prefix = f"{self.report_prefix.rstrip('/')}/{_slug(context['ti'].run_id)}"
        plots = render_plots(profile, previous_profile)
        for name, png in plots.items():
            self._put(s3, f"{run_prefix}/{name}", png, "image/png")
        report_uri = f"{run_prefix}/report.html"
        self._put(s3, report_uri, render_html(f"Data quality {self.table}", profile, checks, plots).encode(), "text/html")
        self._put(s3, f"{run_prefix}/profile.json", json.dumps(profile.to_dict()).encode(), "application/json")
        if passed:  # this run becomes the reference the next one is compared with
            self._put(s3, baseline_uri, json.dumps(profile.to_dict()).encode(), "application/json")

        result = {"verdict": "passed" if passed else "failed", "report_uri": report_uri, "rows": rows,
                  "plots": [f"{run_prefix}/{n}" for n in plots], "drift": drift_values,
                  "checks": [c.message() for c in checks]}  # fmt: skip
        for check in checks:
            self.log.info("data quality: %s", check.message())
        if not passed:
            context["ti"].xcom_push(key="quality", value=result)
            failed = "; ".join(c.message() for c in checks if not c.passed)
            raise AirflowException(f"data quality check failed: {failed}. Report: {report_uri}")
        return result

    @staticmethod
    def _read_json(s3, uri: str) -> dict | None:
        bucket, key = s3.parse_s3_url(uri)
        if not s3.check_for_key(key, bucket_name=bucket):
            return None
        return json.loads(s3.read_key(key, bucket_name=bucket))

    @staticmethod
    def _put(s3, uri: str, body: bytes, content_type: str) -> None:
        bucket, key = s3.parse_s3_url(uri)
        s3.get_conn().put_object(Bucket=bucket, Key=key, Body=body, ContentType=content_type)


def _slug(text: str) -> str:
    import re

    return re.sub(r"[^A-Za-z0-9=-]+", "-", text).strip("-")

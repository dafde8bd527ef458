"""Data quality gate: Athena aggregates over the interval, a profile of the ETL output, plots, a verdict."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from airflow.providers.amazon.aws.hooks.athena import AthenaHook
from airflow.sdk.exceptions import AirflowException

from mlscale.naming import run_slug
from mlscale.operators.athena_query import start_or_reattach
from mlscale.operators.stage import StageOperator, Wait
from mlscale.specs.quality import QualitySpec
from mlscale.waits.kinds import ATHENA_QUERY

if TYPE_CHECKING:
    from airflow.sdk import Context


class DataQualityOperator(StageOperator):
    """Profile a dataset and stop the pipeline when a check fails.

    Counts, missing values and duplicate keys come from one Athena aggregate
    query over the spec's table and partition range (the interval ETL read;
    identifiers validated, dates validated and quoted, never free SQL); the
    query's wait is deferred like every stage's, and killing the task stops
    it. Label balance, per-feature summaries and drift (Population Stability
    Index against the last run that passed) come from the ETL output at
    `data_prefix`. Plots (PNG) and an HTML report go to
    `<report_prefix>/<run>/`; a failed check fails the task naming the check,
    the value and the threshold, after the report is written.

    XCom: verdict, report_uri, checks, drift, rows.
    """

    aws_hook_class = AthenaHook
    ui_color = "#e6ccff"

    def __init__(self, *, spec: QualitySpec, poll_interval: float = 2, **kwargs: Any):
        super().__init__(spec=spec, poll_interval=poll_interval, **kwargs)

    def advance(self, context: Context, settled: dict[str, Any] | None) -> dict[str, Any] | Wait:
        spec = self.spec
        if settled is None:  # once per task run: a retried try reattaches (mlscale.operators.athena_query)
            request = {
                "QueryString": spec.aggregate_query(),
                "QueryExecutionContext": {"Database": spec.database},
                "ResultConfiguration": {"OutputLocation": spec.output_location},
                "WorkGroup": spec.workgroup,
            }
            query_id, query = start_or_reattach(self.hook.conn, request, context, "quality", self.log)
            if not ATHENA_QUERY.settled(query):
                return Wait(ATHENA_QUERY, query_id)
            settled = {"resource_id": query_id}
        return self._judge(context, self._first_row(settled["resource_id"]))

    def _first_row(self, query_id: str) -> dict[str, str]:
        rows = self.hook.conn.get_query_results(QueryExecutionId=query_id)["ResultSet"]["Rows"]
        header, values = ([d.get("VarCharValue") for d in row["Data"]] for row in rows[:2])
        return dict(zip(header, values))

    def _judge(self, context: Context, counts: dict[str, str]) -> dict[str, Any]:
        from mlscale.aws.s3_objects import put_object, read_json
        from mlscale.quality.data import load_images
        from mlscale.quality.profile import Profile, drift, feature_profile, run_checks
        from mlscale.quality.report import render_html, render_plots

        spec = self.spec
        rows = int(counts["row_count"])
        s3 = self.s3_hook()
        labels, images = load_images(s3.get_conn(), spec.data_prefix)
        profile = Profile(
            rows=rows,
            missing_fraction={c: int(counts[f"missing_{c}"] or 0) / max(rows, 1) for c in spec.columns},
            duplicate_fraction=(rows - int(counts["distinct_keys"])) / max(rows, 1),
            **feature_profile(labels, images),
        )
        baseline_uri = f"{spec.report_prefix.rstrip('/')}/baseline/profile.json"
        previous = read_json(s3, baseline_uri)
        previous_profile = Profile.from_dict(previous) if previous else None
        drift_values = drift(profile, previous_profile)
        checks = run_checks(profile, drift_values, spec.quality_thresholds())
        passed = all(c.passed for c in checks)

        run_prefix = f"{spec.report_prefix.rstrip('/')}/{run_slug(context['ti'].run_id)}"
        plots = render_plots(profile, previous_profile)
        for name, png in plots.items():
            put_object(s3, f"{run_prefix}/{name}", png, "image/png")
        report_uri = f"{run_prefix}/report.html"
        put_object(
            s3, report_uri, render_html(f"Data quality {spec.table}", profile, checks, plots).encode(), "text/html"
        )
        put_object(s3, f"{run_prefix}/profile.json", json.dumps(profile.to_dict()).encode(), "application/json")
        if passed:  # this run becomes the reference the next one is compared with
            put_object(s3, baseline_uri, json.dumps(profile.to_dict()).encode(), "application/json")

        result = {
            "verdict": "passed" if passed else "failed",
            "report_uri": report_uri,
            "rows": rows,
            "data_prefix": spec.data_prefix,
            "plots": [f"{run_prefix}/{n}" for n in plots],
            "drift": drift_values,
            "checks": [c.message() for c in checks],
        }
        for check in checks:
            self.log.info("data quality: %s", check.message())
        if not passed:
            context["ti"].xcom_push(key="quality", value=result)
            failed = "; ".join(c.message() for c in checks if not c.passed)
            raise AirflowException(f"data quality check failed: {failed}. Report: {report_uri}")
        return result

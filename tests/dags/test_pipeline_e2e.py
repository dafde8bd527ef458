"""The example DAG, parsed by Airflow and run end to end against the emulator (what `make demo` does)."""

import json
import os
import re
import subprocess
import sys

import pytest

from tests.conftest import REPO, free_port


def test_dag_parses_with_its_params_form():
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(REPO / "dags" / "mlscale_pipeline.py"))
    assert bag.import_errors == {}
    dag = bag.dags["mlscale_pipeline"]
    assert sorted(dag.task_ids) == [
        "approve",
        "choose_backend",
        "choose_targets",
        "cluster_outputs",
        "compile",
        "create_cluster",
        "delete_cluster",
        "delete_fsx",
        "deploy_edge",
        "deploy_endpoint",
        "diagnose",
        "etl",
        "etl_output",
        "evaluate",
        "gate",
        "plan_data",
        "plan_run",
        "plan_shards",
        "quality",
        "shard",
        "shards",
        "spark_etl",
        "stage_fsx",
        "train",
        "train_on_batch",
        "trained",
        "training_inputs",
        "wait_for_cluster",
        "wait_for_data",
    ]
    assert dag.get_task("deploy_edge").upstream_task_ids == {"choose_targets", "compile", "plan_run"}
    assert dag.get_task("compile").upstream_task_ids == {"approve", "trained", "plan_run", "evaluate"}
    assert dag.get_task("approve").upstream_task_ids == {"gate", "evaluate"}
    assert dag.get_task("gate").upstream_task_ids == {"evaluate"}
    # downstream DAGs schedule on it, whichever engine wrote the data
    assert [a.name for a in dag.get_task("etl_output").outlets] == ["mlscale_training_data"]
    assert dag.get_task("delete_fsx").is_teardown
    assert dag.params["instance_count"] == 2
    assert dag.get_task("wait_for_data").upstream_task_ids == {"plan_run"}
    assert dag.get_task("plan_data").upstream_task_ids == {"wait_for_data", "plan_run"}
    assert (
        dag.get_task("etl").upstream_task_ids
        == dag.get_task("spark_etl").upstream_task_ids
        == {"plan_data", "plan_run"}
    )
    assert dag.get_task("etl_output").upstream_task_ids == {"etl", "spark_etl"}
    # each stage reads where the stage before says its output is (a reused job's run), not the run's layout
    assert dag.get_task("plan_shards").upstream_task_ids == {"quality", "etl_output"}
    assert dag.get_task("shard").upstream_task_ids == {"etl_output", "plan_data", "plan_run", "plan_shards"}
    assert dag.get_task("shards").upstream_task_ids == {"shard", "spark_etl"}
    assert dag.get_task("train").upstream_task_ids == {"training_inputs", "plan_shards", "choose_backend"}
    assert dag.get_task("training_inputs").upstream_task_ids == {"stage_fsx", "shards"}


def test_the_ec2_backend_trains_on_a_cluster_stack_the_run_creates_and_deletes():
    from airflow.dag_processing.dagbag import DagBag
    from airflow.providers.amazon.aws.operators.cloud_formation import (
        CloudFormationCreateStackOperator,
        CloudFormationDeleteStackOperator,
    )
    from airflow.providers.amazon.aws.sensors.cloud_formation import CloudFormationCreateStackSensor

    dag = DagBag(dag_folder=str(REPO / "dags" / "mlscale_pipeline.py")).dags["mlscale_pipeline"]
    assert dag.params["training_backend"] == "sagemaker"
    branch = dag.get_task("choose_backend")
    assert branch.downstream_task_ids == {"train", "create_cluster"}
    assert branch.python_callable(params={"training_backend": "batch"}) == "create_cluster"
    assert branch.python_callable(params={"training_backend": "sagemaker"}) == "train"
    assert isinstance(dag.get_task("create_cluster"), CloudFormationCreateStackOperator)
    assert isinstance(dag.get_task("wait_for_cluster"), CloudFormationCreateStackSensor)
    delete = dag.get_task("delete_cluster")
    assert isinstance(delete, CloudFormationDeleteStackOperator) and delete.is_teardown
    assert delete.upstream_task_ids == {"create_cluster", "train_on_batch", "plan_run"}
    assert dag.get_task("create_cluster").upstream_task_ids == {"choose_backend", "plan_run"}
    assert dag.get_task("train_on_batch").upstream_task_ids == {"cluster_outputs", "shards"}
    assert dag.get_task("trained").upstream_task_ids == {"train", "train_on_batch"}
    assert dag.get_task("trained").trigger_rule == "none_failed_min_one_success"
    assert dag.get_task("diagnose").upstream_task_ids == {"train"}  # SageMaker's utilisation metrics only


def test_the_pipeline_starts_on_new_data_and_weekly_and_waits_for_its_window():
    from airflow.dag_processing.dagbag import DagBag
    from airflow.providers.amazon.aws.sensors.s3 import S3KeySensor
    from airflow.providers.amazon.aws.triggers.sqs import SqsSensorTrigger
    from airflow.sdk import AssetOrTimeSchedule

    dag = DagBag(dag_folder=str(REPO / "dags" / "mlscale_pipeline.py")).dags["mlscale_pipeline"]
    assert isinstance(dag.timetable, AssetOrTimeSchedule) and dag.timetable.timetable.expression == "0 0 * * 0"
    asset = dag.timetable.asset_condition
    assert asset.uri == "s3://mlscale-demo/mlscale/raw/_arrivals"
    (watcher,) = asset.watchers
    classpath, kwargs = watcher.trigger.serialize()  # the common messaging trigger runs the provider's SQS trigger
    assert classpath == f"{SqsSensorTrigger.__module__}.SqsSensorTrigger"
    assert kwargs["sqs_queue"].endswith("/mlscale-raw-arrivals") and kwargs["delete_message_on_reception"]
    sensor = dag.get_task("wait_for_data")
    assert isinstance(sensor, S3KeySensor) and sensor.deferrable


def test_the_producer_writes_a_day_and_never_announces_a_backfill():
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(REPO / "dags" / "mlscale_raw_data.py"))
    assert bag.import_errors == {}
    dag = bag.dags["mlscale_raw_data"]
    assert dag.task_ids == ["write_partitions"] and dag.timetable.expression == "0 0 * * *"
    assert dag.params["days"] == 7 and dag.params["announce"] is True


def run_demo(tmp_path, *conf: str, env: dict | None = None) -> str:
    env = {
        **os.environ,
        "MLSCALE_HOME": str(tmp_path),
        "MLSCALE_EMULATOR_PORT": str(free_port()),
        "MLSCALE_REPO": str(REPO),
        **(env or {}),
    }
    env.pop("AIRFLOW_HOME", None)
    env.pop("AIRFLOW_CONN_AWS_DEFAULT", None)
    result = subprocess.run(
        [sys.executable, "-m", "mlscale_emulator.cli", "demo", *conf],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    out = result.stdout
    errors = [line[:1500] for line in out.splitlines() if "exc_value" in line or "Task failed" in line]
    assert result.returncode == 0, "\n".join(errors[-5:]) + out[-3000:] + result.stderr[-3000:]
    # the demo stops the emulator it started
    assert not (tmp_path / "emulator" / "emulator.pid").exists()
    return out[out.index("mlscale demo summary") :]


@pytest.fixture(scope="module")
def first_demo(tmp_path_factory):
    """The demo with its defaults and the stage cache on, reporting its lineage to a file (OpenLineage's file
    transport): the demo test reads its summary, the cache test runs again on its emulator home (the emulator's
    state survives each demo's restart). Its home, its summary and the lineage events."""
    home = tmp_path_factory.mktemp("demo")
    events = home / "openlineage.jsonl"
    transport = json.dumps({"type": "file", "log_file_path": str(events), "append": True})
    summary = run_demo(home, json.dumps({"cache": True}), env={"AIRFLOW__OPENLINEAGE__TRANSPORT": transport})
    return home, summary, events


@pytest.mark.e2e
def test_demo_runs_the_dag_through_airflow_on_the_emulator(first_demo):
    tmp_path, summary, events = first_demo
    assert re.search(r"DAG run\s+\S+: success", summary)
    assert re.search(r"raw data\s+\S+ \(mlscale_raw_data\): 7 day\(s\) written, 0 already there", summary)
    assert re.search(
        r"data engine\s+athena: Athena query [0-9a-f-]{36}; the data advisor: athena, SQL expresses", summary
    )
    assert re.search(r"ETL output\s+70000 rows", summary)  # 7 days x 10,000 records, deduplicated by Athena
    assert re.search(r"data quality\s+passed: s3://mlscale-demo/mlscale/quality/.+/report.html", summary)
    assert re.search(r"storage advisor\s+s3 File: ", summary)
    assert re.search(r"shards\s+2 x ~35000 records", summary)
    assert re.search(r"instances\s+2 x ml\.c5\.xlarge", summary)
    assert float(re.search(r"test accuracy\s+([0-9.]+)", summary).group(1)) >= 0.95
    job = re.search(r"training job\s+(\S+)", summary).group(1)
    assert f"s3://mlscale-demo/mlscale/models/{job}/output/model.tar.gz" in summary
    assert re.search(r"FSx for Lustre\s+skipped: training reads from S3", summary)
    assert re.search(r"diagnosis\s+(under-utilised|compute-bound|data-bound|io-bound|memory-bound) \(", summary)
    assert re.search(r"next: [a-z-]+: \d+ x ml\.", summary)
    assert re.search(
        r"evaluation\s+accuracy 0\.9\d+, macro-F1 0\.9\d+ on 7000 held-out records; gate: Approved", summary
    )
    assert re.search(r"model package arn:aws:sagemaker:us-east-1:\d+:model-package/mlscale-digits/\d+", summary)
    assert re.search(
        r"compiled \(Neo\)\s+ml_c5: s3://mlscale-demo/mlscale/runs/.+/compiled/model-ml_c5\.tar\.gz", summary
    )
    assert re.search(r"endpoint\s+mlscale-digits InService .+; predicts 0 for the sample \(a 0\)", summary)
    assert re.search(r"edge devices\s+deployment \S+ COMPLETED", summary)
    assert len(re.findall(r"mlscale-edge-fleet-device-\d: SUCCEEDED, answers 0", summary)) == 3
    assert re.search(r"stage cache\s+ran: compile, etl, evaluate, shard, train\n", summary)
    check_lineage_graph(events)

    # the run view reads the same run back from Airflow's database
    run_id = re.search(r"DAG run\s+(\S+): success", summary).group(1)
    code = (
        "from mlscale.ui.run_record import load_run; from mlscale.ui.page import render; "
        f"print(render(load_run('mlscale_pipeline', {run_id!r}), lambda uri: uri or ''))"
    )
    env = {
        **os.environ,
        "AIRFLOW_HOME": str(tmp_path / "airflow"),
        "AIRFLOW__CORE__UNIT_TEST_MODE": "False",
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
    }
    page = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True).stdout
    assert "Data quality: passed" in page and "Evaluation: gate Approved" in page
    assert "confusion_matrix.png" in page and "class='lineage'" in page and "deploy_endpoint" in page


@pytest.mark.e2e
def test_spark_prepares_the_data_and_aws_batch_trains_on_two_nodes_and_deletes_its_cluster(tmp_path):
    """Two paths the default demo does not take, in one run: etl_engine=spark and training_backend=batch."""
    summary = run_demo(
        tmp_path,
        '{"etl_engine": "spark", "training_backend": "batch", "deploy_target": "endpoint", "records_per_day": 3000}',
    )
    assert re.search(r"DAG run\s+\S+: success", summary)
    # one Glue Spark job did the ETL and the shards; Athena's etl and the Processing shard job were not needed
    assert re.search(r"data engine\s+spark: Glue Spark job run jr_[0-9a-f]+; the data advisor: athena, ", summary)
    assert re.search(r"ETL output\s+21000 rows", summary)  # 7 days x 3,000 records, deduplicated by Spark
    assert re.search(r"data quality\s+passed: ", summary)
    assert re.search(r"shards\s+2, written by the Spark job", summary)
    # the run created its CloudFormation cluster, trained on it as one 2-node Batch job, and deleted it
    assert re.search(
        r"training backend batch: AWS Batch multi-node job on stack mlscale-cluster-\S+ \(now DELETE_COMPLETE\)",
        summary,
    )
    assert re.search(r"training job\s+\S+ \(job id [0-9a-f-]{36}\)", summary)
    assert re.search(r"nodes\s+2 \(1 attempt\(s\)", summary)
    assert float(re.search(r"test accuracy\s+([0-9.]+)", summary).group(1)) >= 0.95
    assert re.search(r"diagnosis\s+skipped: a Batch job publishes no SageMaker utilisation metrics", summary)
    # the stages after training are the same ones
    assert re.search(r"evaluation\s+accuracy 0\.9\d+, .+; gate: Approved", summary)
    assert re.search(r"endpoint\s+mlscale-digits InService .+; predicts 0 for the sample \(a 0\)", summary)
    assert re.search(r"edge devices\s+-\n", summary)  # deploy_target=endpoint leaves the edge fleet alone


def test_the_gate_stops_a_rejected_model_and_lets_a_pending_one_reach_a_person():
    """The gate is a short-circuit: when it returns False, Airflow skips everything downstream of it."""
    from airflow.dag_processing.dagbag import DagBag
    from airflow.providers.standard.operators.python import ShortCircuitOperator

    gate = DagBag(dag_folder=str(REPO / "dags" / "mlscale_pipeline.py")).dags["mlscale_pipeline"].get_task("gate")
    assert isinstance(gate, ShortCircuitOperator)
    assert gate.python_callable("Approved", "arn:pkg/1", []) is True
    assert gate.python_callable("Rejected", "arn:pkg/1", ["accuracy 0.5 is below"]) is False
    # a model waiting for a person goes on to `approve`, which asks (gate_mode=manual)
    assert gate.python_callable("PendingManualApproval", "arn:pkg/1", []) is True


def test_the_pipeline_passes_data_by_xcomargs_and_states_the_order_once():
    from airflow.dag_processing.dagbag import DagBag

    source = (REPO / "dags" / "mlscale_pipeline.py").read_text()
    assert "xcom_pull" not in source and "sys.path" not in source and "os.environ" not in source
    dag = DagBag(dag_folder=str(REPO / "dags" / "mlscale_pipeline.py")).dags["mlscale_pipeline"]
    assert dag.get_task("evaluate").upstream_task_ids == {"trained", "plan_run", "shards"}
    assert dag.get_task("deploy_endpoint").upstream_task_ids == {"choose_targets", "compile", "plan_run"}
    assert not dag.render_template_as_native_obj  # the specs convert rendered strings themselves


def test_the_demo_refuses_a_manual_gate_it_cannot_wait_for(tmp_path):
    env = {**os.environ, "MLSCALE_HOME": str(tmp_path), "MLSCALE_REPO": str(REPO)}
    result = subprocess.run(
        [sys.executable, "-m", "mlscale_emulator.cli", "demo", '{"gate_mode": "manual"}'],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2 and "gate_mode=manual needs a person and Airflow's scheduler" in result.stderr
    assert not (tmp_path / "emulator").exists()  # refused before anything started


def test_the_gate_mode_param_reaches_the_evaluation_when_rendered():
    """A param in a spec field renders only when the field is a template field (a real run found this)."""
    from airflow.dag_processing.dagbag import DagBag

    for path, dag_id in (("mlscale_pipeline.py", "mlscale_pipeline"), ("mlscale_minimal.py", "mlscale_minimal")):
        evaluate = DagBag(dag_folder=str(REPO / "dags" / path)).dags[dag_id].get_task("evaluate")
        assert "manual_approval" in type(evaluate.spec).template_fields
        assert "{{ params.gate_mode" in evaluate.spec.manual_approval


@pytest.mark.e2e
def test_an_unchanged_rerun_with_the_cache_launches_no_job_and_a_changed_training_reruns_from_train(first_demo):
    """Two more demos on the first demo's emulator home. The third changes a hyperparameter and forces FSx for
    Lustre: the cached data stages feed a file system that training reads, and a rejected model reaches no
    deployment (the file system is deleted all the same)."""
    from mlscale_emulator import control
    from mlscale_emulator.settings import EmulatorSettings

    tmp_path, first, _ = first_demo
    first_run = re.search(r"DAG run\s+(\S+): success", first).group(1)
    job = re.search(r"training job\s+(\S+)", first).group(1)

    # the same params (deploying is never cached: it is left out here)
    second = run_demo(tmp_path, json.dumps({"cache": True, "deploy_target": "none"}))
    assert re.search(r"DAG run\s+\S+: success", second) and first_run not in second.splitlines()[1]
    assert re.search(r"raw data\s+\S+ \(mlscale_raw_data\): 0 day\(s\) written, 7 already there", second)
    for task in ("compile", "etl", "evaluate", "shard", "train"):  # each names the first run's job
        assert re.search(rf"{task}: reused \S+ from run {re.escape(first_run)}", second), task
    assert f"train: reused {job} from run" in second and "ran: none" in second
    assert re.search(rf"training job\s+{job}", second)  # evaluated, compiled: the same model

    # one hyperparameter changed, the shards on FSx for Lustre, and a bar no model meets: the reused shards are
    # imported into a new file system, train and evaluate run again, the gate rejects
    third = run_demo(
        tmp_path,
        json.dumps(
            {"cache": True, "epochs": 2, "min_accuracy": 0.9999, "deploy_target": "edge", "storage": "fsx_lustre"}
        ),
    )
    assert re.search(rf"etl: reused \S+ from run {re.escape(first_run)}", third)
    assert re.search(rf"shard: reused \S+ from run {re.escape(first_run)}", third)
    assert re.search(r"ran: evaluate, train\n", third)
    assert re.search(r"FSx for Lustre\s+fs-\w+ SCRATCH_2 1200 GiB, 3 files imported, mounted at /\w+/shards", third)
    assert float(re.search(r"test accuracy\s+([0-9.]+)", third).group(1)) >= 0.9
    assert re.search(r"gate: Rejected \(accuracy 0\.\d+ is below the threshold 0\.9999", third)
    # the gate short-circuits: nothing after it runs for a rejected model
    assert re.search(r"compiled \(Neo\)\s+skipped: the gate did not approve the model \(Rejected\)", third)
    assert re.search(r"endpoint\s+-\n", third) and re.search(r"edge devices\s+-\n", third)

    # the emulator's own record (its state survives the demos' restarts): one job per stage that ran
    config = EmulatorSettings(host="127.0.0.1", port=free_port(), home=tmp_path / "emulator")
    control.up(config)
    try:
        sagemaker = control.client(config, "sagemaker")
        counts = {
            kind: len(sagemaker.get_paginator(f"list_{kind}_jobs").paginate().build_full_result()[key])
            for kind, key in (
                ("training", "TrainingJobSummaries"),
                ("processing", "ProcessingJobSummaries"),
                ("transform", "TransformJobSummaries"),
                ("compilation", "CompilationJobSummaries"),
            )
        }
    finally:
        control.down(config)
    assert counts == {"training": 2, "processing": 1, "transform": 2, "compilation": 1}


def check_lineage_graph(events_file) -> None:
    """The stages' OpenLineage events form one graph: raw data -> ETL -> shards -> model -> model package
    -> compiled model -> endpoint and edge deployment, with the facets a lineage tool shows."""
    completes = {}
    for line in events_file.read_text().splitlines():
        event = json.loads(line)
        if event["eventType"] == "COMPLETE" and event["job"]["name"].startswith("mlscale_pipeline."):
            completes[event["job"]["name"].split(".", 1)[1]] = event
    edges: dict[tuple, set] = {}
    for task, event in completes.items():
        for dataset in event.get("inputs", []):
            edges.setdefault((dataset["namespace"], dataset["name"]), set()).add(("job", task))
        for dataset in event.get("outputs", []):
            edges.setdefault(("job", task), set()).add((dataset["namespace"], dataset["name"]))

    def reachable(start) -> set:
        seen, todo = set(), [start]
        while todo:
            node = todo.pop()
            if node not in seen:
                seen.add(node)
                todo.extend(edges.get(node, ()))
        return seen

    raw = ("awsathena://athena.us-east-1.amazonaws.com", "awsdatacatalog.mlscale.raw_digits")
    downstream = reachable(raw)
    for task in ("etl", "shard", "train", "evaluate", "compile", "deploy_endpoint", "deploy_edge"):
        assert ("job", task) in downstream, task
    package = next(n for n in downstream if n[1].startswith("model-package/mlscale-digits/"))
    after_package = reachable(package)  # the compiled model and both deployments come from the registered package
    assert ("arn:aws:sagemaker:us-east-1:123456789012", "endpoint/mlscale-digits") in after_package
    assert any(
        n[0] == "arn:aws:greengrass:us-east-1:123456789012" and n[1].startswith("deployments:") for n in after_package
    )
    # the facets: the ETL output's schema, the training run's hyperparameters and metrics, the package's status
    etl_output = completes["etl"]["outputs"][0]
    assert [f["name"] for f in etl_output["facets"]["schema"]["fields"]] == ["record_id", "label", "pixels", "dt"]
    train = completes["train"]["run"]["facets"]["mlscale_stage"]
    assert train["details"]["hyperparameters"]["epochs"] == "4" and "test:accuracy" in train["details"]["final_metrics"]
    assert len(train["fingerprint"]) == 64 and train["cache"] == {"hit": False, "enabled": True}
    registered = next(d for d in completes["evaluate"]["outputs"] if d["name"].startswith("model-package/"))
    assert registered["facets"]["mlscale_model_package"]["properties"]["approval_status"] == "Approved"
    endpoint = completes["deploy_endpoint"]["outputs"][0]["facets"]["mlscale_endpoint"]["properties"]
    assert endpoint["instance_type"] == "ml.c5.large" and endpoint["variant"] == "AllTraffic"
    edge = completes["deploy_edge"]["outputs"][0]["facets"]["mlscale_greengrass_deployment"]["properties"]
    assert edge["status"] == "COMPLETED" and set(edge["devices"].values()) == {"SUCCEEDED"}

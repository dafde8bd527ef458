"""docker-compose.yaml: no Docker engine runs here, so the file is checked against the Compose specification's
schema (as vendored by check-jsonschema) and against what the stack needs to run mlscale's DAG."""

import json
from importlib import resources
from urllib.parse import urlparse

import jsonschema
import pytest
import yaml

from tests.conftest import REPO

AIRFLOW_SERVICES = {
    "airflow-apiserver",
    "airflow-scheduler",
    "airflow-dag-processor",
    "airflow-worker",
    "airflow-triggerer",
    "airflow-init",
}


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((REPO / "docker-compose.yaml").read_text())


def test_the_file_follows_the_compose_specification(compose):
    schema = json.loads(
        resources.files("check_jsonschema.builtin_schemas.vendor").joinpath("compose-spec.json").read_text()
    )
    jsonschema.validate(compose, schema)


def test_every_service_the_stack_needs_is_there_and_depends_only_on_services_that_exist(compose):
    services = compose["services"]
    assert AIRFLOW_SERVICES | {"postgres", "redis", "mlscale-emulator"} <= set(services)
    for name, service in services.items():
        assert set(service.get("depends_on", {})) <= set(services), name
    for name in AIRFLOW_SERVICES - {"airflow-init"}:
        assert services[name]["depends_on"]["airflow-init"]["condition"] == "service_completed_successfully"
        assert services[name]["depends_on"]["mlscale-emulator"]["condition"] == "service_healthy"
        assert "healthcheck" in services[name], name


def test_airflow_runs_celery_on_postgres_and_redis(compose):
    env = compose["services"]["airflow-scheduler"]["environment"]
    assert env["AIRFLOW__CORE__EXECUTOR"] == "CeleryExecutor"
    assert urlparse(env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"]).hostname == "postgres"
    assert urlparse(env["AIRFLOW__CELERY__BROKER_URL"]).hostname == "redis"
    assert compose["services"]["airflow-worker"]["command"] == "celery worker"


def test_dags_plugins_and_include_are_mounted_where_the_dag_looks(compose):
    mounts = {m.rsplit(":", 1)[1] for m in compose["services"]["airflow-worker"]["volumes"]}
    # the DAG finds include/ beside dags/
    assert {"/opt/airflow/dags", "/opt/airflow/plugins", "/opt/airflow/include"} <= mounts


def test_the_aws_connection_points_at_the_emulator_service(compose):
    env = compose["services"]["airflow-worker"]["environment"]
    connection = json.loads(env["AIRFLOW_CONN_AWS_DEFAULT"])
    endpoint = urlparse(connection["extra"]["endpoint_url"])
    emulator = compose["services"]["mlscale-emulator"]
    assert endpoint.hostname == "mlscale-emulator"
    assert endpoint.port == int(emulator["environment"]["MLSCALE_EMULATOR_PORT"])
    assert emulator["command"] == ["mlscale", "emulator", "serve"]


def test_ports_are_published_on_loopback_only(compose):
    for name, service in compose["services"].items():
        for port in service.get("ports", []):
            assert str(port).startswith("127.0.0.1:"), (name, port)


def test_init_creates_the_pool_the_dag_trains_in_and_the_edge_fleet(compose):
    script = "\n".join(compose["services"]["airflow-init"]["command"])
    assert "airflow pools set mlscale_training" in script and "--include-deferred" in script
    assert "mlscale emulator fleet" in script
    from mlscale_example.settings import OPTIONS

    assert OPTIONS["training_pool"][0] == "mlscale_training"
    config = REPO / "plugins" / "mlscale_example" / "pipeline" / "config.py"
    assert 'TRAINING_POOL = setting("training_pool")' in config.read_text()


def test_the_image_pins_the_airflow_this_project_is_tested_with(compose):
    from importlib.metadata import version

    dockerfile = compose["services"]["airflow-worker"]["build"]["dockerfile_inline"]
    assert f"apache/airflow:${{AIRFLOW_VERSION:-{version('apache-airflow')}}}-python3.11" in dockerfile


def test_the_images_install_the_distributions_each_service_needs(compose):
    """Airflow's image: the provider (and, without their dependencies, the CLI and the example's entry point
    for the init); the emulator's image: the emulator alone."""
    airflow = compose["x-airflow-common"]["build"]["dockerfile_inline"]
    emulator = compose["services"]["mlscale-emulator"]["build"]["dockerfile_inline"]
    assert "/opt/mlscale/provider" in airflow and "--no-deps /opt/mlscale/emulator /opt/mlscale" in airflow
    assert "/opt/mlscale/emulator" in emulator and "provider" not in emulator
    for folder in ("provider", "emulator", "plugins/mlscale_example"):
        assert (REPO / folder).is_dir()

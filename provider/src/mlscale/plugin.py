"""The AirflowPlugin registered through the `airflow.plugins` entry point.

Cheap to import: Airflow loads plugins in every process, so nothing heavy
(torch, duckdb, pandas, the SageMaker SDK, the emulator) is imported here.
"""

from functools import cached_property

from airflow.plugins_manager import AirflowPlugin

from mlscale.ui.lazy import LazyRunView


class MlscalePlugin(AirflowPlugin):
    name = "mlscale"
    # The run view: a FastAPI app under /mlscale, and a tab on every DAG run page that opens it.
    fastapi_apps = [{"app": LazyRunView(), "url_prefix": "/mlscale", "name": "mlscale run view"}]
    external_views = [
        {
            "name": "mlscale",
            "href": "/mlscale/run?dag_id={DAG_ID}&run_id={RUN_ID}",
            "destination": "dag_run",
            "url_route": "mlscale-run",
        }
    ]

    @cached_property
    def operator_extra_links(self) -> list:  # type: ignore[override]
        """Made when Airflow first asks for the plugins' links (resolving a task's links), not when it loads the
        plugins in every process: the links' base, the provider's BaseAwsLink, imports botocore's exceptions, about
        half of this plugin's load."""
        from mlscale.links import ALL_LINKS

        return [link() for link in ALL_LINKS]

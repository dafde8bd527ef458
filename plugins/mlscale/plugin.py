"""The AirflowPlugin registered through the `airflow.plugins` entry point.

Cheap to import: Airflow loads plugins in every process, so nothing heavy
(torch, duckdb, pandas, the SageMaker SDK, the emulator) is imported here.
"""

from airflow.plugins_manager import AirflowPlugin

from mlscale.links import TrainingJobLink


class MlscalePlugin(AirflowPlugin):
    name = "mlscale"
    operator_extra_links = [TrainingJobLink()]

"""mlscale's local AWS emulator: moto's server for the control plane, executors that really run the work, and
the local Airflow stack (`mlscale airflow`, `mlscale demo`).

It knows only AWS's API: it imports nothing of the mlscale provider or of the project it runs (those reach it
over the AWS API, and the project's local setup through the `mlscale.local_project` entry point).
"""

__version__ = "0.2.0"

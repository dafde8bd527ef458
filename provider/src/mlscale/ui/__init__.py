"""The mlscale run view in the Airflow UI (a FastAPI app the plugin mounts under /mlscale)."""

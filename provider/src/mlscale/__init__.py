"""mlscale: an Airflow 3 plugin that runs the whitepaper's ML pipeline on AWS or its local emulator."""

__version__ = "0.2.0"

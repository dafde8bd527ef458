"""Airflow hooks mlscale adds where the Amazon provider has none (FSx for Lustre, Greengrass v2)."""

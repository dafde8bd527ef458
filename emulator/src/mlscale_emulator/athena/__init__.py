"""Athena on the emulator: moto keeps query executions, DuckDB runs the SQL."""

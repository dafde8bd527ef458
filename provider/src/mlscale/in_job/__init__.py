"""Code that runs inside a job, where mlscale is not installed: standard library and boto3 only.

The operators ship these files in the job's source archive; nothing here imports mlscale or Airflow.
"""

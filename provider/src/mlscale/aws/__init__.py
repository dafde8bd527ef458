"""What the stages share of AWS that is not an Airflow hook: boto3 clients shared per process, error codes,
S3 objects, the Glue catalog, source-dir packing, the stage cache's records and the stages' lineage datasets."""

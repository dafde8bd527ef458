"""What each stage read and wrote, as OpenLineage datasets: plain dicts small enough for the stage's XCom.

The run view draws its lineage from them, and the OpenLineage provider reports them (mlscale.operators.
lineage turns them into OpenLineage objects). Names follow the OpenLineage naming spec
(https://openlineage.io/docs/spec/naming): S3 `s3://<bucket>` + the key; Athena tables
`awsathena://athena.<region>.amazonaws.com` + `<catalog>.<database>.<table>`; AWS resources the spec does
not list (SageMaker model packages and endpoints, Greengrass deployments) as Glue's are: the ARN's
`arn:aws:<service>:<region>:<account>` + the resource part.
"""

from __future__ import annotations

import re
from typing import Any

Dataset = dict[str, Any]  # {"namespace", "name", "facets": {...}}


def dataset(namespace: str, name: str, **facets: Any) -> Dataset:
    return {"namespace": namespace, "name": name, "facets": {k: v for k, v in facets.items() if v is not None}}


def s3(uri: str, **facets: Any) -> Dataset:
    """An S3 object or prefix (a trailing '/' dropped, so a prefix written and a prefix read are one dataset)."""
    bucket, _, key = uri.removeprefix("s3://").partition("/")
    return dataset(f"s3://{bucket}", key.rstrip("/") or "/", **facets)


def arn(resource_arn: str, **facets: Any) -> Dataset:
    """An AWS resource by its ARN: arn:aws:sagemaker:us-east-1:123456789012 + model-package/group/1."""
    parts = resource_arn.split(":", 5)
    return dataset(":".join(parts[:5]), parts[5], **facets)


def athena_table(region: str, database: str, table: str, catalog: str = "awsdatacatalog", **facets: Any) -> Dataset:
    return dataset(f"awsathena://athena.{region}.amazonaws.com", f"{catalog}.{database}.{table}", **facets)


def tables_read(sql: str, default_database: str) -> list[tuple[str, str]]:
    """(database, table) of each table a query reads, by openlineage-sql's parser (an UNLOAD's inner SELECT)."""
    import openlineage_sql

    match = re.search(r"UNLOAD\s*\((.*)\)\s*TO\s*'", sql, flags=re.IGNORECASE | re.DOTALL)
    parsed = openlineage_sql.parse([match.group(1) if match else sql], dialect="athena")
    if parsed is None:
        return []
    return [(table.schema or default_database, table.name) for table in parsed.in_tables]


def parquet_schema(client: Any, uri: str) -> list[dict[str, str]]:
    """The fields of the first Parquet object under `uri` (its footer only), as a schema facet's fields."""
    import pyarrow.parquet as pq

    from mlscale.aws.s3_objects import S3RangeFile, is_data_key

    bucket, _, prefix = uri.removeprefix("s3://").partition("/")
    objects = [
        o for o in client.list_objects_v2(Bucket=bucket, Prefix=prefix).get("Contents", []) if is_data_key(o["Key"])
    ]
    if not objects:
        return []
    schema = pq.ParquetFile(S3RangeFile(client, bucket, objects[0]["Key"], objects[0]["Size"])).schema_arrow
    return [{"name": field.name, "type": str(field.type)} for field in schema]

"""Glue Data Catalog tables over S3 Parquet (the provider's GlueCatalogHook reads tables but creates none)."""

from __future__ import annotations

PARQUET = {
    "InputFormat": "org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat",
    "OutputFormat": "org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat",
    "SerdeInfo": {"SerializationLibrary": "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe"},
}


def ensure_parquet_table(
    glue, database: str, table: str, location: str, columns: dict[str, str], date_partition: str | None = None
) -> bool:
    """Create the database and table unless they exist; True when the table was created.

    A `date_partition` column (dt=YYYY-MM-DD folders) is declared with Athena
    partition projection, so new days are queryable without MSCK REPAIR.
    """
    try:
        glue.create_database(DatabaseInput={"Name": database})
    except glue.exceptions.AlreadyExistsException:
        pass
    table_input = {
        "Name": table,
        "TableType": "EXTERNAL_TABLE",
        "Parameters": {"classification": "parquet", "EXTERNAL": "TRUE"},
        "StorageDescriptor": {
            "Location": location,
            "Columns": [{"Name": n, "Type": t} for n, t in columns.items()],
            **PARQUET,
        },
    }
    if date_partition:
        table_input["PartitionKeys"] = [{"Name": date_partition, "Type": "string"}]
        table_input["Parameters"].update(
            {
                "projection.enabled": "true",
                f"projection.{date_partition}.type": "date",
                f"projection.{date_partition}.format": "yyyy-MM-dd",
                f"projection.{date_partition}.range": "2000-01-01,NOW",
                "storage.location.template": f"{location.rstrip('/')}/{date_partition}=${{{date_partition}}}/",
            }
        )
    try:
        glue.create_table(DatabaseName=database, TableInput=table_input)
        return True
    except glue.exceptions.AlreadyExistsException:
        return False


def parquet_stats(s3, uri: str) -> dict:
    """Objects, bytes and rows under an S3 prefix; rows from each Parquet footer alone (ranged GETs), so a week
    of raw data is measured without moving it."""
    import pyarrow.parquet as pq

    from mlscale.aws.s3_objects import S3RangeFile, is_data_key

    bucket, _, prefix = uri.removeprefix("s3://").partition("/")
    objects = [
        o
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
        for o in page.get("Contents", [])
        if is_data_key(o["Key"])
    ]
    rows = 0
    for item in objects:
        rows += pq.ParquetFile(S3RangeFile(s3, bucket, item["Key"], item["Size"])).metadata.num_rows
    return {"objects": len(objects), "bytes": sum(o["Size"] for o in objects), "rows": rows}

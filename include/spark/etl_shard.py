"""ETL and sharding in one Spark pass: an AWS Glue Spark (or EMR Serverless) script.

Reads the raw Parquet partitions (--input, comma-separated prefixes; columns record_id, label, pixels),
keeps valid records once each (the first day a record_id appears, as sql/etl_digits.sql does), writes them
as Parquet to --etl-output (what the quality stage checks), then orders them by sha256("<seed>:<record_id>")
(processing/shard.py's order: both engines hold out the same records and write the same shards) and writes
--shards shards, each every shards-th record (counts differ by at most one), a held-out test shard and its
CSV for Batch Transform, and manifest-spark.json with counts and sha256 checksums: the files and format of
processing/shard.py, whose record format this imports (--extra-py-files). Sorting, the window and the
shuffle run in Spark's JVM and spill to disk, so the data may be larger than Spark's memory; the Python side
streams one sorted partition at a time through Arrow.
"""

import argparse
import hashlib
import json
import os
import tempfile

S3_RECORD_HOST = "spark"  # names the files as processing/shard.py names them after its host


def parse_args():
    parser = argparse.ArgumentParser()
    for name in ("--input", "--etl-output", "--shards-output", "--test-output", "--eval-output"):
        parser.add_argument(name, required=True)
    parser.add_argument("--shards", type=int, required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--resolution", type=int, default=8)
    parser.add_argument("--test-fraction", type=float, default=0.0)
    args, _ = parser.parse_known_args()  # Glue adds its own (--JOB_NAME, --JOB_RUN_ID, ...)
    if args.shards < 1:
        raise SystemExit(f"--shards must be >= 1, got {args.shards}")
    if not 0 <= args.test_fraction < 1:
        raise SystemExit(f"--test-fraction must be in [0, 1), got {args.test_fraction}")
    return args


def split_uri(uri):
    bucket, _, key = uri.removeprefix("s3://").partition("/")
    return bucket, key


def part_sizes(train_records, shards):
    """Records per train shard: every shard-th record of the shuffled order, so sizes differ by at most one."""
    return [train_records // shards + (1 if s < train_records % shards else 0) for s in range(shards)]


def shard_writer(args, sizes, held_out):
    """The Arrow function each Spark task runs: its rows, sorted by (part, index), become whole shard files."""
    shards = len(sizes)

    def write(batches):
        import boto3
        import numpy as np
        import pyarrow as pa
        import shard  # processing/shard.py: the record format

        s3 = boto3.client("s3")
        dtype = shard.record_dtype(args.resolution)
        current = None

        def finish(state):
            state["file"].close()
            name = state["name"]
            prefix = args.test_output if state["part"] == shards else args.shards_output
            bucket, key = split_uri(prefix.rstrip("/") + "/" + name)
            s3.upload_file(state["path"], bucket, key)
            os.remove(state["path"])
            if state["part"] == shards:
                for kind in ("features", "labels"):
                    handle = state[kind]
                    handle.close()
                    bucket, key = split_uri(f"{args.eval_output.rstrip('/')}/{kind}/{kind}-{S3_RECORD_HOST}.csv")
                    s3.upload_file(handle.name, bucket, key)
                    os.remove(handle.name)
            return {
                "part": state["part"],
                "file": name,
                "records": state["written"],
                "bytes": state["bytes"],
                "sha256": state["digest"].hexdigest(),
            }

        def open_part(part):
            count = held_out if part == shards else sizes[part]
            if part == shards:
                name = f"test-{S3_RECORD_HOST}.rec"
            else:
                name = f"shard-{S3_RECORD_HOST}-{part:05d}-of-{shards:05d}.rec"
            handle = tempfile.NamedTemporaryFile(delete=False, suffix=".rec")
            header = shard.MAGIC + json.dumps({"records": count, "dtype": dtype.descr}).encode() + b"\n"
            handle.write(header)
            state = {
                "part": part,
                "name": name,
                "path": handle.name,
                "file": handle,
                "written": 0,
                "bytes": len(header),
                "digest": hashlib.sha256(header),
            }
            if part == shards:
                for kind in ("features", "labels"):
                    state[kind] = tempfile.NamedTemporaryFile("w", delete=False, suffix=".csv")
            return state

        done = []
        for batch in batches:
            parts = batch.column("part").to_numpy()
            labels = batch.column("label").to_numpy()
            pixels_column = batch.column("pixels")
            # binary values back to back in one buffer: one reshape when every image has the same size
            first = pixels_column.offset
            offsets = np.frombuffer(pixels_column.buffers()[1], dtype=np.int32)[first : first + len(labels) + 1]
            widths = np.diff(offsets)
            if len(widths) and (widths != widths[0]).any():
                raise ValueError(f"pixels: images of {sorted(set(widths.tolist()))} bytes in one batch")
            raw = np.frombuffer(pixels_column.buffers()[2], dtype=np.uint8)
            pixels = raw[offsets[0] : offsets[-1]].reshape(len(labels), -1)
            # each run of equal part ids in the (sorted) batch goes to that part's file
            edges = np.flatnonzero(np.diff(parts)) + 1
            for lo, hi in zip(np.r_[0, edges], np.r_[edges, len(parts)]):
                part = int(parts[lo])
                if current is None or current["part"] != part:
                    if current is not None:
                        done.append(finish(current))
                    current = open_part(part)
                records = np.empty(hi - lo, dtype=dtype)
                records["label"] = labels[lo:hi]
                records["pixels"] = shard.resize(pixels[lo:hi], args.resolution)
                body = memoryview(records.view(np.uint8))
                current["file"].write(body)
                current["digest"].update(body)
                current["written"] += int(hi - lo)
                current["bytes"] += body.nbytes
                if part == shards:
                    flat = records["pixels"].reshape(len(records), -1).astype(np.float32) / 255.0
                    np.savetxt(current["features"], flat, delimiter=",", fmt="%.4f")
                    np.savetxt(current["labels"], records["label"], fmt="%d")
        if current is not None:
            done.append(finish(current))
        if done:
            schema = pa.schema(
                [
                    ("part", pa.int32()),
                    ("file", pa.string()),
                    ("records", pa.int64()),
                    ("bytes", pa.int64()),
                    ("sha256", pa.string()),
                ]
            )
            yield pa.RecordBatch.from_pylist(done, schema=schema)

    return write


def main():
    args = parse_args()
    from pyspark.sql import SparkSession, Window
    from pyspark.sql import functions as F

    spark = SparkSession.builder.appName("mlscale-etl-shard").getOrCreate()
    inputs = [uri.strip() for uri in args.input.split(",") if uri.strip()]
    raw = spark.read.parquet(*inputs).withColumn(
        "dt", F.regexp_extract(F.input_file_name(), r"dt=(\d{4}-\d{2}-\d{2})", 1)
    )
    first_copy = Window.partitionBy("record_id").orderBy("dt")
    clean = (
        raw.where(F.col("label").between(0, 9) & F.col("pixels").isNotNull())
        .withColumn("copy", F.row_number().over(first_copy))
        .where("copy = 1")
        .select("record_id", "label", "pixels", "dt")
    )
    clean.write.mode("overwrite").parquet(args.etl_output)

    data = spark.read.parquet(args.etl_output)
    total = data.count()
    if total < args.shards:
        raise SystemExit(f"{total} records cannot fill {args.shards} shards")
    held_out = int(total * args.test_fraction)
    sizes = part_sizes(total - held_out, args.shards)

    # a global order by that key: the range-partitioned sort spills; the index is each partition's
    # offset (counted once) plus the row's place in its partition
    key = F.sha2(F.concat(F.lit(f"{args.seed}:"), F.col("record_id")), 256)  # processing/shard.py's order
    keyed = data.select("label", "pixels", key.alias("key"))
    ordered = keyed.orderBy("key").select(
        "label", "pixels", F.spark_partition_id().alias("pid"), F.monotonically_increasing_id().alias("mid")
    )
    from pyspark import StorageLevel

    ordered = ordered.persist(StorageLevel.DISK_ONLY)
    counts = dict(ordered.groupBy("pid").count().collect())
    offsets, running = {}, 0
    for pid in sorted(counts):
        offsets[pid], running = running, running + counts[pid]
    offset_of = F.create_map(*[x for pid, off in offsets.items() for x in (F.lit(pid), F.lit(off))])
    index = offset_of[F.col("pid")] + (F.col("mid") - F.shiftleft(F.col("pid").cast("long"), 33))
    train_index = index - F.lit(held_out)
    part = F.when(index < held_out, F.lit(args.shards)).otherwise(train_index % args.shards).cast("int")
    placed = ordered.select(part.alias("part"), index.alias("index"), "label", "pixels")
    written = (
        placed.repartition(args.shards + 1, "part")
        .sortWithinPartitions("part", "index")
        .mapInArrow(
            shard_writer(args, sizes, held_out),
            "part int, file string, records long, bytes long, sha256 string",
        )
        .collect()
    )
    entries = sorted((row.asDict() for row in written), key=lambda e: e["part"])
    source_files = len(raw.inputFiles())
    manifest = {
        "host": S3_RECORD_HOST,
        "seed": args.seed,
        "records": total - held_out,
        "resolution": args.resolution,
        "source_files": source_files,
        "shards": [
            {k: e[k] for k in ("file", "records", "bytes", "sha256")} for e in entries if e["part"] < args.shards
        ],
        "test_records": held_out,
    }
    test = [e for e in entries if e["part"] == args.shards]
    if test:
        manifest["test"] = {k: test[0][k] for k in ("file", "records", "bytes", "sha256")}
    wrong = [e for e in manifest["shards"] if e["records"] != sizes[int(e["file"].split("-")[2])]]
    if len(manifest["shards"]) != args.shards or wrong:
        raise SystemExit(f"shards written do not match the plan: {len(manifest['shards'])} of {args.shards}, {wrong}")
    import boto3

    bucket, key = split_uri(f"{args.shards_output.rstrip('/')}/manifest-{S3_RECORD_HOST}.json")
    boto3.client("s3").put_object(Bucket=bucket, Key=key, Body=json.dumps(manifest, indent=2).encode())
    print(
        f"wrote {args.shards} shards, {total - held_out} records (+{held_out} held out) "
        f"from {source_files} files, {sum(s['bytes'] for s in manifest['shards']) / 1e6:.1f} MB",
        flush=True,
    )
    spark.stop()


if __name__ == "__main__":
    main()

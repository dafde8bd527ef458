"""Pre-shuffle a dataset into N equal-size shards: a SageMaker Processing script.

Reads every Parquet file under --input-dir (columns record_id, label, pixels), resizes
the images once (average pooling to --resolution), shuffles globally by
sha256("<seed>:<record_id>") (the order spark/etl_shard.py gives the same records, so
both engines hold out the same test records and write the same shards), and writes
--shards files, each every shards-th record of that order (counts differ by at most
one), in a sequential-read record format, plus manifest.json (counts, bytes, sha256).

Shard format (.rec): b"MLSR1\n", one JSON header line {"records", "dtype"},
then the records back to back as a numpy structured array (label int64,
pixels uint8[res, res]); readable with one np.frombuffer per chunk.

With several instances (ShardedByS3Key) each shuffles and writes its own part;
names carry the host so the parts never collide. Needs numpy and pyarrow only.
"""

import argparse
import glob
import hashlib
import json
import os
import time

import numpy as np

MAGIC = b"MLSR1\n"


def record_dtype(resolution: int) -> np.dtype:
    return np.dtype([("label", "<i8"), ("pixels", "u1", (resolution, resolution))])


def read_records(input_dir: str):
    import pyarrow.parquet as pq

    files = sorted(glob.glob(os.path.join(input_dir, "**", "*.parquet"), recursive=True))
    if not files:
        raise SystemExit(f"no Parquet files under {input_dir}")
    ids, labels, pixels = [], [], []
    for path in files:
        table = pq.read_table(path, columns=["record_id", "label", "pixels"])
        ids += table.column("record_id").to_pylist()
        labels.append(table.column("label").to_numpy())
        raw = table.column("pixels").combine_chunks()
        width = len(raw[0].as_py()) if len(raw) else 0
        pixels.append(np.frombuffer(raw.buffers()[2], dtype=np.uint8, count=len(raw) * width).reshape(len(raw), width))
    return ids, np.concatenate(labels), np.concatenate(pixels), files


def shuffled_order(ids: list, seed: int) -> np.ndarray:
    """The records' order by sha256("<seed>:<record_id>"): random, and the same whichever engine computes it."""
    keys = np.array([hashlib.sha256(f"{seed}:{i}".encode()).hexdigest() for i in ids], dtype="S64")
    return np.argsort(keys, kind="stable")


def resize(pixels: np.ndarray, resolution: int) -> np.ndarray:
    side = int(round(len(pixels[0]) ** 0.5))
    images = pixels.reshape(-1, side, side).astype(np.float32)
    factor = side // resolution
    if factor * resolution != side:
        raise SystemExit(f"cannot resize {side}x{side} images to {resolution}x{resolution}")
    pooled = images.reshape(-1, resolution, factor, resolution, factor).mean(axis=(2, 4))
    return np.rint(pooled).astype(np.uint8)


def write_shard(path: str, records: np.ndarray) -> dict:
    header = MAGIC + json.dumps({"records": int(len(records)), "dtype": records.dtype.descr}).encode() + b"\n"
    body = memoryview(np.ascontiguousarray(records).view(np.uint8))  # no copy of the records
    digest = hashlib.sha256(header)
    digest.update(body)
    with open(path, "wb") as f:
        f.write(header)
        f.write(body)
    return {
        "file": os.path.basename(path),
        "records": int(len(records)),
        "bytes": len(header) + body.nbytes,
        "sha256": digest.hexdigest(),
    }


def write_eval_csv(eval_dir: str, host: str, records: np.ndarray) -> None:
    """One line of pixel values in [0, 1] per record (what the served model takes) and the labels, in order."""
    os.makedirs(os.path.join(eval_dir, "features"), exist_ok=True)
    os.makedirs(os.path.join(eval_dir, "labels"), exist_ok=True)
    pixels = records["pixels"].reshape(len(records), -1).astype(np.float32) / 255.0
    np.savetxt(os.path.join(eval_dir, "features", f"features-{host}.csv"), pixels, delimiter=",", fmt="%.4f")
    np.savetxt(os.path.join(eval_dir, "labels", f"labels-{host}.csv"), records["label"], fmt="%d")


def write_shards(output_dir: str, host: str, records: np.ndarray, count: int) -> list:
    """Split into `count` parts, each every count-th record (sizes differ by at most one), and write them,
    several at a time.

    hashlib and file writes release the GIL, so threads overlap checksumming
    one shard with writing another.
    """
    from concurrent.futures import ThreadPoolExecutor

    parts = [records[part::count] for part in range(count)]
    names = [os.path.join(output_dir, f"shard-{host}-{i:05d}-of-{count:05d}.rec") for i in range(count)]
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 1)) as pool:
        return list(pool.map(write_shard, names, parts))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--input-dir", default="/opt/ml/processing/input/data")
    parser.add_argument("--output-dir", default="/opt/ml/processing/output/shards")
    parser.add_argument("--shards", type=int, required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--resolution", type=int, default=8)
    parser.add_argument("--test-fraction", type=float, default=0.0, help="held out, written to --test-dir")
    parser.add_argument("--test-dir", default="/opt/ml/processing/output/test")
    parser.add_argument(
        "--eval-dir",
        default="/opt/ml/processing/output/eval",
        help="the held-out set again as CSV for Batch Transform: features-*.csv, labels-*.csv",
    )
    args = parser.parse_args()
    if args.shards < 1:
        raise SystemExit(f"--shards must be >= 1, got {args.shards}")
    if not 0 <= args.test_fraction < 1:
        raise SystemExit(f"--test-fraction must be in [0, 1), got {args.test_fraction}")

    started = time.time()
    ids, labels, pixels, files = read_records(args.input_dir)
    if len(labels) < args.shards:
        raise SystemExit(f"{len(labels)} records cannot fill {args.shards} shards")
    dtype = record_dtype(args.resolution)
    records = np.empty(len(labels), dtype=dtype)
    records["label"] = labels
    records["pixels"] = resize(pixels, args.resolution)
    records = records[shuffled_order(ids, args.seed)]
    held_out = int(len(records) * args.test_fraction)
    test, records = records[:held_out], records[held_out:]

    config_dir = os.path.join(os.environ.get("SAGEMAKER_PROCESSING_ROOT", "/opt/ml"), "config")
    with open(os.path.join(config_dir, "resourceconfig.json")) as f:
        host = json.load(f)["current_host"]
    os.makedirs(args.output_dir, exist_ok=True)
    shards = write_shards(args.output_dir, host, records, args.shards)
    manifest = {
        "host": host,
        "seed": args.seed,
        "records": int(len(records)),
        "resolution": args.resolution,
        "source_files": len(files),
        "shards": shards,
        "test_records": int(len(test)),
    }
    if held_out:
        os.makedirs(args.test_dir, exist_ok=True)
        manifest["test"] = write_shard(os.path.join(args.test_dir, f"test-{host}.rec"), test)
        write_eval_csv(args.eval_dir, host, test)
    with open(os.path.join(args.output_dir, f"manifest-{host}.json"), "w") as f:
        json.dump(manifest, f, indent=2)
    elapsed = time.time() - started
    print(
        f"wrote {len(shards)} shards, {len(records)} records, "
        f"{sum(s['bytes'] for s in shards) / 1e6:.1f} MB in {elapsed:.2f}s",
        flush=True,
    )


if __name__ == "__main__":
    main()

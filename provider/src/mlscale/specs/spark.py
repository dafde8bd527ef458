"""GlueSparkSpec: a PySpark script run as an AWS Glue Spark (glueetl) job, what it reads and what it writes.

Worker types, counts and versions follow AWS Glue's job API
(https://docs.aws.amazon.com/glue/latest/dg/aws-glue-api-jobs-job.html) and its worker types
(https://docs.aws.amazon.com/glue/latest/dg/worker-types.html).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from mlscale.specs import rules
from mlscale.specs.coerce import coerce_fields
from mlscale.specs.rules import require

# Glue's Spark worker types (G.025X is for streaming jobs, Z.2X for Ray): vCPUs, memory GiB, most workers
SPARK_WORKER_TYPES = {
    "G.1X": (4, 16, 299),
    "G.2X": (8, 32, 149),
    "G.4X": (16, 64, 149),
    "G.8X": (32, 128, 149),
}
GLUE_VERSIONS = ("3.0", "4.0", "5.0")  # the Spark versions Glue runs
JOB_NAME = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9._-]{0,254}\Z")
ARGUMENT_NAME = re.compile(r"^--[a-zA-Z0-9][a-zA-Z0-9._-]*\Z")
# Glue's own job parameters, which the stage sets from the spec's fields
# (https://docs.aws.amazon.com/glue/latest/dg/aws-glue-programming-etl-glue-arguments.html)
RESERVED_ARGUMENTS = ("--conf", "--extra-py-files", "--JOB_NAME", "--JOB_RUN_ID", "--mlscale-task")
SPARK_PROPERTY = re.compile(r"^spark\.[a-zA-Z0-9._-]+\Z")


@dataclass
class GlueSparkSpec:
    job_name: str  # the Glue job the stage creates, or updates to this spec
    script: str  # a local PySpark script (uploaded, content-addressed, under code_location) or an s3:// URI
    role_arn: str
    code_location: str  # s3:// prefix for the uploaded script and extra Python files
    arguments: dict[str, str] = field(default_factory=dict)  # the run's job arguments: {"--name": "value"}
    # name -> the s3:// prefix(es) the job reads: the stage's fingerprint hashes their objects (cache, lineage)
    inputs: dict[str, str | list[str]] = field(default_factory=dict)
    outputs: dict[str, str] = field(default_factory=dict)  # name -> the s3:// prefix the job writes
    worker_type: str = "G.1X"
    number_of_workers: int = 2  # one is Spark's driver
    glue_version: str = "5.0"
    timeout_minutes: int = 60
    spark_conf: dict[str, str] = field(default_factory=dict)  # Spark properties, passed as Glue's --conf
    extra_py_files: list[str] = field(default_factory=list)  # local .py files the script imports
    max_concurrent_runs: int = 4  # runs of this job at once (two DAG runs, a backfill)

    template_fields = ("script", "arguments", "inputs", "outputs", "worker_type", "number_of_workers", "spark_conf")

    def validate(self) -> None:
        coerce_fields(self)
        require(
            isinstance(self.job_name, str) and bool(JOB_NAME.match(self.job_name)),
            "job_name",
            "must be 1-255 letters, digits, '.', '_' and '-', starting with a letter or digit",
            self.job_name,
        )
        require(isinstance(self.script, str) and bool(self.script), "script", "is required")
        if self.script.startswith("s3://"):
            rules.s3_uri(self.script, "script")
        else:
            require(Path(self.script).is_file(), "script", "must be a PySpark file that exists here", self.script)
        require(self.script.endswith(".py"), "script", "must be a Python script (.py)", self.script)
        rules.role_arn(self.role_arn)
        rules.s3_uri(self.code_location, "code_location")
        require(isinstance(self.arguments, dict), "arguments", "must map '--name' to a value", self.arguments)
        for name, value in self.arguments.items():
            require(
                isinstance(name, str) and bool(ARGUMENT_NAME.match(name)),
                f"arguments[{name!r}]",
                "must be a job argument name: '--' then letters, digits, '.', '_' or '-'",
            )
            require(
                name not in RESERVED_ARGUMENTS,
                f"arguments[{name!r}]",
                "is set by the stage (spark_conf, extra_py_files, the run's own names)",
            )
            require(isinstance(value, (str, int, float)), f"arguments[{name!r}]", "must be a string", value)
        for kind, uris in (("inputs", self.inputs), ("outputs", self.outputs)):
            require(isinstance(uris, dict), kind, "must map names to s3:// prefixes", uris)
            for name, value in uris.items():
                for uri in [value] if isinstance(value, str) else list(value):
                    rules.s3_uri(uri, f"{kind}[{name!r}]")
        require(
            self.worker_type in SPARK_WORKER_TYPES,
            "worker_type",
            f"must be a Glue Spark worker type: {', '.join(SPARK_WORKER_TYPES)}",
            self.worker_type,
        )
        most = SPARK_WORKER_TYPES[self.worker_type][2]
        rules.in_range(self.number_of_workers, "number_of_workers", 2, most)
        require(
            self.glue_version in GLUE_VERSIONS,
            "glue_version",
            f"must be a Glue version that runs Spark: {', '.join(GLUE_VERSIONS)}",
            self.glue_version,
        )
        rules.in_range(self.timeout_minutes, "timeout_minutes", 1, 10080)  # Glue's most: 7 days
        rules.in_range(self.max_concurrent_runs, "max_concurrent_runs", 1, 1000)
        require(isinstance(self.spark_conf, dict), "spark_conf", "must map Spark properties to values")
        for key, value in self.spark_conf.items():
            require(
                isinstance(key, str) and bool(SPARK_PROPERTY.match(key)),
                f"spark_conf[{key!r}]",
                "must be a Spark property (spark.<name>)",
            )
            require(
                isinstance(value, (str, int, float)) and "--conf" not in str(value),
                f"spark_conf[{key!r}]",
                "must be a plain value",
                value,
            )
        for index, path in enumerate(self.extra_py_files):
            require(
                isinstance(path, str) and path.endswith(".py") and Path(path).is_file(),
                f"extra_py_files[{index}]",
                "must be a .py file that exists here",
                path,
            )

    def conf_argument(self) -> str | None:
        """Glue's --conf value: ``k=v`` pairs joined by the separator ``" --conf "``, as Glue documents it."""
        pairs = [f"{k}={v}" for k, v in sorted(self.spark_conf.items())]
        return " --conf ".join(pairs) or None

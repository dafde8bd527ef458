"""Run a PySpark script as Glue or EMR Serverless would: `spark-submit` in local mode, S3 paths on the emulator.

Spark runs in one JVM on this machine (`local[N]`: N task slots, its heap the job's executor memory). Paths
`s3://` and `s3a://` reach the emulator's S3 through mlscale's Hadoop FileSystem (S3FileSystem.java beside
this module: PySpark ships Hadoop's client but not hadoop-aws), compiled with the JDK's javac against the
Hadoop jars PySpark carries, once per source version. Every listener Spark opens is on loopback and its UI is
off; the job's environment is the emulator's allow-list (mlscale_emulator.job_env) with dummy credentials.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import zipfile
from pathlib import Path

from mlscale_emulator import job_env

SOURCE = Path(__file__).with_name("S3FileSystem.java")
FILE_SYSTEM_CLASS = "mlscale.hadoop.S3FileSystem"
_compile_lock = threading.Lock()


class SparkUnavailable(RuntimeError):
    """PySpark or a JDK is missing: the run fails with this reason."""


def spark_home() -> Path:
    try:
        import pyspark
    except ImportError as error:
        raise SparkUnavailable("PySpark is not installed: install mlscale-emulator[spark] to run Spark jobs") from error
    return Path(pyspark.__file__).resolve().parent


def java_tool(name: str) -> str:
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / name) if home and (Path(home) / "bin" / name).exists() else shutil.which(name)
    if not found:
        raise SparkUnavailable(f"{name} is not on PATH: Spark needs a JDK (17 or newer)")
    return found


def file_system_jar(cache_dir: Path) -> Path:
    """The compiled S3 FileSystem, built once per source and PySpark version into `cache_dir`."""
    home = spark_home()
    digest = hashlib.sha256(SOURCE.read_bytes() + str(home).encode()).hexdigest()[:16]
    jar = cache_dir / f"mlscale-s3-{digest}.jar"
    with _compile_lock:
        if jar.exists():
            return jar
        cache_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=cache_dir) as build:
            done = subprocess.run(
                [java_tool("javac"), "-nowarn", "-cp", str(home / "jars" / "*"), "-d", build, str(SOURCE)],
                capture_output=True,
                text=True,
                timeout=300,
            )
            if done.returncode != 0:
                raise SparkUnavailable(f"javac could not build the S3 file system: {done.stderr[-2000:]}")
            partial = jar.with_suffix(".part")
            with zipfile.ZipFile(partial, "w") as archive:
                for path in sorted(Path(build).rglob("*.class")):
                    archive.write(path, path.relative_to(build).as_posix())
            partial.replace(jar)  # whole or absent: a second job never reads half a jar
    return jar


def properties(*, cores: int, memory_mb: int, work: Path, jar: Path, region: str, endpoint_url: str) -> dict:
    """spark-defaults for a job: local mode, loopback only, no UI, s3:// and s3a:// on the emulator."""
    hadoop = {
        "fs.s3.impl": FILE_SYSTEM_CLASS,
        "fs.s3a.impl": FILE_SYSTEM_CLASS,
        "fs.mlscale.endpoint": endpoint_url,
        "fs.mlscale.region": region,
        "fs.mlscale.access.key": job_env.DUMMY_KEY,
        "fs.mlscale.secret.key": job_env.DUMMY_KEY,
        # v2 commits each task's files straight into place: one rename per file, not two (renames are copies)
        "mapreduce.fileoutputcommitter.algorithm.version": "2",
    }
    return {
        "spark.master": f"local[{cores}]",
        "spark.driver.memory": f"{memory_mb}m",
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.jars": str(jar),
        "spark.sql.warehouse.dir": str(work / "spark-warehouse"),
        "spark.jars.ivy": str(work / "ivy"),
        "spark.driver.extraJavaOptions": (
            f"-Djava.io.tmpdir={work / 'tmp'} -Dlog4j.configurationFile={work / 'log4j2.properties'}"
        ),
        **{f"spark.hadoop.{k}": v for k, v in hadoop.items()},
    }


# Spark's own logging at WARN on stderr: the script's output and exceptions stay readable in the error log.
LOG4J2 = """\
rootLogger.level = warn
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
logger.spark.name = org.apache.spark
logger.spark.level = warn
"""


def submit_command(
    script: Path, arguments: list[str], *, work: Path, settings: dict, conf: dict[str, str], py_files: list[Path]
) -> list[str]:
    """`spark-submit` with the job's properties file; the caller's `conf` wins over the emulator's defaults,
    except what keeps the job on loopback and on the emulator."""
    for folder in ("tmp", "spark-local"):
        (work / folder).mkdir(parents=True, exist_ok=True)
    (work / "log4j2.properties").write_text(LOG4J2)
    fixed = {k: v for k, v in settings.items() if k.startswith(("spark.driver.host", "spark.driver.bindAddress"))}
    merged = {**settings, **conf, **fixed}
    (work / "spark-defaults.conf").write_text("".join(f"{k} {v}\n" for k, v in merged.items()))
    command = [str(spark_home() / "bin" / "spark-submit"), "--properties-file", str(work / "spark-defaults.conf")]
    if py_files:
        command += ["--py-files", ",".join(map(str, py_files))]
    return [*command, str(script), *arguments]


def environment(region: str, work: Path) -> dict[str, str]:
    """The job's environment: the emulator's allow-list and access, and what Spark needs to start."""
    env = job_env.for_job(
        region,
        SPARK_HOME=str(spark_home()),
        PYSPARK_PYTHON=sys.executable,
        PYSPARK_DRIVER_PYTHON=sys.executable,
        SPARK_LOCAL_IP="127.0.0.1",
        SPARK_LOCAL_DIRS=str(work / "spark-local"),  # shuffle and spill files: the job's own folder
        SPARK_CONF_DIR=str(work),
        TMPDIR=str(work / "tmp"),
    )
    if os.environ.get("JAVA_HOME"):
        env["JAVA_HOME"] = os.environ["JAVA_HOME"]
    return env


def download_py_files(s3, uris: list[str], folder: Path) -> list[Path]:
    """Glue's --extra-py-files and spark-submit's --py-files: each S3 object into `folder`, by its own name."""
    from mlscale_emulator.executors import s3io

    paths = []
    for uri in (u.strip() for u in uris if u.strip()):
        bucket, key = s3io.split_s3_uri(uri)
        paths.append(s3io.inside(folder, os.path.basename(key)))
        paths[-1].parent.mkdir(parents=True, exist_ok=True)
        s3io.download(s3, bucket, key, paths[-1])
    return paths


def parse_conf(value: str) -> dict[str, str]:
    """Glue's `--conf` argument: `k=v`, further pairs each after ` --conf ` (as Glue documents it)."""
    pairs: dict[str, str] = {}
    for part in value.split("--conf"):
        part = part.strip()
        if not part:
            continue
        key, sep, val = part.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--conf: {part!r} is not key=value")
        pairs[key.strip()] = val.strip()
    return pairs


def parse_memory_mb(value: str) -> int:
    """A JVM memory size as Spark writes it (512m, 2g, 1024k, 3t) in MiB."""
    text = value.strip().lower().removesuffix("b")
    units = {"k": 1 / 1024, "m": 1, "g": 1024, "t": 1024 * 1024}
    if text and text[-1] in units:
        number, unit = text[:-1], units[text[-1]]
    else:
        number, unit = text, 1 / (1024 * 1024)  # plain bytes
    if not number.isdigit():
        raise ValueError(f"{value!r} is not a memory size such as 512m or 2g")
    return max(1, int(int(number) * unit))

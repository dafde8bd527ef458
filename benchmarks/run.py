"""mlscale benchmarks. Each prints a ratio against a baseline measured in the same run.

- DAG parse: dags/mlscale_pipeline.py against benchmarks/baseline_dag.py (the
  provider's Athena, training, transform and endpoint operators), cold (a fresh
  interpreter with Airflow already imported, as a DAG processor parses) and warm
  (re-parsed in the same process), the warm parse per task too, and the time to
  serialize each DAG (what a DAG processor also does after each parse).
- Plugin load: Airflow's plugin loader with mlscale registered, against
  importing the provider's SageMaker operators module; and a check that
  nothing heavy (torch, duckdb, pandas, the SageMaker SDK) gets imported.

- Data stages (benchmarks/data_bench.py): shard writing against pyarrow's
  write_dataset and a raw copy; the shard loader against one file per record,
  at the default data size and at four times it.
- Triggerer capacity (benchmarks/trigger_bench.py): concurrent training-job and
  Batch-job waits on mlscale's trigger against the provider's SageMakerTrigger and
  BatchJobTrigger, behind the emulator's request-rate limits.
- Emulator overhead (benchmarks/emulator_bench.py): a training job through the
  emulator against the same script run directly, 1 and 2 instances; a processing
  job and a Batch Transform the same way.
- The data step's engines (benchmarks/spark_bench.py): one Glue Spark job (ETL and shards) against Athena
  then a Processing job on the same raw data, MB/s and peak memory; and the Spark job on raw data four
  times its heap, which must finish with equal shards.
- The demo (benchmarks/demo_bench.py): its orchestration overhead (the run's wall
  time less its jobs' own time, per task), the emulator server's peak RSS against
  plain moto given the same objects, the stage cache (the demo re-run unchanged
  against its first run; the jobs the re-run launched), and the example
  trainer's data-wait fraction in the demo's training job.

Run with `make bench` (MLSCALE_BENCH_QUICK=1: fewer rounds, smaller data, 200 waits). Samples interleave the
two sides so drift hits both. Each figure is printed with its goal; all go to .mlscale/bench.json
(benchmarks/goals.py), and the last line says how many goals are met.
"""

from __future__ import annotations

import compileall
import json
import os
import subprocess
import sys
from pathlib import Path

from goals import Figure, median, spread, summary, write

REPO = Path(__file__).resolve().parent.parent
ROUNDS = int(os.environ.get("MLSCALE_BENCH_ROUNDS", "7"))

PARSE = """
import json, sys, time
import airflow.sdk, airflow.dag_processing.dagbag as d  # what a DAG processor has loaded before parsing
from airflow.serialization.serialized_objects import DagSerialization
path = sys.argv[1]
t = time.perf_counter(); bag = d.DagBag(dag_folder=path, safe_mode=False); cold = time.perf_counter() - t
assert not bag.import_errors, bag.import_errors
warm, serialize = [], []
for _ in range(5):
    t = time.perf_counter(); bag = d.DagBag(dag_folder=path, safe_mode=False); warm.append(time.perf_counter() - t)
    (dag,) = bag.dags.values()
    t = time.perf_counter(); DagSerialization.to_dict(dag); serialize.append(time.perf_counter() - t)
print(json.dumps({"cold": cold, "warm": min(warm), "serialize": min(serialize), "tasks": len(dag.tasks)}))
"""

PLUGINS = """
import json, sys, time
import airflow.sdk
from airflow import plugins_manager
t = time.perf_counter(); plugins, errors = plugins_manager._get_plugins(); plugins_s = time.perf_counter() - t
t = time.perf_counter(); import airflow.providers.amazon.aws.operators.sagemaker; provider_s = time.perf_counter() - t
heavy = sorted(m for m in ("torch", "duckdb", "pandas", "sagemaker", "moto", "sklearn") if m in sys.modules)
print(json.dumps({"plugins": plugins_s, "provider": provider_s, "heavy": heavy, "names": [p.name for p in plugins]}))
"""


def probe(code: str, *args: str) -> dict:
    env = {
        **os.environ,
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__PLUGINS_FOLDER": str(REPO / "plugins"),
        "AIRFLOW_HOME": str(REPO / ".mlscale" / "bench-airflow"),
    }
    out = subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def parse_and_plugin_figures(rounds: int) -> list[Figure]:
    # the baseline's provider is installed with its bytecode (pip compiles at install); give mlscale's editable
    # sources theirs too, which imports write unless PYTHONDONTWRITEBYTECODE is set
    for folder in ("provider/src", "plugins"):
        compileall.compile_dir(REPO / folder, quiet=1)
    ours, base, plugin_runs = [], [], []
    for _ in range(rounds):  # interleaved: drift hits both sides
        ours.append(probe(PARSE, str(REPO / "dags" / "mlscale_pipeline.py")))
        base.append(probe(PARSE, str(REPO / "benchmarks" / "baseline_dag.py")))
        plugin_runs.append(probe(PLUGINS))
    figures = []
    tasks, base_tasks = ours[0]["tasks"], base[0]["tasks"]
    serialize, base_serialize = (
        median([r["serialize"] * 1e3 for r in ours]),
        median([r["serialize"] * 1e3 for r in base]),
    )
    for key, goal in (("cold", "<= 1.2"), ("warm", "<= 2")):
        mine, theirs = [r[key] * 1e3 for r in ours], [r[key] * 1e3 for r in base]
        also = f"; serializing it (as a DAG processor does after each parse) {serialize:.1f} vs {base_serialize:.1f} ms"
        figures.append(
            Figure(
                f"dag_parse_{key}",
                median(mine),
                median(theirs),
                goal,
                "ms",
                f"dags/mlscale_pipeline.py ({tasks} tasks) vs the {base_tasks}-operator provider DAG; "
                f"{spread(mine)}{also if key == 'warm' else ''}",
            )
        )
    # Not one of the figures: the warm parse per task, the pipeline having 25 tasks to the baseline's 4.
    mine, theirs = [r["warm"] * 1e3 / tasks for r in ours], [r["warm"] * 1e3 / base_tasks for r in base]
    figures.append(
        Figure(
            "dag_parse_warm_per_task",
            median(mine),
            median(theirs),
            "<= 2",
            "ms/task",
            f"{tasks} vs {base_tasks} tasks; {spread(mine)}",
        )
    )
    plugins = [r["plugins"] * 1e3 for r in plugin_runs]
    provider = [r["provider"] * 1e3 for r in plugin_runs]
    figures.append(
        Figure(
            "plugin_load",
            median(plugins),
            median(provider),
            "<= 0.1",
            "ms",
            "Airflow's plugin loader with mlscale vs importing the provider's SageMaker operators",
        )
    )
    heavy = sorted({m for r in plugin_runs for m in r["heavy"]})
    figures.append(
        Figure(
            "heavy_modules_at_plugin_load",
            len(heavy),
            None,
            "<= 0",
            "modules",
            f"imported: {', '.join(heavy) or 'none'}",
        )
    )
    return figures


def main() -> int:
    quick = os.environ.get("MLSCALE_BENCH_QUICK") == "1"
    figures = parse_and_plugin_figures(3 if quick else ROUNDS)
    for figure in figures:
        print(figure.line(), flush=True)

    sys.path.insert(0, str(REPO / "benchmarks"))
    import data_bench
    import demo_bench
    import emulator_bench
    import spark_bench
    import trigger_bench

    for group in (
        data_bench.figures(quick),
        trigger_bench.figures(quick),
        emulator_bench.figures(quick),
        spark_bench.figures(quick),
        demo_bench.figures(quick),
    ):
        for figure in group:
            print(figure.line(), flush=True)
            figures.append(figure)
    write(figures, REPO / ".mlscale" / "bench.json")
    print(f"wrote {REPO / '.mlscale' / 'bench.json'}")
    print(summary(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""mlscale benchmarks. Each prints a ratio against a baseline measured in the same run.

- DAG parse: dags/mlscale_pipeline.py against benchmarks/baseline_dag.py (the
  provider's SageMakerTrainingOperator only), cold (a fresh interpreter with
  Airflow already imported, as a DAG processor parses) and warm (re-parsed).
- Plugin load: Airflow's plugin loader with mlscale registered, against
  importing the provider's SageMaker operators module; and a check that
  nothing heavy (torch, duckdb, pandas, the SageMaker SDK) gets imported.

- Data stages (benchmarks/data_bench.py): shard writing against pyarrow's
  write_dataset and a raw copy; the shard loader against one file per record.

Run with `make bench`. Samples interleave the two sides so drift hits both.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ROUNDS = int(os.environ.get("MLSCALE_BENCH_ROUNDS", "7"))

PARSE = """
import json, sys, time
import airflow.sdk, airflow.dag_processing.dagbag as d  # what a DAG processor has loaded before parsing
path = sys.argv[1]
t = time.perf_counter(); bag = d.DagBag(dag_folder=path, safe_mode=False); cold = time.perf_counter() - t
assert not bag.import_errors, bag.import_errors
warm = []
for _ in range(5):
    t = time.perf_counter(); d.DagBag(dag_folder=path, safe_mode=False); warm.append(time.perf_counter() - t)
print(json.dumps({"cold": cold, "warm": min(warm)}))
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
    env = {**os.environ, "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
           "AIRFLOW__CORE__PLUGINS_FOLDER": str(REPO / "plugins"),
           "AIRFLOW_HOME": str(REPO / ".mlscale" / "bench-airflow")}  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    ours, base, plugin_runs = [], [], []
    for _ in range(ROUNDS):
        ours.append(probe(PARSE, str(REPO / "dags" / "mlscale_pipeline.py")))
        base.append(probe(PARSE, str(REPO / "benchmarks" / "baseline_dag.py")))
        plugin_runs.append(probe(PLUGINS))

    def median(runs, key):
        return statistics.median(r[key] for r in runs)

    print(f"DAG parse, cold   mlscale {median(ours, 'cold') * 1e3:7.1f} ms   provider baseline "
          f"{median(base, 'cold') * 1e3:7.1f} ms   ratio {median(ours, 'cold') / median(base, 'cold'):.2f}")
    print(f"DAG parse, warm   mlscale {median(ours, 'warm') * 1e3:7.1f} ms   provider baseline "
          f"{median(base, 'warm') * 1e3:7.1f} ms   ratio {median(ours, 'warm') / median(base, 'warm'):.2f}")
    plugins, provider = median(plugin_runs, "plugins"), median(plugin_runs, "provider")
    print(f"Plugin load       all plugins {plugins * 1e3:7.1f} ms   provider SageMaker operators import "
          f"{provider * 1e3:7.1f} ms   ratio {plugins / provider:.2f}")
    heavy = sorted({m for r in plugin_runs for m in r["heavy"]})
    print(f"Heavy modules imported by plugin loading: {heavy or 'none'}; plugins: {plugin_runs[0]['names']}")

    sys.path.insert(0, str(REPO / "benchmarks"))
    import data_bench

    data_bench.main()
    return 1 if heavy else 0


if __name__ == "__main__":
    sys.exit(main())

"""The `mlscale` command line: `mlscale emulator up|down|reset|status|serve|connection|fleet|arrivals`, `mlscale demo`,
`mlscale airflow`."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mlscale")
    sub = parser.add_subparsers(dest="command", required=True)
    emulator = sub.add_parser("emulator", help="the local AWS emulator")
    emulator.add_argument(
        "action",
        choices=["up", "down", "reset", "status", "serve", "connection", "fleet", "arrivals"],
        help="reset: wipe every resource, object and job file it keeps (they survive down/up); "
        "fleet: register the simulated Greengrass core devices the DAG deploys to; "
        "arrivals: the SQS queue and S3 notification that start the pipeline on new data",
    )
    emulator.add_argument("--port", type=int, help="default 5055 (MLSCALE_EMULATOR_PORT)")
    emulator.add_argument("--home", help="state and job folders (MLSCALE_EMULATOR_HOME)")
    emulator.add_argument(
        "--no-limits",
        action="store_true",
        help="answer every request: no AWS request-rate limits (MLSCALE_EMULATOR_LIMITS=off)",
    )
    demo_parser = sub.add_parser("demo", help="run the example DAG through Airflow against the emulator")
    demo_parser.add_argument("conf", nargs="?", help='DAG params as JSON, e.g. \'{"storage": "fsx_lustre"}\'')
    airflow_parser = sub.add_parser(
        "airflow",
        help="Airflow (scheduler, triggerer, dag processor, API server on PostgreSQL) with mlscale, "
        "against the emulator",
    )
    airflow_parser.add_argument("--port", type=int, default=8080, help="the Airflow UI and API (default 8080)")
    airflow_parser.add_argument(
        "--executor",
        choices=("local", "celery"),
        default="local",
        help="LocalExecutor (default), or CeleryExecutor on a Redis broker (redis-server)",
    )
    airflow_parser.add_argument("--workers", type=int, default=2, help="Celery workers (default 2; --executor celery)")
    args = parser.parse_args(argv)
    try:
        return _run(args)
    except (RuntimeError, ValueError) as error:  # the emulator could not start, or a setting is bad: one line
        print(f"mlscale: {error}", file=sys.stderr)
        return 1


def _run(args: argparse.Namespace) -> int:
    if args.command == "airflow":
        from mlscale_emulator import local_airflow

        if args.workers < 1:
            raise RuntimeError(f"--workers must be at least 1 (got {args.workers})")
        return local_airflow.main(args.port, workers=args.workers if args.executor == "celery" else 0)
    if args.command == "demo":
        from mlscale_emulator import demo

        return demo.main([args.conf] if args.conf else [])

    from mlscale_emulator import control
    from mlscale_emulator.settings import EmulatorSettings

    config = EmulatorSettings.from_env(port=args.port, home=args.home)
    if args.no_limits:  # the server reads it (up passes MLSCALE_EMULATOR_* on)
        os.environ["MLSCALE_EMULATOR_LIMITS"] = "off"
    if args.action == "serve":
        from mlscale_emulator.server import EmulatorServer

        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        logging.getLogger("werkzeug").setLevel(logging.WARNING)  # one line per request drowns the job logs
        EmulatorServer(config).serve_forever()
    elif args.action == "up":
        pid = control.up(config)
        print(f"mlscale emulator up on {config.endpoint_url} (pid {pid}, home {config.home})")
    elif args.action == "down":
        print("mlscale emulator stopped" if control.down(config) else "mlscale emulator was not running")
    elif args.action == "reset":
        try:
            running = control.reset(config)
        except RuntimeError as error:
            print(f"mlscale emulator reset: {error}", file=sys.stderr)
            return 1
        print(f"mlscale emulator reset ({'running' if running else 'not running'}; home {config.home})")
    elif args.action == "status":
        state = control.status(config)
        print(json.dumps(state))
        return 0 if state["ready"] else 1
    elif args.action == "connection":
        print(control.connection_uri(config))
    elif args.action == "fleet":
        print("edge devices: " + ", ".join(control.provision_edge_fleet(config)))
    elif args.action == "arrivals":
        from mlscale_emulator import local_project

        arn = local_project.load().provision(lambda service: control.client(config, service))
        print("new raw data is announced to " + arn)
    return 0


if __name__ == "__main__":
    sys.exit(main())

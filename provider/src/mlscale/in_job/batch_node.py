"""One node of an AWS Batch multi-node parallel training job: a script-mode training script on N nodes.

Runs in the job's container (stock Python with boto3 and, for distributed training, torch), on every node.
It gives the script the SageMaker training environment it already reads (SM_MODEL_DIR, SM_CHANNEL_<NAME>,
SM_HOSTS, SM_CURRENT_HOST, SM_HPS, hyperparameters as `--key value`), turns Batch's multi-node variables
into torchrun's rendezvous (https://docs.aws.amazon.com/batch/latest/userguide/mnp-env-vars.html), and, on
the main node, uploads the model directory as model.tar.gz. Its exit code is the script's.

Configured by the job's environment: MLSCALE_PROGRAM (the entry point in ./code), MLSCALE_HYPERPARAMETERS
(JSON), MLSCALE_CHANNELS (JSON: channel -> s3:// prefix, or a directory of a shared file system),
MLSCALE_MODEL_URI (s3://.../model.tar.gz), MLSCALE_DISTRIBUTION (torchrun, or none: one process a node),
MLSCALE_PROCS_PER_NODE (default: the node's GPUs, at least 1).
"""

import json
import os
import shutil
import subprocess
import sys
import tarfile


def _split(uri):
    bucket, _, key = uri[len("s3://") :].partition("/")
    return bucket, key


def download_prefix(s3, uri, target):
    bucket, prefix = _split(uri.rstrip("/") + "/")
    pages = s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
    for obj in (o for page in pages for o in page.get("Contents", [])):
        relative = obj["Key"][len(prefix) :]
        if not relative or relative.endswith("/"):
            continue
        path = os.path.join(target, relative)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        s3.download_file(bucket, obj["Key"], path)


def gpu_count():
    if not shutil.which("nvidia-smi"):
        return 0
    result = subprocess.run(["nvidia-smi", "--list-gpus"], capture_output=True, text=True)
    return len([line for line in result.stdout.splitlines() if line.strip()]) if result.returncode == 0 else 0


def rendezvous_port():
    """torch's MASTER_PORT when the environment sets one (the emulator gives each job a free port: its nodes
    share one host), else torch's default 29500 (on AWS every node has its own address)."""
    return int(os.environ.get("MASTER_PORT") or 29500)


def arguments(hyperparameters):
    args = []
    for key, value in sorted(hyperparameters.items()):
        args += [f"-{key}" if len(key) == 1 else f"--{key}", str(value)]
    return args


def main():
    import boto3

    env = os.environ
    index, nodes = int(env.get("AWS_BATCH_JOB_NODE_INDEX", 0)), int(env.get("AWS_BATCH_JOB_NUM_NODES", 1))
    main_index = int(env.get("AWS_BATCH_JOB_MAIN_NODE_INDEX", 0))
    root = os.path.abspath("ml")
    model_dir, output_dir = os.path.join(root, "model"), os.path.join(root, "output", "data")
    for path in (model_dir, output_dir, os.path.join(root, "checkpoints")):
        os.makedirs(path, exist_ok=True)
    s3 = boto3.client("s3")
    hyperparameters = json.loads(env.get("MLSCALE_HYPERPARAMETERS") or "{}")
    channels = {}
    for name, source in json.loads(env.get("MLSCALE_CHANNELS") or "{}").items():
        if source.startswith("s3://"):
            channels[name] = os.path.join(root, "input", "data", name)
            download_prefix(s3, source, channels[name])
        else:  # a directory of the cluster's shared file system, mounted on every node
            channels[name] = source
    gpus = gpu_count()
    hosts = [f"node-{i}" for i in range(nodes)]
    script_env = dict(env)
    script_env.update(
        {
            "SM_MODEL_DIR": model_dir,
            "SM_OUTPUT_DATA_DIR": output_dir,
            "SAGEMAKER_BASE_DIR": root,
            "SM_CHANNELS": json.dumps(sorted(channels)),
            "SM_HPS": json.dumps(hyperparameters, sort_keys=True),
            "SM_HOSTS": json.dumps(hosts),
            "SM_CURRENT_HOST": hosts[index],
            "SM_NUM_GPUS": str(gpus),
            "SM_NUM_CPUS": str(os.cpu_count() or 1),
        }
    )
    script_env.update({f"SM_CHANNEL_{name.upper()}": path for name, path in channels.items()})
    script_env.update(
        {f"SM_HP_{key.upper()}": v if isinstance(v, str) else json.dumps(v) for key, v in hyperparameters.items()}
    )
    code = os.path.abspath("code")
    script_env["PYTHONPATH"] = os.pathsep.join(p for p in (code, env.get("PYTHONPATH")) if p)
    program = env["MLSCALE_PROGRAM"]
    master = env.get("AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS", "127.0.0.1")  # unset on the main node
    port = rendezvous_port()
    if env.get("MLSCALE_DISTRIBUTION", "torchrun") == "torchrun":
        procs = int(env.get("MLSCALE_PROCS_PER_NODE") or max(1, gpus))
        command = [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--nnodes",
            str(nodes),
            "--node_rank",
            str(index),
            "--nproc_per_node",
            str(procs),
            "--master_addr",
            master,
            "--master_port",
            str(port),
            program,
            *arguments(hyperparameters),
        ]
    else:
        script_env.update(
            {"RANK": str(index), "WORLD_SIZE": str(nodes), "MASTER_ADDR": master, "MASTER_PORT": str(port)}
        )
        command = [sys.executable, program, *arguments(hyperparameters)]
    print(f"mlscale batch node {index}/{nodes} (main {main_index}): {' '.join(command)}", flush=True)
    code_exit = subprocess.call(command, cwd=code, env=script_env)
    if index == main_index and code_exit == 0 and env.get("MLSCALE_MODEL_URI"):
        archive = os.path.join(root, "model.tar.gz")
        with tarfile.open(archive, "w:gz") as tar:
            for name in sorted(os.listdir(model_dir)):
                tar.add(os.path.join(model_dir, name), arcname=name)
        s3.upload_file(archive, *_split(env["MLSCALE_MODEL_URI"]))
        print(f"uploaded the model to {env['MLSCALE_MODEL_URI']}", flush=True)
    return code_exit


if __name__ == "__main__":
    sys.exit(main())

"""The edge inference app of the mlscale Greengrass component: load the Neo-compiled model, answer a sample.

Runs on a Greengrass core device (Python 3 with numpy and torch); imports
nothing from mlscale. Prints `answer=<class>` for the smoke inference, which
Greengrass's log manager ships to CloudWatch Logs.

    python3 inference_app.py --model <compiled model.tar.gz> --sample '[[0, 0.3, ...]]'
"""

import argparse
import json
import os
import tarfile
import tempfile

import torch


def load(model_archive: str):
    folder = tempfile.mkdtemp(prefix="mlscale-edge-")
    with tarfile.open(model_archive) as tar:
        tar.extractall(folder, filter="data")
    candidates = [name for name in os.listdir(folder) if name.endswith((".pt", ".pth"))]
    if len(candidates) != 1:
        raise SystemExit(f"expected one compiled model in {model_archive}, found {candidates}")
    return torch.jit.load(os.path.join(folder, candidates[0]), map_location="cpu").eval()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    parser.add_argument("--sample", required=True, help="a JSON list of rows")
    args = parser.parse_args()
    model = load(args.model)
    with torch.no_grad():
        scores = model(torch.tensor(json.loads(args.sample), dtype=torch.float32))
    answer = int(scores.argmax(dim=1)[0])
    print(f"thing={os.environ.get('AWS_IOT_THING_NAME', 'local')} answer={answer}", flush=True)


if __name__ == "__main__":
    main()

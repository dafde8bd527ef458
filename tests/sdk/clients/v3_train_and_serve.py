"""SageMaker Python SDK v3 code as its documentation writes it, run against the emulator with only
AWS_ENDPOINT_URL set: an execution role made by the SDK's IamRoleResolver (IAM on the emulator, which the
SDK's role check then simulates), ModelTrainer with SourceCode (its sm_drivers channel and
ContainerEntrypoint), then ModelBuilder's build and deploy, Endpoint.invoke and delete.

Run in the SDK's own venv (tests/sdk/venvs.py); prints its results as one SDK-RESULTS JSON line.
"""

import json
import os
import tempfile

import numpy as np
from sagemaker.core.helper import IamRoleResolver
from sagemaker.core.helper.session_helper import Session
from sagemaker.core.training.configs import SourceCode as ServingCode
from sagemaker.serve.model_builder import ModelBuilder
from sagemaker.train import ModelTrainer
from sagemaker.train.configs import Compute, InputData, SourceCode

IMAGE = "683313688378.dkr.ecr.us-east-1.amazonaws.com/sagemaker-scikit-learn:1.2-1-cpu-py3"
TRAIN = '''
import argparse, os
import joblib
import numpy as np
from sklearn.linear_model import LogisticRegression

parser = argparse.ArgumentParser()
parser.add_argument("--C", type=float, default=1.0)  # v3's driver passes --C (the v2 toolkit: -C)
args = parser.parse_args()
train = os.environ["SM_CHANNEL_TRAIN"]
rows = np.vstack([np.loadtxt(os.path.join(train, f), delimiter=",", ndmin=2) for f in sorted(os.listdir(train))])
model = LogisticRegression(C=args.C).fit(rows[:, 1:], rows[:, 0])
print(f"train accuracy={model.score(rows[:, 1:], rows[:, 0]):.3f}")
joblib.dump(model, os.path.join(os.environ["SM_MODEL_DIR"], "model.joblib"))
'''
INFERENCE = '''
import os
import joblib

def model_fn(model_dir):
    return joblib.load(os.path.join(model_dir, "model.joblib"))
'''


def main():
    work = tempfile.mkdtemp()
    code = os.path.join(work, "code")
    os.makedirs(code)
    for name, text in (("train.py", TRAIN), ("inference.py", INFERENCE)):
        with open(os.path.join(code, name), "w") as handle:
            handle.write(text)
    # The SDK names its default bucket from STS at an endpoint it sets itself: name one.
    session = Session(default_bucket=os.environ["SDK_TEST_BUCKET"])
    rng = np.random.default_rng(0)
    features = rng.normal(size=(200, 2))
    labels = (features.sum(axis=1) > 0).astype(float)
    np.savetxt(os.path.join(work, "train.csv"), np.column_stack([labels, features]), delimiter=",", fmt="%g")
    data = session.upload_data(os.path.join(work, "train.csv"), bucket=session.default_bucket(),
                               key_prefix="sdk-v3/train")
    role = IamRoleResolver().create_execution_role(role_type="training")

    trainer = ModelTrainer(training_image=IMAGE, source_code=SourceCode(source_dir=code, entry_script="train.py"),
                           role=role, sagemaker_session=session, hyperparameters={"C": 5.0}, base_job_name="sdk-v3",
                           compute=Compute(instance_type="ml.m5.large", instance_count=1))
    trainer.train(input_data_config=[InputData(channel_name="train", data_source=data)], wait=True, logs=False)
    job = trainer._latest_training_job
    job.refresh()
    results = {"role": role, "training_status": job.training_job_status,
               "entrypoint": job.algorithm_specification.container_entrypoint,
               "channels": sorted(c.channel_name for c in job.input_data_config)}

    builder = ModelBuilder(s3_model_data_url=job.model_artifacts.s3_model_artifacts, image_uri=IMAGE,
                           source_code=ServingCode(source_dir=code, entry_script="inference.py"), role_arn=role,
                           sagemaker_session=session, instance_type="ml.m5.large")
    results["model"] = builder.build().model_name
    endpoint = builder.deploy(endpoint_name="sdk-v3-endpoint", wait=False)
    endpoint.wait_for_status("InService", poll=1)
    try:
        answer = endpoint.invoke(body=json.dumps(features[:20].tolist()), content_type="application/json",
                                 accept="application/json")
        predicted = np.ravel(json.loads(answer.body.read()))
        results["endpoint_accuracy"] = float(np.mean(predicted == labels[:20]))
    finally:
        endpoint.delete()
    print("SDK-RESULTS " + json.dumps(results), flush=True)


if __name__ == "__main__":
    main()

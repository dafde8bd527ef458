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
CODE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "code")  # sklearn_entry.py: train and model_fn


def main():
    work = tempfile.mkdtemp()
    # The SDK names its default bucket from STS at an endpoint it sets itself: name one.
    session = Session(default_bucket=os.environ["SDK_TEST_BUCKET"])
    rng = np.random.default_rng(0)
    features = rng.normal(size=(200, 2))
    labels = (features.sum(axis=1) > 0).astype(float)
    np.savetxt(os.path.join(work, "train.csv"), np.column_stack([labels, features]), delimiter=",", fmt="%g")
    data = session.upload_data(
        os.path.join(work, "train.csv"), bucket=session.default_bucket(), key_prefix="sdk-v3/train"
    )
    role = IamRoleResolver().create_execution_role(role_type="training")

    trainer = ModelTrainer(
        training_image=IMAGE,
        source_code=SourceCode(source_dir=CODE, entry_script="sklearn_entry.py"),
        role=role,
        sagemaker_session=session,
        hyperparameters={"C": 5.0},
        base_job_name="sdk-v3",
        compute=Compute(instance_type="ml.m5.large", instance_count=1),
    )
    trainer.train(input_data_config=[InputData(channel_name="train", data_source=data)], wait=True, logs=False)
    job = trainer._latest_training_job
    job.refresh()
    results = {
        "role": role,
        "training_status": job.training_job_status,
        "entrypoint": job.algorithm_specification.container_entrypoint,
        "channels": sorted(c.channel_name for c in job.input_data_config),
    }

    builder = ModelBuilder(
        s3_model_data_url=job.model_artifacts.s3_model_artifacts,
        image_uri=IMAGE,
        source_code=ServingCode(source_dir=CODE, entry_script="sklearn_entry.py"),
        role_arn=role,
        sagemaker_session=session,
        instance_type="ml.m5.large",
    )
    results["model"] = builder.build().model_name
    endpoint = builder.deploy(endpoint_name="sdk-v3-endpoint", wait=False)
    endpoint.wait_for_status("InService", poll=1)
    try:
        answer = endpoint.invoke(
            body=json.dumps(features[:20].tolist()), content_type="application/json", accept="application/json"
        )
        predicted = np.ravel(json.loads(answer.body.read()))
        results["endpoint_accuracy"] = float(np.mean(predicted == labels[:20]))
    finally:
        endpoint.delete()
    print("SDK-RESULTS " + json.dumps(results), flush=True)


if __name__ == "__main__":
    main()

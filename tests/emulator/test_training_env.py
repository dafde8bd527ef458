"""The SageMaker training-toolkit contract, as the emulator builds it for each host."""

import json

from mlscale_emulator.executors import training_env
from mlscale_emulator.executors.training_env import HostLayout

RAW_HPS = {
    "epochs": "12",
    "lr": "0.003",
    "optimizer": '"adam"',
    "use-amp": "true",
    "b": "7",
    "note": "plain",
    "sagemaker_program": '"train.py"',
    "sagemaker_submit_directory": '"s3://b/code/sourcedir.tar.gz"',
    "sagemaker_torch_distributed_enabled": "true",
}


def test_hyperparameters_are_json_decoded_and_split():
    user, framework = training_env.decode_hyperparameters(RAW_HPS)
    assert user == {"epochs": 12, "lr": 0.003, "optimizer": "adam", "use-amp": True, "b": 7, "note": "plain"}
    assert framework["sagemaker_program"] == "train.py"
    assert training_env.distribution_of(framework) == "torch_distributed"


def test_command_line_arguments_follow_the_toolkit():
    user, _ = training_env.decode_hyperparameters(RAW_HPS)
    assert training_env.command_line_args(user) == [
        "-b",
        "7",
        "--epochs",
        "12",
        "--lr",
        "0.003",
        "--note",
        "plain",
        "--optimizer",
        "adam",
        "--use-amp",
        "True",
    ]


def environment(tmp_path, host="algo-2"):
    hosts = training_env.hosts_for(2)
    layout = HostLayout(tmp_path / host)
    data_config = training_env.input_data_config(
        [{"ChannelName": "train", "DataSource": {"S3DataSource": {"S3Uri": "s3://b/t/"}}}], "File"
    )
    resources = training_env.resource_config(host, hosts, "ml.c5.xlarge")
    layout.create(list(data_config))
    training_env.write_config_files(layout, RAW_HPS, resources, data_config)
    env = training_env.training_environment(
        layout=layout,
        job_name="job",
        job_arn="arn:job",
        region="us-east-1",
        raw_hyperparameters=RAW_HPS,
        resources=resources,
        data_config=data_config,
        request_environment={"EXTRA": "1"},
        num_gpus=0,
        num_cpus=4,
    )
    return layout, env


def test_sm_variables(tmp_path):
    layout, env = environment(tmp_path)
    assert env["SM_MODEL_DIR"] == str(layout.model_dir)
    assert env["SM_CHANNELS"] == '["train"]'
    assert env["SM_CHANNEL_TRAIN"] == str(layout.channel_dir("train"))
    assert env["SM_HOSTS"] == '["algo-1","algo-2"]' and env["SM_CURRENT_HOST"] == "algo-2"
    assert env["SM_HP_EPOCHS"] == "12" and env["SM_HP_OPTIMIZER"] == "adam" and env["SM_HP_USE-AMP"] == "true"
    assert json.loads(env["SM_HPS"])["lr"] == 0.003
    assert env["SM_NUM_GPUS"] == "0" and env["SM_NUM_CPUS"] == "4"
    assert env["SM_USER_ENTRY_POINT"] == "train.py" and env["SM_MODULE_NAME"] == "train"
    assert env["SM_MODULE_DIR"] == "s3://b/code/sourcedir.tar.gz"
    assert env["SM_OUTPUT_DATA_DIR"] == str(layout.output_data_dir)
    assert json.loads(env["SM_TRAINING_ENV"])["is_master"] is False
    assert env["TRAINING_JOB_NAME"] == "job" and env["SAGEMAKER_REGION"] == "us-east-1" and env["EXTRA"] == "1"


def test_config_files(tmp_path):
    layout, _ = environment(tmp_path)
    resources = json.loads((layout.config_dir / "resourceconfig.json").read_text())
    assert resources["current_host"] == "algo-2" and resources["hosts"] == ["algo-1", "algo-2"]
    assert resources["network_interface_name"] == "eth0"
    assert json.loads((layout.config_dir / "hyperparameters.json").read_text()) == RAW_HPS
    assert json.loads((layout.config_dir / "inputdataconfig.json").read_text()) == {
        "train": {"TrainingInputMode": "File", "S3DistributionType": "FullyReplicated", "RecordWrapperType": "None"}
    }


def test_torchrun_command_for_each_node():
    command = training_env.entry_command(
        program="train.py",
        args=["--epochs", "2"],
        distribution="torch_distributed",
        host_count=2,
        host_index=1,
        procs_per_host=1,
        master_port=7777,
        python="python",
    )
    assert command == [
        "python",
        "-m",
        "torch.distributed.run",
        "--nnodes",
        "2",
        "--nproc_per_node",
        "1",
        "--master_addr",
        "127.0.0.1",
        "--master_port",
        "7777",
        "--node_rank",
        "1",
        "train.py",
        "--epochs",
        "2",
    ]
    assert training_env.entry_command(
        program="run.sh",
        args=["-x", "1"],
        distribution=None,
        host_count=1,
        host_index=0,
        procs_per_host=1,
        master_port=1,
    ) == ["/bin/sh", "-c", "./run.sh -x 1"]

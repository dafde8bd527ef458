"""The progress line in the task log: epoch of total, the MetricDefinitions' latest values, elapsed time."""

from datetime import UTC, datetime, timedelta

from mlscale.waits.progress import ProgressReporter


def training() -> dict:
    return {
        "TrainingJobName": "train-1",
        "TrainingJobStatus": "InProgress",
        "SecondaryStatus": "Training",
        "TrainingStartTime": datetime.now(UTC) - timedelta(seconds=75),
        "HyperParameters": {"epochs": "4", "lr": "0.003"},
        "AlgorithmSpecification": {
            "MetricDefinitions": [
                {"Name": "train:loss", "Regex": r"train_loss=([0-9.]+)"},
                {"Name": "test:accuracy", "Regex": r"test_accuracy=([0-9.]+)"},
            ]
        },
    }


def reporter() -> ProgressReporter:
    return ProgressReporter("TrainingJobName", "TrainingJobStatus", every_seconds=3600)


def test_a_new_epoch_gives_one_line_with_the_latest_metrics_and_elapsed_time():
    progress = reporter()
    job = training()
    assert progress.update(job, ["[algo-1] host=algo-1 rank=0 world_size=2"]) == []
    lines = progress.update(
        job,
        [
            "[algo-1] epoch=1 train_loss=0.9000 test_loss=0.5 test_accuracy=0.8000",
            "[algo-2] epoch=1 train_loss=0.8000 test_loss=0.5 test_accuracy=0.8100",
        ],
    )
    assert lines == [
        "progress: train-1: Training, epoch 1/4 (25%), test:accuracy=0.8100 train:loss=0.8000, 1m15s elapsed"
    ]
    assert progress.update(job, ["[algo-1] epoch=1 data_wait_fraction=0.1"]) == []  # same epoch: quiet
    assert "epoch 3/4 (75%)" in progress.update(job, ["[algo-1] epoch=3 train_loss=0.1"])[0]


def test_quiet_jobs_still_report_every_interval():
    progress = ProgressReporter("ProcessingJobName", "ProcessingJobStatus", every_seconds=0)
    processing = {
        "ProcessingJobName": "shard-1",
        "ProcessingJobStatus": "InProgress",
        "ProcessingStartTime": datetime.now(UTC) - timedelta(hours=1, seconds=3),
    }
    assert progress.update(processing, []) == ["progress: shard-1: InProgress, 1h00m03s elapsed"]


def test_unparseable_values_and_epoch_totals_are_left_out():
    progress = reporter()
    job = {**training(), "HyperParameters": {}, "TrainingStartTime": None}
    assert progress.update(job, ["epoch 2 train_loss=nan?"]) == ["progress: train-1: Training, epoch 2"]


def test_a_backtracking_metric_regex_costs_no_time_on_a_hostile_line():
    """`(a+)+$` took Python's re 13 s on 29 characters; RE2 matches in time linear in the line."""
    import time

    job = training()
    job["AlgorithmSpecification"]["MetricDefinitions"].append({"Name": "evil", "Regex": r"(a+)+$"})
    job["AlgorithmSpecification"]["MetricDefinitions"].append({"Name": "lookahead", "Regex": r"(?=x)(y)"})
    started = time.perf_counter()
    progress = reporter()
    progress.update(job, ["a" * 5000 + "!", "epoch=1 train_loss=0.5"])
    assert time.perf_counter() - started < 0.5
    assert progress.metrics == {"train:loss": 0.5}  # a regex RE2 refuses reports nothing, and breaks nothing

"""Classification metrics over predictions (numpy only): what the quality gate compares."""

from __future__ import annotations

import numpy as np


def parse_predictions(text: str) -> np.ndarray:
    """Transform output lines: a class index, or a row of scores (CSV or a JSON list) -> the argmax."""
    import json

    predictions = []
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        values = json.loads(line) if line.startswith("[") else [float(v) for v in line.split(",")]
        values = np.asarray(values, dtype=float).reshape(-1)
        predictions.append(int(values[0]) if values.size == 1 else int(np.argmax(values)))
    return np.asarray(predictions)


def classification_metrics(labels: np.ndarray, predictions: np.ndarray) -> dict:
    if len(labels) != len(predictions):
        raise ValueError(f"{len(predictions)} predictions for {len(labels)} labels: the outputs do not line up")
    classes = np.union1d(np.unique(labels), np.unique(predictions)).astype(int)
    index = {c: i for i, c in enumerate(classes)}
    matrix = np.zeros((len(classes), len(classes)), dtype=int)
    for truth, guess in zip(labels, predictions):
        matrix[index[int(truth)], index[int(guess)]] += 1
    true_positive = np.diag(matrix).astype(float)
    precision = np.divide(
        true_positive, matrix.sum(axis=0), out=np.zeros_like(true_positive), where=matrix.sum(axis=0) > 0
    )
    recall = np.divide(
        true_positive, matrix.sum(axis=1), out=np.zeros_like(true_positive), where=matrix.sum(axis=1) > 0
    )
    f1 = np.divide(
        2 * precision * recall, precision + recall, out=np.zeros_like(true_positive), where=(precision + recall) > 0
    )
    return {
        "accuracy": float(true_positive.sum() / max(len(labels), 1)),
        "macro_f1": float(f1.mean()) if len(f1) else 0.0,
        "samples": int(len(labels)),
        "classes": classes.tolist(),
        "confusion_matrix": matrix.tolist(),
    }


def confusion_png(metrics: dict) -> bytes:
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    matrix = np.asarray(metrics["confusion_matrix"])
    figure, axis = plt.subplots(figsize=(5, 4.5))
    image = axis.imshow(matrix, cmap="Blues")
    figure.colorbar(image, ax=axis)
    ticks = range(len(metrics["classes"]))
    axis.set(
        xticks=ticks,
        yticks=ticks,
        xticklabels=metrics["classes"],
        yticklabels=metrics["classes"],
        xlabel="predicted",
        ylabel="true",
        title=f"Confusion matrix (accuracy {metrics['accuracy']:.3f})",
    )
    for (row, column), value in np.ndenumerate(matrix):
        if value:
            axis.text(
                column,
                row,
                str(value),
                ha="center",
                va="center",
                fontsize=7,
                color="white" if value > matrix.max() / 2 else "black",
            )
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100, bbox_inches="tight")
    plt.close(figure)
    return buffer.getvalue()

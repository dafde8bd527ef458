"""The scikit-learn script both SDK clients train and serve: a logistic regression on CSV rows with the
label first. Training runs it as a script; serving imports it for model_fn."""

import argparse
import os

import joblib
import numpy as np
from sklearn.linear_model import LogisticRegression


def model_fn(model_dir):
    return joblib.load(os.path.join(model_dir, "model.joblib"))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    # a one-letter hyperparameter arrives as -C from the v2 training toolkit, as --C from v3's driver
    parser.add_argument("-C", "--C", type=float, default=1.0)
    args = parser.parse_args()
    train = os.environ["SM_CHANNEL_TRAIN"]
    rows = np.vstack([np.loadtxt(os.path.join(train, f), delimiter=",", ndmin=2) for f in sorted(os.listdir(train))])
    model = LogisticRegression(C=args.C).fit(rows[:, 1:], rows[:, 0])
    print(f"train accuracy={model.score(rows[:, 1:], rows[:, 0]):.3f}")
    joblib.dump(model, os.path.join(os.environ["SM_MODEL_DIR"], "model.joblib"))

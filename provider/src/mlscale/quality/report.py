"""The data-quality report: PNG plots and one HTML page (matplotlib, imported only here)."""

from __future__ import annotations

import html
import io

import numpy as np

from mlscale.quality.profile import INTENSITY_BINS, Check, Profile


def _png(figure) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100, bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(figure)
    return buffer.getvalue()


def render_plots(profile: Profile, previous: Profile | None) -> dict[str, bytes]:
    """{file name: PNG bytes}: label balance, feature histogram and the average image, drift."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plots: dict[str, bytes] = {}
    classes = sorted(profile.label_counts, key=int)
    figure, axis = plt.subplots(figsize=(6, 3))
    axis.bar(classes, [profile.label_counts[c] for c in classes], color="#4c72b0")
    axis.set(title="Label balance", xlabel="label", ylabel="records")
    plots["label_balance.png"] = _png(figure)

    figure, (left, right) = plt.subplots(1, 2, figsize=(9, 3))
    centers = (INTENSITY_BINS[:-1] + INTENSITY_BINS[1:]) / 2
    left.bar(centers, profile.intensity_histogram, width=INTENSITY_BINS[1] - INTENSITY_BINS[0], color="#55a868")
    left.set(title="Mean ink per image", xlabel="mean pixel value", ylabel="records")
    if profile.pixel_means:
        image = right.imshow(np.asarray(profile.pixel_means), cmap="viridis")
        figure.colorbar(image, ax=right)
    right.set(title="Average image (per-pixel mean)")
    plots["features.png"] = _png(figure)

    if previous is not None:
        figure, (left, right) = plt.subplots(1, 2, figsize=(9, 3))
        all_classes = sorted(set(classes) | set(previous.label_counts), key=int)
        x = np.arange(len(all_classes))
        total_now, total_before = sum(profile.label_counts.values()), sum(previous.label_counts.values())
        left.bar(x - 0.2, [previous.label_counts.get(c, 0) / total_before for c in all_classes], 0.4, label="previous")
        left.bar(x + 0.2, [profile.label_counts.get(c, 0) / total_now for c in all_classes], 0.4, label="this run")
        left.set(title="Label share: drift", xticks=x, xticklabels=all_classes)
        left.legend()
        right.plot(
            centers,
            np.asarray(previous.intensity_histogram) / max(sum(previous.intensity_histogram), 1),
            label="previous",
        )
        right.plot(
            centers,
            np.asarray(profile.intensity_histogram) / max(sum(profile.intensity_histogram), 1),
            label="this run",
        )
        right.set(title="Mean ink: drift", xlabel="mean pixel value")
        right.legend()
        plots["drift.png"] = _png(figure)
    return plots


def render_html(title: str, profile: Profile, checks: list[Check], plots: dict[str, bytes]) -> str:
    rows = "".join(
        f"<tr class={'ok' if c.passed else 'bad'}><td>{html.escape(c.name)}</td><td>{c.value:.4g}</td>"
        f"<td>{c.rule} {c.threshold:.4g}</td><td>{'pass' if c.passed else 'FAIL'}</td></tr>"
        for c in checks
    )
    verdict = "PASSED" if all(c.passed for c in checks) else "FAILED"
    images = "".join(
        f'<figure><img src="{name}" alt="{name}"><figcaption>{name}</figcaption></figure>' for name in plots
    )
    summary = html.escape(str({k: round(v, 4) for k, v in profile.intensity.items()}))
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>body{{font-family:sans-serif;margin:2em}} .ok td:last-child{{color:#2a7}}
.bad td:last-child{{color:#c22;font-weight:bold}}
td,th{{padding:.2em .8em;border-bottom:1px solid #ddd}} figure{{display:inline-block;margin:1em}}</style></head>
<body><h1>{html.escape(title)}: {verdict}</h1><p>{profile.rows} rows; mean ink {summary}</p>
<table><tr><th>check</th><th>value</th><th>rule</th><th>result</th></tr>{rows}</table>{images}</body></html>"""

"""The quality gate: an absolute threshold and "not worse than the champion"."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass
class GateDecision:
    status: str  # Approved | Rejected | PendingManualApproval (the ModelApprovalStatus to register)
    passed: bool
    reasons: list[str]

    def to_dict(self) -> dict:
        return asdict(self)


def decide(
    metric: str, value: float, minimum: float, champion: float | None, tolerance: float, manual_approval: bool = False
) -> GateDecision:
    reasons, passed = [], True
    if value < minimum:
        passed = False
        reasons.append(f"{metric} {value:.4f} is below the threshold {minimum:.4f}")
    else:
        reasons.append(f"{metric} {value:.4f} meets the threshold {minimum:.4f}")
    if champion is None:
        reasons.append("no approved champion yet")
    elif value < champion - tolerance:
        passed = False
        reasons.append(f"{metric} {value:.4f} is worse than the champion's {champion:.4f} by more than {tolerance:.4f}")
    else:
        reasons.append(
            f"{metric} {value:.4f} is not worse than the champion's {champion:.4f} (tolerance {tolerance:.4f})"
        )
    status = "Rejected" if not passed else ("PendingManualApproval" if manual_approval else "Approved")
    return GateDecision(status, passed, reasons)

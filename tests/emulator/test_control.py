"""`mlscale emulator` control against a server that is running but busy: wait for it, never act around it."""

from __future__ import annotations

import pytest

from mlscale_emulator import control
from mlscale_emulator.settings import EmulatorSettings


@pytest.fixture
def busy_server(tmp_path, monkeypatch):
    """A running server (its pid alive) that answers only from the third readiness probe on."""
    (tmp_path / "state.pickle").write_bytes(b"saved")
    probes = []
    monkeypatch.setattr(control, "running_pid", lambda config: 4242)
    monkeypatch.setattr(control, "is_ready", lambda config, timeout=2.0: probes.append(1) or len(probes) >= 3)
    return EmulatorSettings(host="127.0.0.1", port=1, home=tmp_path), probes


def test_reset_waits_for_a_busy_server_and_resets_through_it(busy_server, monkeypatch):
    config, probes = busy_server
    posted = []

    class Answer:
        def __enter__(self):
            return self

        def __exit__(self, *_):
            return False

    monkeypatch.setattr(
        control.urllib.request, "urlopen", lambda request, timeout: posted.append(request.full_url) or Answer()
    )
    assert control.reset(config) is True
    assert posted == ["http://127.0.0.1:1/moto-api/reset"] and len(probes) == 3
    assert (config.home / "state.pickle").exists()  # the server wipes what it holds; its files are its own


def test_reset_refuses_a_server_that_never_answers_and_keeps_its_files(busy_server, monkeypatch):
    config, _ = busy_server
    monkeypatch.setattr(control, "is_ready", lambda config, timeout=2.0: False)
    monkeypatch.setattr(control, "BUSY_SERVER_SECONDS", 0.3)
    with pytest.raises(RuntimeError, match=r"the emulator \(pid 4242\) does not answer"):
        control.reset(config)
    assert (config.home / "state.pickle").read_bytes() == b"saved"


def test_up_waits_for_a_busy_server_instead_of_starting_a_second(busy_server, monkeypatch):
    config, probes = busy_server
    monkeypatch.setattr(control.subprocess, "Popen", lambda *a, **k: pytest.fail("started a second server"))
    assert control.up(config) == 4242 and control.ensure_up(config) is False

"""The emulator server: moto's server on loopback with mlscale's services patched in."""

from __future__ import annotations

import dataclasses
import logging
import signal
import sys
import threading

from mlscale_emulator import guard, limits, sessions, state, warm_up
from mlscale_emulator import settings as emulator_settings
from mlscale_emulator.executors import processes
from mlscale_emulator.settings import EmulatorSettings

log = logging.getLogger(__name__)


def install_services() -> None:
    """Patch moto's backends where mlscale does the work moto only records. Batch and CloudFormation are
    patched when moto first loads them (mlscale_emulator.after_import): they bring ~230 MB of moto with them."""
    from mlscale_emulator import after_import, aws_answers, console, dispatch, faults, iam
    from mlscale_emulator.athena import queries
    from mlscale_emulator.emr_serverless import runs as emr_serverless
    from mlscale_emulator.fsx import service as fsx
    from mlscale_emulator.glue import jobs as glue_jobs
    from mlscale_emulator.greengrass import service as greengrass
    from mlscale_emulator.sagemaker import (
        absent_fields,
        compilation,
        endpoints,
        listing,
        processing,
        training,
        transform,
        validation,
    )

    dispatch.install()
    aws_answers.install()
    iam.install()
    validation.install()
    after_import.when_imported("moto.batch.models", _install_batch)
    after_import.when_imported("moto.cloudformation.models", _install_cloudformation)
    after_import.when_imported("moto.ssm.models", _install_ssm)
    compilation.install()
    endpoints.install()
    absent_fields.install()
    training.install()
    processing.install()
    transform.install()
    listing.install()
    queries.install()
    fsx.install()
    glue_jobs.install()
    emr_serverless.install()
    greengrass.install()
    console.install()
    faults.install()


def _install_batch() -> None:
    from mlscale_emulator.batch import service

    service.install()


def _install_cloudformation() -> None:
    from mlscale_emulator import cloudformation

    cloudformation.install()


def _install_ssm() -> None:
    from mlscale_emulator import ssm

    ssm.install()


def _loaded_batch():
    """The emulator's Batch, where moto's Batch has been loaded (no job can have run otherwise)."""
    return sys.modules.get("mlscale_emulator.batch.service")


def shutdown_services() -> None:
    """Stop every kind of running work: jobs, queries' processes, endpoints' model servers."""
    from mlscale_emulator.emr_serverless import runs as emr_serverless
    from mlscale_emulator.glue import jobs as glue_jobs
    from mlscale_emulator.sagemaker import endpoints, processing, training, transform

    for module in (_loaded_batch(), endpoints, transform, training, processing, glue_jobs, emr_serverless):
        if module is not None:
            module.stop_all()


def recover_services() -> None:
    """After a restore: what ran when the emulator stopped ends Failed; endpoints serve again."""
    from mlscale_emulator.athena import queries
    from mlscale_emulator.emr_serverless import runs as emr_serverless
    from mlscale_emulator.fsx import service as fsx
    from mlscale_emulator.glue import jobs as glue_jobs
    from mlscale_emulator.greengrass import service as greengrass
    from mlscale_emulator.sagemaker import compilation, endpoints, processing, training, transform

    for module in (
        training,
        processing,
        transform,
        compilation,
        queries,
        glue_jobs,
        emr_serverless,
        fsx,
        greengrass,
        _loaded_batch(),
        endpoints,
    ):
        if module is not None:
            module.recover()


def _install_reset(home) -> None:
    """moto's `POST /moto-api/reset` (`mlscale emulator reset`) also stops the running work and wipes the files."""
    from moto.moto_api._internal.models import moto_api_backend

    moto_reset = type(moto_api_backend).reset

    def reset(backend) -> None:
        shutdown_services()
        moto_reset(backend)
        state.forget(home)
        log.info("emulator reset: every resource, object and job file is gone")

    type(moto_api_backend).reset = reset


def _guarded_moto_server(config: EmulatorSettings):
    """moto's threaded server with no CORS of its own, behind AWS's request-rate limits (mlscale_emulator.limits)
    and the emulator's Guard (mlscale_emulator.guard)."""
    from moto.moto_server import werkzeug_app
    from moto.moto_server.threaded_moto_server import ThreadedMotoServer
    from werkzeug.serving import make_server

    werkzeug_app.DISABLE_GLOBAL_CORS = True  # moto's flask-cors answered every Origin

    class GuardedMotoServer(ThreadedMotoServer):
        def _server_entry(self) -> None:
            # the port is known only once bound (0 asks for any free one): the Guard learns it then
            moto = werkzeug_app.DomainDispatcherApplication(werkzeug_app.create_backend_app)
            throttled = limits.Throttle(moto, limits.configured(), guard.error_response)
            app = guard.Guard(
                throttled, port=config.port, hosts=(config.host, *config.allowed_hosts), origins=config.allowed_origins
            )
            self._server = make_server(
                self._ip_address, self._port, app, True, request_handler=werkzeug_app.MotoRequestHandler
            )
            app.port = self._server.server_address[1]
            self._server_ready_event.set()
            self._server.serve_forever()

    return GuardedMotoServer(ip_address=config.host, port=config.port, verbose=False)


class EmulatorServer:
    """Runs in-process (tests) or as `mlscale emulator serve` (the CLI's background process)."""

    def __init__(self, config: EmulatorSettings):
        self.settings = config
        self._moto = _guarded_moto_server(config)

    @property
    def endpoint_url(self) -> str:
        return self.settings.endpoint_url

    def start(self) -> EmulatorServer:
        self.settings.home.mkdir(parents=True, exist_ok=True)
        emulator_settings.activate(self.settings)
        processes.shutting_down.clear()
        left = sessions.end_leftovers(self.settings.home / "sessions")
        if left:  # the last server was killed before it could stop its jobs and model servers
            log.warning("ended %d processes a killed emulator left running: %s", len(left), left)
        install_services()
        _install_reset(self.settings.home)
        restored = state.restore(self.settings.home)
        self._moto.start()
        host, port = self._moto.get_host_and_port()
        if port != self.settings.port:  # port 0 asked for any free port
            self.settings = dataclasses.replace(self.settings, port=port)
            emulator_settings.activate(self.settings)
        if restored:
            recover_services()
        warm_up.start()
        log.info("mlscale emulator listening on %s%s", self.endpoint_url, " (state restored)" if restored else "")
        return self

    def stop(self) -> None:
        """Stop answering, save the state, then stop the running work quickly (it cannot resume anyway)."""
        self._moto.stop()
        try:
            state.save(self.settings.home)
        except Exception:  # noqa: BLE001 - the running work must still be stopped
            log.exception("the emulator's state could not be saved; the last saved state stays")
        processes.shutting_down.set()
        shutdown_services()

    def serve_forever(self) -> None:
        done = threading.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: done.set())
        self.start()
        print(f"mlscale emulator ready on {self.endpoint_url}", flush=True)
        done.wait()
        self.stop()
        print("mlscale emulator stopped", flush=True)

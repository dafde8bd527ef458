"""An ASGI app that imports the run view on its first request.

Airflow imports plugins in every process (scheduler, workers, triggerer);
only the API server serves the view, so FastAPI is imported only there, when
the first request arrives.
"""

from __future__ import annotations


class LazyRunView:
    def __init__(self) -> None:
        self._app = None

    async def __call__(self, scope, receive, send) -> None:
        if self._app is None:
            from mlscale.ui.app import app

            self._app = app
        await self._app(scope, receive, send)

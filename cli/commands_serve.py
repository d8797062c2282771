"""`enginelib serve`: one process with a warm model, the worker, the API and the two pages."""

from __future__ import annotations

import os
from pathlib import Path

import click

from .commands_jobs import store_argument
from .options import handle_errors, open_store


@click.command("serve")
@store_argument
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to bind; anything but this machine requires a token.")
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True)
@click.option("--token", default=None, envvar="ENGINELIB_TOKEN",
              help="Secret every request must carry (or $ENGINELIB_TOKEN).")
@click.option("--max-upload-mb", type=click.FloatRange(min=0.001), default=20.0,
              show_default=True, help="Largest file the upload accepts.")
@click.option("--max-attempts", type=click.IntRange(min=1), default=5, show_default=True,
              help="Attempts before a job goes to the DLQ.")
@click.option("--poll", "poll_s", type=click.FloatRange(min=0.01), default=0.5, hidden=True)
@click.option("--time-unit", type=click.FloatRange(min=1e-6), default=1.0, hidden=True)
@handle_errors
def serve(store_path: Path, host: str, port: int, token: str | None, max_upload_mb: float,
          max_attempts: int, poll_s: float, time_unit: float) -> None:
    """Serve the store: JSON API under /api/, ingestion console at /, inspector at /inspect."""
    import uvicorn

    from enginelib.web import Service, create_app
    from enginelib.web.security import require_token_for

    require_token_for(host, token)
    store = open_store(store_path, create=True)
    service = Service(store, max_attempts=max_attempts, poll_s=poll_s, time_unit=time_unit,
                      max_upload_bytes=int(max_upload_mb * 1024 * 1024))
    app = create_app(service, token=token)
    click.echo(f"enginelib serving {store_path} at http://{host}:{port}/ (pid {os.getpid()})")
    uvicorn.run(app, host=host, port=port, log_level="warning")

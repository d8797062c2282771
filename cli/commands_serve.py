"""`enginelib serve`: one process with a warm model, the worker, the API and the two pages."""

from __future__ import annotations

import errno
import os
import socket
from pathlib import Path

import click

from enginelib.core.lock import clear_holder, note_holder
from enginelib.jobs.queue import MAX_ATTEMPTS, MAX_POLL_S, Retention

from .commands_jobs import retention_options, store_argument
from .options import CommandError, FiniteRange, Integer, handle_errors, not_blank, open_store


@click.command("serve")
@store_argument
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to bind; anything but this machine requires a token.")
@click.option("--port", type=Integer(0, 65535), default=8765, show_default=True)
@click.option("--token", default=None, envvar="ENGINELIB_TOKEN",
              callback=not_blank("give the secret, or leave the option out to serve this "
                                 "machine alone without one"),
              help="Secret every request must carry (or $ENGINELIB_TOKEN).")
@click.option("--allow-host", "allow_hosts", multiple=True, metavar="NAME",
              help="A name besides this machine's that clients use (a reverse proxy's); "
                   "repeat for more.")
@click.option("--max-upload-mb", type=FiniteRange(0.001, 1024 * 1024), default=20.0,
              show_default=True, help="Largest file the upload accepts.")
@click.option("--max-attempts", type=Integer(1, MAX_ATTEMPTS), default=5, show_default=True,
              help="Attempts before the DLQ for the jobs it queues (uploads, and `ingest "
                   "--queue` without --max-attempts); a job keeps the number it was queued with.")
@click.option("--max-waiting-uploads", type=Integer(1, 2**31 - 1), default=1000,
              show_default=True, help="Uploads waiting for the worker before more are refused "
              "(429) until it catches up.")
@click.option("--max-waiting-upload-mb", type=FiniteRange(0.001, 1024 * 1024), default=1024.0,
              show_default=True, help="Bytes of the uploads waiting for the worker, in MiB, "
              "before more are refused (429).")
@click.option("--poll", "poll_s", type=FiniteRange(0.01, MAX_POLL_S), default=0.5, hidden=True)
@click.option("--time-unit", type=FiniteRange(1e-6, 1e3), default=1.0, hidden=True)
@retention_options
@handle_errors
def serve(store_path: Path, host: str, port: int, token: str | None, allow_hosts: tuple[str, ...],
          max_upload_mb: float, max_attempts: int, max_waiting_uploads: int,
          max_waiting_upload_mb: float, poll_s: float, time_unit: float, keep_days: float,
          keep_rows: int) -> None:
    """Serve the store: JSON API under /api/, ingestion console at /, inspector at /inspect."""
    import uvicorn

    from enginelib.web import Service, create_app
    from enginelib.web.app import server_config
    from enginelib.web.origin_guard import binds_loopback, check_allowed_host
    from enginelib.web.security import check_token, require_token_for

    if token is not None:
        check_token(token)
    require_token_for(host, token)
    for name in allow_hosts:
        check_allowed_host(name)
    # On this machine's address the Host header is checked: a page whose name was made to
    # resolve here must not read the store. Bound wider, a token guards it and clients may
    # use any name for the machine.
    loopback = binds_loopback(host)
    # Bound before anything else, so a port in use is one clear error (not a "serving" line
    # followed by uvicorn's), and --port 0 prints the port the system chose.
    sock = bind_socket(host, port)
    try:
        new = not store_path.exists() or not any(store_path.iterdir())
        store = open_store(store_path, create=True)
    except BaseException:
        sock.close()
        raise
    if new:
        click.echo(f"no store at {store_path}: created an empty one (upload files at / or run "
                   "`enginelib ingest`)", err=True)
    service = Service(store, max_attempts=max_attempts, poll_s=poll_s, time_unit=time_unit,
                      max_upload_bytes=int(max_upload_mb * 1024 * 1024),
                      retention=Retention(keep_days, keep_rows),
                      max_waiting_uploads=max_waiting_uploads,
                      max_waiting_upload_bytes=int(max_waiting_upload_mb * 1024 * 1024))
    app = create_app(service, token=token, on_stop=lambda: clear_holder(store.path),
                     check_host=loopback, allow_hosts=allow_hosts)
    shown_host = f"[{host}]" if ":" in host else host
    url = f"http://{shown_host}:{sock.getsockname()[1]}/"
    click.echo(f"enginelib serving {store_path} at {url} (pid {os.getpid()})")
    # serve holds the writer lock for its life: a CLI ingest meanwhile is told what to do
    note_holder(store.path, f"`enginelib serve` at {url}",
                f"upload at {url}, or `enginelib ingest --queue` (its worker takes the files)")
    try:
        uvicorn.Server(server_config(app)).run(sockets=[sock])
    finally:
        clear_holder(store.path)


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port``, or a CommandError that says what to do."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    except socket.gaierror as exc:
        raise CommandError(f"cannot bind {host!r}: {exc.strerror}: give an address of this "
                           "machine, e.g. 127.0.0.1") from exc
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise CommandError(f"port {port} on {host} is in use (another `enginelib serve`?): "
                               "stop it, or choose another with --port (0: any free port)") from exc
        raise CommandError(f"cannot listen on {host}:{port}: {exc.strerror}") from exc
    sock.set_inheritable(True)
    return sock

"""`enginelib serve`: the JSON API, the ingestion console and the evidence inspector."""

from .app import create_app
from .service import Service

__all__ = ["Service", "create_app"]

"""The PostgreSQL fixtures of the store tests, for the server's tests of several workers."""

from tests.stores.conftest import postgres_dsn, postgres_schema

__all__ = ["postgres_dsn", "postgres_schema"]

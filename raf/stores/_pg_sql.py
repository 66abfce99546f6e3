"""The SQL of the PostgreSQL store, composed once per schema (`queries`)."""

from __future__ import annotations

from functools import lru_cache

from psycopg import sql


class Queries:
    """Every statement the PostgreSQL store runs, with table names qualified by `schema`."""

    def __init__(self, schema: str | None) -> None:
        def table(name: str) -> sql.Identifier:
            return sql.Identifier(schema, name) if schema else sql.Identifier(name)

        checkpoints, events, objects, meta = (
            table(name) for name in ("checkpoints", "events", "objects", "meta")
        )
        event_columns = sql.SQL("id, occurred_at, kind, key, hash, meta::text, code_rev")

        self.schema_lock = sql.SQL("SELECT pg_advisory_xact_lock(hashtext({}))").format(
            sql.Literal(f"raf.stores:{schema or ''}")
        )
        create: list[sql.Composed] = []
        if schema:
            create.append(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(schema)))
        create += [
            sql.SQL(
                "CREATE TABLE IF NOT EXISTS {} (key TEXT PRIMARY KEY, value TEXT NOT NULL)"
            ).format(meta),
            # Ids compare byte-wise (COLLATE "C"), as in the SQLite and memory stores.
            # `json` keeps the text as written: key order and `\u0000` survive, unlike `jsonb`.
            sql.SQL(
                """CREATE TABLE IF NOT EXISTS {} (
                    id TEXT COLLATE "C" PRIMARY KEY,
                    session_id TEXT NOT NULL,
                    workflow_id TEXT NOT NULL,
                    superstep BIGINT NOT NULL,
                    created_at TIMESTAMPTZ NOT NULL,
                    version INTEGER NOT NULL,
                    data JSON NOT NULL
                )"""
            ).format(checkpoints),
            sql.SQL("CREATE INDEX IF NOT EXISTS checkpoints_session ON {} (session_id, id)").format(
                checkpoints
            ),
            sql.SQL(
                """CREATE TABLE IF NOT EXISTS {} (
                    id TEXT COLLATE "C" PRIMARY KEY,
                    occurred_at TIMESTAMPTZ NOT NULL,
                    kind TEXT NOT NULL,
                    key TEXT NOT NULL,
                    hash TEXT,
                    meta JSON NOT NULL,
                    code_rev TEXT
                )"""
            ).format(events),
            sql.SQL("CREATE INDEX IF NOT EXISTS events_key ON {} (key, id)").format(events),
            # Write order: appends take `append_lock` first, so `seq` grows in commit order.
            sql.SQL("ALTER TABLE {} ADD COLUMN IF NOT EXISTS seq BIGSERIAL").format(events),
            sql.SQL("CREATE INDEX IF NOT EXISTS events_seq ON {} (seq)").format(events),
            sql.SQL(
                "CREATE TABLE IF NOT EXISTS {} (hash TEXT PRIMARY KEY, content BYTEA NOT NULL)"
            ).format(objects),
        ]
        self.create: tuple[sql.Composed, ...] = tuple(create)
        self.schema_version = sql.SQL("SELECT value FROM {} WHERE key = 'schema_version'").format(
            meta
        )
        self.set_schema_version = sql.SQL(
            "INSERT INTO {} (key, value) VALUES ('schema_version', %s)"
            " ON CONFLICT (key) DO UPDATE SET value = excluded.value"
        ).format(meta)
        self.all_checkpoint_ids = sql.SQL("SELECT id FROM {}").format(checkpoints)
        self.set_data = sql.SQL("UPDATE {} SET data = %s::json WHERE id = %s").format(checkpoints)

        self.save = sql.SQL(
            "INSERT INTO {} (id, session_id, workflow_id, superstep, created_at, version, data)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s::json)"
            " ON CONFLICT (id) DO UPDATE SET session_id = excluded.session_id,"
            " workflow_id = excluded.workflow_id, superstep = excluded.superstep,"
            " created_at = excluded.created_at, version = excluded.version, data = excluded.data"
        ).format(checkpoints)
        self.load = sql.SQL(
            "SELECT id, session_id, workflow_id, superstep, created_at, version, data::text"
            " FROM {} WHERE id = %s"
        ).format(checkpoints)
        self.latest = sql.SQL(
            "SELECT id FROM {} WHERE session_id = %s ORDER BY id DESC LIMIT 1"
        ).format(checkpoints)
        self.list = sql.SQL("SELECT id FROM {} WHERE session_id = %s ORDER BY id").format(
            checkpoints
        )

        self.append = sql.SQL(
            "INSERT INTO {} (id, occurred_at, kind, key, hash, meta, code_rev)"
            " VALUES (%s, %s, %s, %s, %s, %s::json, %s) ON CONFLICT (id) DO NOTHING"
        ).format(events)
        self.append_lock = sql.SQL("SELECT pg_advisory_xact_lock(hashtextextended({}, 0))").format(
            sql.Literal(f"raf.events:{schema or ''}")
        )
        self.last_of_key = sql.SQL(
            "SELECT id FROM {} WHERE key = %s ORDER BY id DESC LIMIT 1"
        ).format(events)
        self.changes = sql.SQL(
            "SELECT seq, id, kind, key FROM {} WHERE seq > %s ORDER BY seq LIMIT %s"
        ).format(events)
        self.all_events = sql.SQL("SELECT {} FROM {} ORDER BY id").format(event_columns, events)
        self.events_of_key = sql.SQL("SELECT {} FROM {} WHERE key = %s ORDER BY id").format(
            event_columns, events
        )

        self.put = sql.SQL(
            "INSERT INTO {} (hash, content) VALUES (%s, %s) ON CONFLICT (hash) DO NOTHING"
        ).format(objects)
        self.get = sql.SQL("SELECT content FROM {} WHERE hash = %s").format(objects)
        self.get_many = sql.SQL("SELECT hash, content FROM {} WHERE hash = ANY(%s)").format(objects)


@lru_cache(maxsize=32)
def queries(schema: str | None) -> Queries:
    """The statements for `schema`, shared by the stores on it (composing them takes a few
    milliseconds, as long as opening a store on a warm connection)."""
    return Queries(schema)

"""The schema: numbered migrations, applied in order, each in its own transaction, and
recorded in ``schema_migrations`` (`replay.store.db.migrate`). Never edit a released one:
add the next number."""

from __future__ import annotations

MIGRATIONS: list[tuple[int, str, str]] = [
    (
        1,
        "dataset tables",
        """
        CREATE TABLE datasets (
            name VARCHAR PRIMARY KEY,
            created_at TIMESTAMP NOT NULL,
            key_fingerprint VARCHAR NOT NULL,
            token_counter VARCHAR NOT NULL,
            description VARCHAR
        );
        CREATE TABLE source_files (
            dataset VARCHAR NOT NULL,
            file_key VARCHAR NOT NULL,
            version INTEGER NOT NULL,
            content_hash VARCHAR NOT NULL,
            size_bytes BIGINT NOT NULL,
            n_subagent_files INTEGER NOT NULL,
            reader VARCHAR NOT NULL,
            status VARCHAR NOT NULL,
            ingested_at TIMESTAMP NOT NULL,
            skipped JSON,
            PRIMARY KEY (dataset, file_key, version)
        );
        CREATE TABLE sessions (
            session_key VARCHAR PRIMARY KEY,
            dataset VARCHAR NOT NULL,
            file_key VARCHAR NOT NULL,
            agent VARCHAR NOT NULL,
            session_id VARCHAR,
            agent_version VARCHAR,
            started_at BIGINT,
            ended_at BIGINT,
            n_streams INTEGER,
            n_requests INTEGER,
            n_blocks INTEGER,
            n_compactions INTEGER,
            models VARCHAR,
            resumed_records INTEGER
        );
        CREATE TABLE streams (
            session_key VARCHAR NOT NULL,
            stream_id INTEGER NOT NULL,
            kind VARCHAR NOT NULL,
            agent_id VARCHAR,
            n_requests INTEGER,
            n_blocks INTEGER
        );
        CREATE TABLE requests (
            session_key VARCHAR NOT NULL,
            stream_id INTEGER NOT NULL,
            req_idx INTEGER NOT NULL,
            position INTEGER NOT NULL,
            partition INTEGER NOT NULL,
            user_turn INTEGER NOT NULL,
            ts BIGINT,
            model VARCHAR,
            msg_key VARCHAR,
            input_tokens BIGINT,
            cache_write_5m BIGINT,
            cache_write_1h BIGINT,
            cache_read BIGINT,
            output_tokens BIGINT,
            has_usage BOOLEAN,
            ttl_split_known BOOLEAN,
            resumed_copy BOOLEAN
        );
        CREATE TABLE blocks (
            session_key VARCHAR NOT NULL,
            stream_id INTEGER NOT NULL,
            pos INTEGER NOT NULL,
            partition INTEGER NOT NULL,
            user_turn INTEGER NOT NULL,
            req_idx INTEGER,
            ts BIGINT,
            role VARCHAR NOT NULL,
            kind VARCHAR NOT NULL,
            tool_name VARCHAR,
            tool_kind VARCHAR,
            tool_use_key VARCHAR,
            content_hash VARCHAR NOT NULL,
            bytes BIGINT NOT NULL,
            tokens INTEGER NOT NULL,
            resource VARCHAR,
            line_start INTEGER,
            line_end INTEGER,
            args_hash VARCHAR,
            is_error BOOLEAN
        );
        CREATE TABLE compactions (
            session_key VARCHAR NOT NULL,
            stream_id INTEGER NOT NULL,
            pos INTEGER NOT NULL,
            partition INTEGER NOT NULL,
            ts BIGINT,
            trigger VARCHAR,
            pre_tokens BIGINT
        );
        """,
    ),
    (
        2,
        "run tables",
        """
        CREATE TABLE runs (
            run_id VARCHAR PRIMARY KEY,
            sweep_id VARCHAR,
            policy VARCHAR NOT NULL,
            params JSON NOT NULL,
            cache_config JSON NOT NULL,
            prices JSON NOT NULL,
            dataset VARCHAR NOT NULL,
            git_sha VARCHAR,
            ctxreplay_version VARCHAR,
            started_at TIMESTAMP NOT NULL,
            finished_at TIMESTAMP,
            status VARCHAR NOT NULL,
            pid INTEGER,
            n_sessions INTEGER,
            error VARCHAR
        );
        CREATE TABLE run_sessions (
            run_id VARCHAR NOT NULL,
            session_key VARCHAR NOT NULL,
            requests DOUBLE, input_total DOUBLE, uncached DOUBLE, cache_read DOUBLE,
            cache_write_5m DOUBLE, cache_write_1h DOUBLE, output DOUBLE, cost DOUBLE,
            busts DOUBLE, bust_tokens DOUBLE, tokens_delivered DOUBLE, context_tokens DOUBLE,
            hints DOUBLE, dangling_refs DOUBLE, hint_distance DOUBLE, trimmed_reread DOUBLE,
            stale_refs DOUBLE, blocks_changed DOUBLE, tokens_saved DOUBLE
        );
        CREATE TABLE run_requests (
            run_id VARCHAR NOT NULL,
            session_key VARCHAR NOT NULL,
            stream_id INTEGER NOT NULL,
            req_idx INTEGER NOT NULL,
            input_total DOUBLE, uncached DOUBLE, cache_read DOUBLE, cache_write_5m DOUBLE,
            cache_write_1h DOUBLE, output DOUBLE, cost DOUBLE, bust_tokens DOUBLE
        );
        """,
    ),
    (
        3,
        "per-step and policy-specific figures",
        """
        ALTER TABLE run_sessions ADD COLUMN extra JSON;
        """,
    ),
    (
        4,
        "copies of one session stored once",
        """
        ALTER TABLE source_files ADD COLUMN duplicate_of VARCHAR;
        """,
    ),
    (
        5,
        "fast-mode requests",
        """
        ALTER TABLE requests ADD COLUMN speed VARCHAR;
        """,
    ),
    (
        6,
        "the project of each session (keyed pseudonym of its first working directory)",
        """
        ALTER TABLE sessions ADD COLUMN project VARCHAR;
        """,
    ),
    (
        7,
        "the client version of each request and the client events the log records before it",
        """
        ALTER TABLE requests ADD COLUMN client_version VARCHAR;
        ALTER TABLE requests ADD COLUMN client_event VARCHAR;
        """,
    ),
    (
        8,
        "keyed hashes of the numbered lines of read results, and client previews",
        """
        CREATE TABLE read_lines (
            session_key VARCHAR NOT NULL,
            stream_id INTEGER NOT NULL,
            pos INTEGER NOT NULL,
            first_line INTEGER,
            line_hashes BIGINT[] NOT NULL,
            preview BOOLEAN NOT NULL
        );
        """,
    ),
    (
        9,
        "a keyed signature of each source file's stat, so that an unchanged file is not read again",
        """
        ALTER TABLE source_files ADD COLUMN stat_sig VARCHAR;
        """,
    ),
    (
        10,
        "the provider's stated reason for a cache miss and the tokens it says were missed",
        """
        ALTER TABLE requests ADD COLUMN miss_reason VARCHAR;
        ALTER TABLE requests ADD COLUMN miss_tokens BIGINT;
        """,
    ),
    (
        11,
        "the time of the line whose usage a response counts (a day's usage follows it, as ccusage's does)",
        """
        ALTER TABLE requests ADD COLUMN usage_ts BIGINT;
        """,
    ),
]

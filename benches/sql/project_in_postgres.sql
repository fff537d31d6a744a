-- What a `$project` computed inside PostgreSQL would cost: an exact projection of the stored
-- BSON (`doc` bytea) of docgate's collection table, keeping `_id` and the named top-level
-- fields in document order, walked in PL/pgSQL (PostgreSQL has no BSON functions, and the
-- `jsonb` image keeps neither field order nor BSON types). It is timed against reading the
-- documents whole, for the rows of the aggregate bench's `$project` case.
--
-- Run against a database docgate has loaded (e.g. by `cargo bench --bench aggregate` with
-- DOCGATE_BENCH_PG_URL, or 100,000 `common::sample_doc` documents in `bench.people`):
--   psql "$URL" -v tbl='bench."people$1"' -f benches/sql/project_in_postgres.sql
-- (the table is `schema_name.table_name` of `docgate.collections` for `bench.people`).
--
-- Measured 2026-12-05 on 10,008 matching documents of 100,000, three runs: 27–42 ms read
-- whole, 110–151 ms projected (8–11 µs a document more), where docgate projects the stored
-- bytes in Rust in about 0.5 µs a document (a `find` of 40,014 documents: 30–50 ms of CPU
-- with a projection, 20–30 ms without). Not for production use: this file only measures.

CREATE OR REPLACE FUNCTION pg_temp.bson_project(doc bytea, keep text[]) RETURNS bytea
LANGUAGE plpgsql IMMUTABLE STRICT AS $$
DECLARE
  n int := length(doc);
  pos int := 4;
  t int; e int; name text; vlen int; out bytea := ''::bytea; start int; len int;
BEGIN
  WHILE pos < n - 1 LOOP
    t := get_byte(doc, pos);
    start := pos;
    e := pos + 1;
    WHILE get_byte(doc, e) <> 0 LOOP e := e + 1; END LOOP;
    name := convert_from(substring(doc from pos + 2 for e - pos - 1), 'UTF8');
    pos := e + 1;
    len := get_byte(doc, pos) | (get_byte(doc, pos + 1) << 8)
         | (get_byte(doc, pos + 2) << 16) | (get_byte(doc, pos + 3) << 24);
    vlen := CASE
      WHEN t IN (1, 9, 17, 18) THEN 8
      WHEN t = 16 THEN 4 WHEN t = 8 THEN 1 WHEN t = 7 THEN 12 WHEN t = 19 THEN 16
      WHEN t IN (6, 10, 127, 255) THEN 0
      WHEN t IN (2, 13, 14) THEN 4 + len
      WHEN t IN (3, 4, 15) THEN len
      WHEN t = 5 THEN 5 + len
      ELSE NULL END;
    IF vlen IS NULL THEN RAISE EXCEPTION 'BSON type % is not measured here', t; END IF;
    pos := pos + vlen;
    IF name = '_id' OR name = ANY(keep) THEN
      out := out || substring(doc from start + 1 for pos - start);
    END IF;
  END LOOP;
  n := length(out) + 5;
  RETURN set_byte(set_byte(set_byte(set_byte('\x00000000'::bytea, 0, n & 255),
         1, (n >> 8) & 255), 2, (n >> 16) & 255), 3, (n >> 24) & 255) || out || '\x00'::bytea;
END $$;

\timing on
SELECT count(*), sum(length(doc)) AS whole_bytes
  FROM :tbl WHERE (j->>'age')::numeric < 9;
SELECT count(*), sum(length(pg_temp.bson_project(doc, ARRAY['score', 'address']))) AS projected_bytes
  FROM :tbl WHERE (j->>'age')::numeric < 9;

// Proves with DuckDB (npm @duckdb/node-api, which bundles the engine) that the *.jsonl files
// under DIR hold every record each writer accepted but the ones it counted as dropped:
// per envelope "writer", max(seq) + 1 - count(DISTINCT seq) equals the expected drops.
// Usage: node duckdb_check.mjs DIR [EXPECTED.json] [--glob PATTERN]   (see common.mjs)
import { importOrSkip, parseArgs, verdict } from './common.mjs';

const args = parseArgs('duckdb_check.mjs', process.argv.slice(2));
const { DuckDBInstance } = await importOrSkip('@duckdb/node-api');

const glob = `${args.dir}/${args.glob}`.replaceAll("'", "''");
// The query docs/shipping.md shows. Only the envelope is read (columns = ...): the other
// fields may differ from file to file, and unknown keys are skipped.
const lossQuery = `
SELECT writer,
       count(*)                           AS lines,
       max(seq) + 1                       AS numbered,
       max(seq) + 1 - count(DISTINCT seq) AS lost,
       count(*) - count(DISTINCT seq)     AS duplicates
FROM read_ndjson('${glob}', columns = {seq: 'UBIGINT', writer: 'VARCHAR'})
WHERE writer IS NOT NULL AND seq IS NOT NULL
GROUP BY writer
ORDER BY writer`;
const summaryQuery = `
SELECT count(DISTINCT filename) AS files,
       count(*) FILTER (WHERE writer IS NULL OR seq IS NULL) AS unenveloped
FROM read_ndjson('${glob}', columns = {seq: 'UBIGINT', writer: 'VARCHAR'}, filename = true)`;

const db = await DuckDBInstance.create(':memory:');
const conn = await db.connect();
const num = (row) => Object.fromEntries(
  Object.entries(row).map(([k, v]) => [k, typeof v === 'bigint' ? Number(v) : v]));
let rows, summary;
try {
  rows = (await conn.runAndReadAll(lossQuery)).getRowObjects().map(num);
  summary = num((await conn.runAndReadAll(summaryQuery)).getRowObjects()[0]);
} catch (e) {
  if (/No files found/i.test(e.message)) {
    rows = [];
    summary = { files: 0, unenveloped: 0 };
  } else {
    console.error(`FAIL (duckdb): ${e.message}`);
    process.exit(1);
  }
}
verdict('duckdb', args, rows, summary);

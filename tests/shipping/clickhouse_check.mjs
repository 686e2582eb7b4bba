// The same proof as duckdb_check.mjs with ClickHouse's engine, through chDB (npm chdb, whose
// platform package bundles libchdb: ClickHouse as a library, the engine of clickhouse-local).
// Both recipes of docs/shipping.md run: every file loaded with
// `INSERT INTO jsonlw_records FORMAT JSONEachRow` (what clickhouse-client does with a file on
// its standard input), then the loss query over the table; and the same query straight over
// the files with file('DIR/**/*.jsonl', JSONEachRow) (clickhouse-local). They must agree.
// Usage: node clickhouse_check.mjs DIR [EXPECTED.json] [--glob PATTERN]   (see common.mjs)
import { readFileSync } from 'node:fs';
import { filesEnding, importOrSkip, parseArgs, verdict } from './common.mjs';

const args = parseArgs('clickhouse_check.mjs', process.argv.slice(2));
const { Session } = await importOrSkip('chdb');

const glob = `${args.dir}/${args.glob}`.replaceAll("'", "\\'");
// The loss query docs/shipping.md shows; FROM is the table or the files.
const lossQuery = (from) => `
SELECT writer,
       count()                       AS lines,
       max(seq) + 1                  AS numbered,
       max(seq) + 1 - uniqExact(seq) AS lost,
       count() - uniqExact(seq)      AS duplicates
FROM ${from}
WHERE writer != ''
GROUP BY writer
ORDER BY writer`;
// A line without the envelope reads as writer '' (the column's default).
const summaryQuery = (from) => `
SELECT uniqExact(_path) AS files, countIf(writer = '') AS unenveloped FROM ${from}`;

const session = new Session();
const run = (sql) => session.query(sql, 'JSONEachRow').split('\n').filter(Boolean)
  .map((line) => JSON.parse(line))
  .map((row) => Object.fromEntries(Object.entries(row).map(([k, v]) =>
    [k, k === 'writer' ? v : Number(v)])));  // UInt64 comes quoted
let rows;
let summary;
let engine = 'clickhouse';
try {
  engine += ` (chDB, ClickHouse ${session.query('SELECT version()', 'TSVRaw').trim()})`;
  // Recipe 1: INSERT ... FORMAT JSONEachRow, one file per statement; fields the table does
  // not have are skipped (input_format_skip_unknown_fields, on by default).
  session.query(`CREATE TABLE jsonlw_records (writer LowCardinality(String), seq UInt64)
                 ENGINE = MergeTree ORDER BY (writer, seq)`);
  const files = filesEnding(args.dir, '.jsonl');
  for (const f of files)
    session.query(`INSERT INTO jsonlw_records FORMAT JSONEachRow\n${readFileSync(f, 'utf8')}`);
  rows = run(lossQuery('jsonlw_records'));

  // Recipe 2: the files in place, as clickhouse-local reads them.
  const source = `file('${glob}', JSONEachRow, 'writer String, seq UInt64')`;
  const direct = run(lossQuery(source));
  summary = run(summaryQuery(source))[0];
  if (JSON.stringify(direct) !== JSON.stringify(rows)) {
    console.error(`FAIL (${engine}): file() and INSERT ... FORMAT JSONEachRow disagree:\n` +
                  `${JSON.stringify(direct)}\n${JSON.stringify(rows)}`);
    process.exit(1);
  }
  if (args.glob === '**/*.jsonl' && summary.files !== files.length) {
    console.error(`FAIL (${engine}): file() read ${summary.files} files, ` +
                  `${files.length} are there`);
    process.exit(1);
  }
} catch (e) {
  if (/CANNOT_EXTRACT_TABLE_STRUCTURE|FILE_DOESNT_EXIST|Cannot find|No files/i.test(e.message)) {
    rows = [];
    summary = { files: 0, unenveloped: 0 };
  } else {
    console.error(`FAIL (${engine}): ${e.message}`);
    process.exit(1);
  }
} finally {
  session.cleanup?.();
}
verdict(engine, args, rows, summary);

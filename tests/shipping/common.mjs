// What duckdb_check.mjs and clickhouse_check.mjs share: arguments, the file walk, the
// expected drops, and the verdict. Exit codes: 0 proven, 1 a mismatch, 2 bad usage,
// 77 the engine's npm package is not installed (meson reads 77 as "skipped").
import { closeSync, existsSync, openSync, readFileSync, readSync, readdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';

export const SKIP = 77;

export function usage(name) {
  return `usage: node ${name} DIR [EXPECTED.json] [--glob PATTERN]

Reads every *.jsonl under DIR (recursively; PATTERN, relative to DIR, overrides **/*.jsonl)
and, per envelope "writer", computes max(seq) + 1 - count(DISTINCT seq): the records that writer
accepted but that are not in the files. Fails when a *.open file is left, a line has no
envelope, a (writer, seq) appears twice, two files start with the same line, or, given
EXPECTED.json, a writer's count differs from the expected one. EXPECTED.json is
{"<writer>": drops, ...}, write_files' output (its "expected_lost"), or the writers.json of
\`jsonlw demo --envelope\` (an array of {writer, seq_gaps, unknown}).`;
}

export function parseArgs(name, argv) {
  const args = { dir: null, expected: null, glob: '**/*.jsonl' };
  const rest = [];
  for (let i = 0; i < argv.length; ++i) {
    if (argv[i] === '--glob') args.glob = argv[++i];
    else if (argv[i] === '-h' || argv[i] === '--help') {
      console.log(usage(name));
      process.exit(0);
    } else rest.push(argv[i]);
  }
  if (rest.length < 1 || rest.length > 2 || !args.glob) {
    console.error(usage(name));
    process.exit(2);
  }
  args.dir = resolve(rest[0]);
  if (!existsSync(args.dir) || !statSync(args.dir).isDirectory()) {
    console.error(`FAIL: ${args.dir} is not a directory`);
    process.exit(1);
  }
  if (rest.length === 2) {
    const json = JSON.parse(readFileSync(rest[1], 'utf8'));
    args.expected = Array.isArray(json)
      ? Object.fromEntries(json.map((w) => [w.writer, w.seq_gaps + w.unknown]))
      : json.expected_lost ?? json;
  }
  return args;
}

// Files under dir whose name ends with suffix, recursively.
export function filesEnding(dir, suffix) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...filesEnding(path, suffix));
    else if (name.endsWith(suffix)) out.push(path);
  }
  return out;
}

// How many *.jsonl files start with a line that another file starts with (shippers that
// fingerprint a file by its first bytes would take the second for the first).
export function firstLineRepeats(dir) {
  const seen = new Set();
  let repeats = 0;
  for (const path of filesEnding(dir, '.jsonl')) {
    const buf = Buffer.alloc(64 * 1024);
    const fd = openSync(path, 'r');
    const n = readSync(fd, buf, 0, buf.length, 0);
    closeSync(fd);
    const end = buf.subarray(0, n).indexOf(10);
    const first = buf.subarray(0, end < 0 ? n : end).toString('utf8');
    if (seen.has(first)) ++repeats;
    seen.add(first);
  }
  return repeats;
}

// Imports an engine's npm package, or exits 77 with what to run.
export async function importOrSkip(pkg) {
  try {
    return await import(pkg);
  } catch (e) {
    console.error(`SKIP: npm package ${pkg} is not usable (${e.message.split('\n')[0]}); ` +
                  'run `npm install` in tests/shipping (./run test does it)');
    process.exit(SKIP);
  }
}

// rows: [{writer, lines, numbered, lost, duplicates}] with numbers; files: how many files
// the engine read; unenveloped: its lines without an envelope. Prints the table, exits 0 or 1.
export function verdict(engine, args, rows, { unenveloped, files }) {
  const errors = [];
  const repeats = firstLineRepeats(args.dir);
  const open = filesEnding(args.dir, '.open');
  if (open.length) errors.push(`${open.length} file(s) still being written: ${open.join(', ')}`);
  if (files === 0) errors.push(`no file matches ${args.glob} under ${args.dir}`);
  if (unenveloped) errors.push(`${unenveloped} line(s) without "seq" and "writer"`);
  if (repeats)
    errors.push(`${repeats} file(s) start with the same line as another file`);

  console.log(`${engine}: ${files} file(s) under ${args.dir}`);
  console.log('writer'.padEnd(44) + 'lines'.padStart(8) + 'max+1'.padStart(8) +
              'lost'.padStart(6) + 'dup'.padStart(5) + 'expected'.padStart(10));
  const seen = new Set();
  for (const r of rows) {
    seen.add(r.writer);
    const want = args.expected ? args.expected[r.writer] : undefined;
    console.log(String(r.writer).padEnd(44) + String(r.lines).padStart(8) +
                String(r.numbered).padStart(8) + String(r.lost).padStart(6) +
                String(r.duplicates).padStart(5) + String(want ?? '-').padStart(10));
    if (r.duplicates) errors.push(`writer ${r.writer}: ${r.duplicates} duplicated seq`);
    if (args.expected && want === undefined) errors.push(`writer ${r.writer}: not expected`);
    else if (want !== undefined && Number(want) !== r.lost)
      errors.push(`writer ${r.writer}: max(seq) + 1 - count(DISTINCT seq) = ${r.lost}, ` +
                  `but the writer counted ${want} drop(s)`);
  }
  for (const w of Object.keys(args.expected ?? {}))
    if (!seen.has(w)) errors.push(`writer ${w}: expected, but no line of it in the files`);

  if (errors.length) {
    for (const e of errors) console.error(`FAIL (${engine}): ${e}`);
    process.exit(1);
  }
  console.log(`OK (${engine}): ` + (args.expected
    ? 'every writer\'s missing seq numbers equal the drops it counted'
    : 'no duplicates, no unenveloped line, no .open file'));
}

// otlp_check.mjs DIR [SUMMARY.json]: decodes every line of every *.jsonl under DIR as an OTLP
// LogsData JSON document, strictly, with the protobuf types of OpenTelemetry JS
// (@opentelemetry/otlp-transformer's generated opentelemetry-proto root), and counts the log
// records per writer folder (DIR/raw_output, DIR/request_trace, DIR/perf_metrics). Given the
// demo's --summary-json, each writer's count must equal the records it counted written.
//
// Strict means (docs/otlp.md, "The OTLP JSON rules"): the line parses as JSON; every member of
// every message is a field of its protobuf type (an unknown name fails); traceId is 32 and
// spanId 16 lowercase hex digits (decoded to bytes before protobuf sees them); 64-bit integers
// (intValue, timeUnixNano, observedTimeUnixNano) are decimal strings; severityNumber is a
// number (no enum name); an AnyValue holds at most one value; LogsData.verify() accepts the
// message fromObject() makes of it, and encoding it to protobuf and decoding that back gives the same records.
// Exit codes: 0 decoded (and counts equal), 1 a line failed or a count differs, 2 bad usage,
// 77 the npm package is not installed.
import { readFileSync, readdirSync, statSync, existsSync } from 'node:fs';
import { join, relative, resolve, sep } from 'node:path';
import { createRequire } from 'node:module';

const SKIP = 77;
const require = createRequire(import.meta.url);
let root;
try {
  root = require('@opentelemetry/otlp-transformer/build/src/generated/root.js');
} catch (e) {
  console.log(`SKIP: @opentelemetry/otlp-transformer is not installed (${e.code || e.message})`);
  process.exit(SKIP);
}
const pb = root.opentelemetry.proto;
const LogsData = pb.logs.v1.LogsData;

// The message types' fields as this consumer reads them: name -> type (a message name below,
// 'string', 'int64' (a decimal string), 'uint32', 'int32' (a number), 'bool', 'double',
// 'hex16' / 'hex8' (ids), 'bytes'); `[]` marks a repeated field. Each name is checked against
// the generated class's prototype, so a field that is not in opentelemetry-proto fails here.
const schema = {
  LogsData: { cls: pb.logs.v1.LogsData, fields: { resourceLogs: 'ResourceLogs[]' } },
  ResourceLogs: {
    cls: pb.logs.v1.ResourceLogs,
    fields: { resource: 'Resource', scopeLogs: 'ScopeLogs[]', schemaUrl: 'string' },
  },
  Resource: {
    cls: pb.resource.v1.Resource,
    fields: { attributes: 'KeyValue[]', droppedAttributesCount: 'uint32' },
  },
  ScopeLogs: {
    cls: pb.logs.v1.ScopeLogs,
    fields: { scope: 'InstrumentationScope', logRecords: 'LogRecord[]', schemaUrl: 'string' },
  },
  InstrumentationScope: {
    cls: pb.common.v1.InstrumentationScope,
    fields: { name: 'string', version: 'string', attributes: 'KeyValue[]', droppedAttributesCount: 'uint32' },
  },
  LogRecord: {
    cls: pb.logs.v1.LogRecord,
    fields: {
      timeUnixNano: 'int64', observedTimeUnixNano: 'int64', severityNumber: 'int32',
      severityText: 'string', body: 'AnyValue', attributes: 'KeyValue[]',
      droppedAttributesCount: 'uint32', flags: 'uint32', traceId: 'hex16', spanId: 'hex8',
      eventName: 'string',
    },
  },
  KeyValue: { cls: pb.common.v1.KeyValue, fields: { key: 'string', value: 'AnyValue' } },
  AnyValue: {
    cls: pb.common.v1.AnyValue,
    oneof: true,
    fields: {
      stringValue: 'string', boolValue: 'bool', intValue: 'int64', doubleValue: 'double',
      arrayValue: 'ArrayValue', kvlistValue: 'KeyValueList', bytesValue: 'bytes',
    },
  },
  ArrayValue: { cls: pb.common.v1.ArrayValue, fields: { values: 'AnyValue[]' } },
  KeyValueList: { cls: pb.common.v1.KeyValueList, fields: { values: 'KeyValue[]' } },
};
for (const [name, t] of Object.entries(schema)) {
  for (const f of Object.keys(t.fields)) {
    if (!(f in t.cls.prototype)) {
      console.error(`FAIL: ${name}.${f} is not a field of the installed opentelemetry-proto types`);
      process.exit(1);
    }
  }
}

class Bad extends Error {}

// Checks `v` against type `type` at `path` and returns the object protobufjs's fromObject takes
// (ids as base64 bytes).
function convert(v, type, path) {
  if (type.endsWith('[]')) {
    if (!Array.isArray(v)) throw new Bad(`${path}: expected an array`);
    const inner = type.slice(0, -2);
    return v.map((x, i) => convert(x, inner, `${path}[${i}]`));
  }
  switch (type) {
    case 'string':
      if (typeof v !== 'string') throw new Bad(`${path}: expected a string`);
      return v;
    case 'bool':
      if (typeof v !== 'boolean') throw new Bad(`${path}: expected true or false`);
      return v;
    case 'double':
      if (typeof v !== 'number') throw new Bad(`${path}: expected a number`);
      return v;
    case 'int32':
    case 'uint32':
      if (typeof v !== 'number' || !Number.isInteger(v)) throw new Bad(`${path}: expected an integer number (no enum name)`);
      if (type === 'uint32' && (v < 0 || v > 0xffffffff)) throw new Bad(`${path}: out of uint32 range`);
      return v;
    case 'int64':
      if (typeof v !== 'string' || !/^-?(0|[1-9][0-9]*)$/.test(v)) throw new Bad(`${path}: a 64-bit integer must be a decimal string, got ${JSON.stringify(v)}`);
      if (BigInt(v) > 2n ** 63n - 1n || BigInt(v) < -(2n ** 63n)) throw new Bad(`${path}: out of int64 range`);
      return v;
    case 'hex16':
    case 'hex8': {
      const n = type === 'hex16' ? 32 : 16;
      if (typeof v !== 'string' || !new RegExp(`^[0-9a-f]{${n}}$`).test(v)) throw new Bad(`${path}: expected ${n} lowercase hex digits`);
      if (/^0+$/.test(v)) throw new Bad(`${path}: an all-zero id is invalid`);
      return Buffer.from(v, 'hex').toString('base64');
    }
    case 'bytes':
      if (typeof v !== 'string' || !/^[A-Za-z0-9+/]*={0,2}$/.test(v)) throw new Bad(`${path}: expected base64`);
      return v;
    default: {
      const t = schema[type];
      if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new Bad(`${path}: expected an object (${type})`);
      const out = {};
      let set = 0;
      for (const [k, x] of Object.entries(v)) {
        const ft = t.fields[k];
        if (!ft) throw new Bad(`${path}: "${k}" is not a field of ${type}`);
        out[k] = convert(x, ft, `${path}.${k}`);
        ++set;
      }
      if (t.oneof && set > 1) throw new Bad(`${path}: an AnyValue holds more than one value`);
      return out;
    }
  }
}

function jsonlFiles(dir) {
  const out = [];
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    const st = statSync(p);
    if (st.isDirectory()) out.push(...jsonlFiles(p));
    else if (name.endsWith('.jsonl')) out.push(p);
  }
  return out;
}

const args = process.argv.slice(2);
if (args.length < 1 || args.length > 2) {
  console.error('usage: node otlp_check.mjs DIR [SUMMARY.json]');
  process.exit(2);
}
const dir = resolve(args[0]);
if (!existsSync(dir)) {
  console.error(`FAIL: ${dir} does not exist`);
  process.exit(1);
}

// The shipped writers' event names (docs/otlp.md), per demo folder.
const expectedEvents = {
  perf_metrics: ['jsonlw.perf_metrics'],
  raw_output: ['jsonlw.raw_output'],
  request_trace: ['jsonlw.request_trace.request', 'jsonlw.request_trace.response'],
};
const perWriter = new Map();  // first folder under DIR -> log records
const eventNames = new Map();
let lines = 0, failures = 0, withTime = 0, withTrace = 0;
for (const file of jsonlFiles(dir)) {
  const writer = relative(dir, file).split(sep)[0];
  const text = readFileSync(file, 'utf8');
  if (text.length && !text.endsWith('\n')) {
    console.error(`FAIL: ${file}: the last line has no newline`);
    ++failures;
  }
  const fileLines = text.split('\n');
  fileLines.pop();
  fileLines.forEach((line, i) => {
    ++lines;
    const where = `${relative(dir, file)}:${i + 1}`;
    try {
      let doc;
      try {
        doc = JSON.parse(line);
      } catch (e) {
        throw new Bad(`not JSON: ${e.message}`);
      }
      const obj = convert(doc, 'LogsData', 'LogsData');
      const msg = LogsData.fromObject(obj);
      const err = LogsData.verify(msg);
      if (err) throw new Bad(`LogsData.verify: ${err}`);
      const back = LogsData.decode(LogsData.encode(msg).finish());
      const records = doc.resourceLogs.flatMap(r => r.scopeLogs.flatMap(s => s.logRecords));
      const decoded = back.resourceLogs.flatMap(r => r.scopeLogs.flatMap(s => s.logRecords));
      if (records.length === 0) throw new Bad('no log record');
      if (decoded.length !== records.length) throw new Bad(`${decoded.length} log records after a protobuf round trip, ${records.length} in the line`);
      records.forEach((r, k) => {
        const d = decoded[k];
        if (!r.body || !r.body.kvlistValue) throw new Bad(`record ${k}: the body is not a kvlistValue`);
        if (d.body.kvlistValue.values.length !== r.body.kvlistValue.values.length) throw new Bad(`record ${k}: body members lost in the round trip`);
        if (r.traceId && Buffer.from(d.traceId).toString('hex') !== r.traceId) throw new Bad(`record ${k}: traceId changed in the round trip`);
        if (r.timeUnixNano) {
          ++withTime;
          if (String(d.timeUnixNano) !== r.timeUnixNano) throw new Bad(`record ${k}: timeUnixNano changed in the round trip`);
        }
        if (r.traceId) ++withTrace;
        eventNames.set(r.eventName, (eventNames.get(r.eventName) || 0) + 1);
        const want = expectedEvents[writer];
        if (want && !want.includes(r.eventName)) throw new Bad(`record ${k}: eventName ${r.eventName}, expected one of ${want.join(', ')}`);
      });
      perWriter.set(writer, (perWriter.get(writer) || 0) + records.length);
    } catch (e) {
      if (!(e instanceof Bad)) throw e;
      if (failures < 20) console.error(`FAIL: ${where}: ${e.message}`);
      ++failures;
    }
  });
}

let records = 0;
for (const n of perWriter.values()) records += n;
console.log(`decoded ${lines} OTLP lines, ${records} log records (${withTime} with timeUnixNano, ${withTrace} with traceId): ` +
  [...perWriter].map(([w, n]) => `${w} ${n}`).join(', '));
console.log('event names: ' + [...eventNames].map(([n, c]) => `${n} ${c}`).join(', '));
if (lines === 0) {
  console.error('FAIL: no line under ' + dir);
  process.exit(1);
}
if (args[1]) {
  const summary = JSON.parse(readFileSync(args[1], 'utf8'));
  const folder = { 'raw output': 'raw_output', 'request trace': 'request_trace', 'perf metrics': 'perf_metrics' };
  for (const w of summary.writers) {
    const got = perWriter.get(folder[w.name]) || 0;
    if (got !== w.written) {
      console.error(`FAIL: ${w.name}: ${got} log records in the files, but the writer counted ${w.written} written`);
      ++failures;
    } else {
      console.log(`ok   ${w.name}: ${got} log records = ${w.written} counted written`);
    }
  }
}
// The demo's clients send a traceparent with every request and every record has its time:
// every log record must carry traceId and timeUnixNano.
if (args[1] && (withTime !== records || withTrace !== records)) {
  console.error(`FAIL: of ${records} log records, ${withTime} have timeUnixNano and ${withTrace} traceId (all must)`);
  ++failures;
}
if (failures) {
  console.error(`FAIL: ${failures} problem(s)`);
  process.exit(1);
}
console.log('OK: every line decoded strictly as OTLP LogsData');

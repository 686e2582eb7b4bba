// The official OpenAI SDK (openai-node) against `jsonlw serve`, in two runs (sdk_test.py
// drives them):
//
//   node openai_sdk_check.mjs client BASE_URL OUT.json
//       completions and chat, whole and streamed, with logprobs, through the SDK; what the SDK
//       returned (parsed bodies, stream chunks, the stream helper's final completion, errors,
//       the x-request-id header) goes to OUT.json. JSON.stringify writes every number so
//       that it parses back to the same double: nothing is lost between the two runs.
//   node openai_sdk_check.mjs check OUT.json DIR
//       after the server stopped: each request joined by its x-request-id header (and its
//       "id", cmpl-<n>) to the raw-output line of request_id n in DIR/raw_output; the tokens
//       and logprobs the SDK parsed must equal that line value for value.
//
// Exit 0: all equal; 1: a difference (printed); 77: the openai package is not installed.
import fs from 'node:fs';
import path from 'node:path';

const MODEL = 'jsonlw-demo';
const TOP = 5;            // the server's --top-k: the raw line's alternatives per position
const PER_KIND = 6;       // requests per kind; max_tokens 1, 4, 7, ... (below the default 16)

// The demo tokenizer (tools/serve/openai_api.cpp token_text): id -> its word after a space,
// ids past the list wrapping around. Checked against every frame of every raw line below,
// so a change there fails here rather than passing unnoticed.
const VOCABULARY = [
  ' the', ' model', ' writes', ' records', ' without', ' blocking', ' its', ' loop', ' and',
  ' every', ' line', ' is', ' valid', ' JSON', ' a', ' token', ' per', ' step', ' from', ' GPU',
  ' to', ' disk', ' fast', ' batch', ' queue', ' never', ' loses', ' count', ' drop', ' we',
  ' measure', ' what', ' matters', ' latency', ' throughput', ' in', ' order', ' on', ' time',
  ' with', ' care', ' so', ' that', ' readers', ' can', ' trust', ' files', ' later', ' .', ' ,',
  ' !', ' ?', ' of', ' it', ' runs', ' here', ' now', ' again', ' each', ' request', ' gets',
  ' answer', ' done', ' ok',
];
const tokenText = (id) => VOCABULARY[id % VOCABULARY.length];

const KINDS = ['completions', 'completions_stream', 'chat', 'chat_stream', 'chat_stream_helper'];

async function loadSdk() {
  try {
    const mod = await import('openai');
    const pkg = JSON.parse(fs.readFileSync(
      path.join(path.dirname(new URL(import.meta.url).pathname), 'node_modules', 'openai', 'package.json'),
      'utf8'));
    return { OpenAI: mod.default, version: pkg.version };
  } catch (e) {
    console.log(`SKIP: the openai npm package is not installed in tests/serve (./run test installs it): ${e.message}`);
    process.exit(77);
  }
}

// --- client ----------------------------------------------------------------------------

async function runClient(baseURL, outPath) {
  const { OpenAI, version } = await loadSdk();
  const client = new OpenAI({
    baseURL: `${baseURL}/v1`,
    apiKey: 'sk-jsonlw-test-key',
    maxRetries: 0,       // an error must surface, not be retried away
    timeout: 60_000,
  });
  const prompt = (i) => `Tell me about record ${i}`;
  const messages = (i) => [
    { role: 'system', content: 'You write JSON Lines.' },
    { role: 'user', content: prompt(i) },
  ];
  const requestId = (response) => response.headers.get('x-request-id');

  const one = {
    async completions(i, max_tokens) {
      const { data, response } = await client.completions
        .create({ model: MODEL, prompt: prompt(i), max_tokens, logprobs: TOP })
        .withResponse();
      return { header_id: requestId(response), body: data };
    },
    async completions_stream(i, max_tokens) {
      const { data, response } = await client.completions
        .create({ model: MODEL, prompt: prompt(i), max_tokens, logprobs: TOP, stream: true,
                  stream_options: { include_usage: true } })
        .withResponse();
      const chunks = [];
      for await (const chunk of data) chunks.push(chunk);
      return { header_id: requestId(response), chunks };
    },
    async chat(i, max_tokens) {
      const { data, response } = await client.chat.completions
        .create({ model: MODEL, messages: messages(i), max_tokens, logprobs: true, top_logprobs: TOP })
        .withResponse();
      return { header_id: requestId(response), body: data };
    },
    async chat_stream(i, max_tokens) {
      const { data, response } = await client.chat.completions
        .create({ model: MODEL, messages: messages(i), max_completion_tokens: max_tokens,
                  logprobs: true, top_logprobs: TOP, stream: true,
                  stream_options: { include_usage: true } })
        .withResponse();
      const chunks = [];
      for await (const chunk of data) chunks.push(chunk);
      return { header_id: requestId(response), chunks };
    },
    // The SDK's own accumulation of a stream (ChatCompletionStream): its final completion.
    async chat_stream_helper(i, max_tokens) {
      const stream = client.chat.completions.stream({
        model: MODEL, messages: messages(i), max_tokens, logprobs: true, top_logprobs: TOP,
        stream_options: { include_usage: true },
      });
      return { header_id: null, body: await stream.finalChatCompletion() };
    },
  };

  const jobs = [];
  for (const kind of KINDS)
    for (let i = 0; i < PER_KIND; ++i) {
      const max_tokens = 1 + 3 * i;
      jobs.push(one[kind](i, max_tokens).then((r) => ({ kind, max_tokens, ...r })));
    }
  const results = await Promise.all(jobs);

  const models = [];
  for await (const m of client.models.list()) models.push(m);

  // Errors as the SDK raises them from the server's OpenAI-style bodies.
  const errors = [];
  const expectError = async (what, promise) => {
    try {
      await promise;
      errors.push({ what, raised: null });
    } catch (e) {
      errors.push({ what, raised: e.constructor.name, status: e.status, type: e.type, code: e.code,
                    param: e.param, message: e.message,
                    traceparent: e.headers?.get?.('traceparent') ?? null });
    }
  };
  await expectError('unknown model', client.completions.create({ model: 'gpt-4o', prompt: 'x' }));
  await expectError('max_tokens 0', client.chat.completions.create(
    { model: MODEL, messages: messages(0), max_tokens: 0 }));
  await expectError('top_logprobs 6', client.chat.completions.create(
    { model: MODEL, messages: messages(0), logprobs: true, top_logprobs: TOP + 1 }));

  fs.writeFileSync(outPath, JSON.stringify({ sdk_version: version, results, models, errors }));
  console.log(`client: ${results.length} completions through openai ${version}, ` +
              `${models.length} model listed, ${errors.length} errors provoked`);
}

// --- check -----------------------------------------------------------------------------

function rawLines(dir) {
  const files = [];
  const walk = (d) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.jsonl')) files.push(p);
    }
  };
  walk(path.join(dir, 'raw_output'));
  const lines = [];
  for (const f of files.sort())
    for (const line of fs.readFileSync(f, 'utf8').split('\n'))
      if (line !== '') lines.push(JSON.parse(line));
  return lines;
}

// What one request's SDK view says, in one shape: token texts, their logprobs, the
// alternatives per position, the text, usage, finish reason and the response id.
function sdkView(r) {
  const v = { tokens: [], logprobs: [], tops: [], text: '', usage: null, finish: null, id: null,
              chunks: r.chunks ? r.chunks.length : 0 };
  if (r.kind === 'completions') {
    const c = r.body.choices[0];
    Object.assign(v, { id: r.body.id, text: c.text, usage: r.body.usage, finish: c.finish_reason,
                       tokens: c.logprobs.tokens, logprobs: c.logprobs.token_logprobs,
                       tops: c.logprobs.top_logprobs });
  } else if (r.kind === 'completions_stream') {
    for (const chunk of r.chunks) {
      v.id ??= chunk.id;
      if (chunk.usage) v.usage = chunk.usage;
      const c = chunk.choices[0];
      if (!c) continue;
      v.text += c.text;
      if (c.finish_reason) v.finish = c.finish_reason;
      if (!c.logprobs) continue;
      v.tokens.push(...c.logprobs.tokens);
      v.logprobs.push(...c.logprobs.token_logprobs);
      v.tops.push(...c.logprobs.top_logprobs);
    }
  } else if (r.kind === 'chat' || r.kind === 'chat_stream_helper') {
    const c = r.body.choices[0];
    Object.assign(v, { id: r.body.id, text: c.message.content, usage: r.body.usage,
                       finish: c.finish_reason });
    for (const t of c.logprobs.content) {
      v.tokens.push(t.token);
      v.logprobs.push(t.logprob);
      v.tops.push(t.top_logprobs);
    }
  } else {  // chat_stream
    for (const chunk of r.chunks) {
      v.id ??= chunk.id;
      if (chunk.usage) v.usage = chunk.usage;
      const c = chunk.choices[0];
      if (!c) continue;
      v.text += c.delta.content ?? '';
      if (c.finish_reason) v.finish = c.finish_reason;
      for (const t of c.logprobs?.content ?? []) {
        v.tokens.push(t.token);
        v.logprobs.push(t.logprob);
        v.tops.push(t.top_logprobs);
      }
    }
  }
  return v;
}

function runCheck(outPath, dir) {
  const client = JSON.parse(fs.readFileSync(outPath, 'utf8'));
  const problems = [];
  const fail = (msg) => { if (problems.length < 40) problems.push(msg); };
  const same = (a, b) => Object.is(a, b);

  const raws = rawLines(dir);
  const byId = new Map();
  for (const raw of raws) {
    if (byId.has(raw.request_id)) fail(`raw output: request_id ${raw.request_id} on two lines`);
    byId.set(raw.request_id, raw);
    raw.frames.forEach((f, i) => {
      if (f !== tokenText(raw.token_ids[i]))
        fail(`raw ${raw.request_id}: frame ${i} ${JSON.stringify(f)} is not token ${raw.token_ids[i]}'s text`);
    });
  }

  const counts = { requests: 0, tokens: 0, logprobs: 0, alternatives: 0, usage: 0, texts: 0,
                   header_joins: 0, chunks: 0, without_data: 0 };
  const perKind = Object.fromEntries(KINDS.map((k) => [k, 0]));
  const joined = new Set();
  for (const r of client.results) {
    const v = sdkView(r);
    const where = `${r.kind} ${v.id}`;
    const m = /^(cmpl|chatcmpl)-(\d+)$/.exec(v.id ?? '');
    const prefix = r.kind.startsWith('chat') ? 'chatcmpl' : 'cmpl';
    if (!m || m[1] !== prefix) { fail(`${where}: id is not ${prefix}-<n>`); continue; }
    const n = m[2];
    if (r.header_id !== null) {
      if (r.header_id !== n) { fail(`${where}: x-request-id ${r.header_id} is not ${n}`); continue; }
      ++counts.header_joins;
    }
    const raw = byId.get(n);
    if (!raw) { fail(`${where}: no raw-output line with request_id "${n}"`); continue; }
    if (joined.has(n)) fail(`${where}: two SDK requests joined to raw request_id ${n}`);
    joined.add(n);
    ++counts.requests;
    ++perKind[r.kind];
    counts.chunks += v.chunks;

    if (raw.aborted !== false) fail(`${where}: raw line aborted=${raw.aborted}`);
    if (raw.streaming !== r.kind.includes('stream'))
      fail(`${where}: raw streaming=${raw.streaming}`);
    if (raw.num_output_tokens !== r.max_tokens)
      fail(`${where}: raw num_output_tokens ${raw.num_output_tokens}, max_tokens ${r.max_tokens}`);
    if (v.finish !== 'length') fail(`${where}: finish_reason ${v.finish}, want length`);
    if (v.usage?.completion_tokens !== raw.num_output_tokens)
      fail(`${where}: usage.completion_tokens ${v.usage?.completion_tokens} != raw num_output_tokens ${raw.num_output_tokens}`);
    else ++counts.usage;
    if (v.text !== raw.text) fail(`${where}: text ${JSON.stringify(v.text)} != raw ${JSON.stringify(raw.text)}`);
    else ++counts.texts;

    // A position whose step the stage dropped has no data: null in the raw line and in the
    // response (completions' top_logprobs entry null, chat's []); "absent" when none had any.
    const rawLogprobs = raw.logprobs ?? raw.frames.map(() => null);
    const rawTops = raw.top_logprobs ?? raw.frames.map(() => []);
    if (v.tokens.length !== raw.frames.length || v.logprobs.length !== rawLogprobs.length ||
        v.tops.length !== rawTops.length) {
      fail(`${where}: ${v.tokens.length} tokens, ${v.logprobs.length} logprobs, ${v.tops.length} ` +
           `top lists; raw ${raw.frames.length}, ${rawLogprobs.length}, ${rawTops.length}`);
      continue;
    }
    for (let i = 0; i < v.tokens.length; ++i) {
      if (v.tokens[i] !== raw.frames[i]) fail(`${where}[${i}]: token ${JSON.stringify(v.tokens[i])} != frame ${JSON.stringify(raw.frames[i])}`);
      else ++counts.tokens;
      if (!same(v.logprobs[i], rawLogprobs[i]))
        fail(`${where}[${i}]: logprob ${v.logprobs[i]} != raw ${rawLogprobs[i]}`);
      else if (rawLogprobs[i] === null) ++counts.without_data;
      else ++counts.logprobs;
      const alts = rawTops[i];
      if (rawLogprobs[i] === null) {
        const want = r.kind.startsWith('chat') ? '[]' : 'null';
        if (JSON.stringify(v.tops[i]) !== want || alts.length !== 0)
          fail(`${where}[${i}]: without data, top_logprobs ${JSON.stringify(v.tops[i])} (want ${want}), raw ${JSON.stringify(alts)}`);
        continue;
      }
      if (alts.length !== TOP) fail(`${where}[${i}]: raw has ${alts.length} alternatives, want ${TOP}`);
      if (r.kind.startsWith('chat')) {
        // A list: every alternative, in order, as token text and logprob.
        const got = v.tops[i];
        if (got.length !== alts.length) {
          fail(`${where}[${i}]: ${got.length} top_logprobs, raw ${alts.length}`);
          continue;
        }
        got.forEach((g, k) => {
          if (g.token !== tokenText(alts[k][0]) || !same(g.logprob, alts[k][1]))
            fail(`${where}[${i}][${k}]: ${JSON.stringify([g.token, g.logprob])} != raw ${JSON.stringify([tokenText(alts[k][0]), alts[k][1]])}`);
          else ++counts.alternatives;
        });
      } else {
        // An object {text: logprob}: one key per distinct text, the first (likeliest)
        // alternative's logprob, keys in the order the alternatives come.
        const want = [];
        for (const [id, lp] of alts)
          if (!want.some(([t]) => t === tokenText(id))) want.push([tokenText(id), lp]);
        const got = Object.entries(v.tops[i]);
        if (got.length !== want.length) {
          fail(`${where}[${i}]: top_logprobs keys ${JSON.stringify(got)}, raw distinct ${JSON.stringify(want)}`);
          continue;
        }
        got.forEach(([t, lp], k) => {
          if (t !== want[k][0] || !same(lp, want[k][1]))
            fail(`${where}[${i}]: top_logprobs entry ${k} ${JSON.stringify([t, lp])} != raw ${JSON.stringify(want[k])}`);
          else ++counts.alternatives;
        });
      }
    }
  }
  if (counts.requests !== client.results.length)
    fail(`${client.results.length - counts.requests} of ${client.results.length} SDK requests not joined`);
  if (raws.length !== client.results.length)
    fail(`raw output holds ${raws.length} lines, the SDK made ${client.results.length} completions`);
  if (counts.header_joins !== client.results.filter((r) => r.header_id !== null).length)
    fail('an x-request-id header did not join');

  const models = client.models;
  if (models.length !== 1 || models[0].id !== MODEL || models[0].object !== 'model')
    fail(`models.list(): ${JSON.stringify(models)}, want the one model ${MODEL}`);

  const wantErrors = {
    'unknown model': { raised: 'NotFoundError', status: 404, code: 'model_not_found', param: 'model',
                       type: 'invalid_request_error' },
    'max_tokens 0': { raised: 'BadRequestError', status: 400, code: null, param: 'max_tokens',
                      type: 'invalid_request_error' },
    'top_logprobs 6': { raised: 'BadRequestError', status: 400, code: null, param: 'top_logprobs',
                        type: 'invalid_request_error' },
  };
  for (const e of client.errors) {
    const want = wantErrors[e.what];
    for (const [k, val] of Object.entries(want))
      if (e[k] !== val) fail(`error '${e.what}': ${k} ${JSON.stringify(e[k])}, want ${JSON.stringify(val)}`);
    if (!/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/.test(e.traceparent ?? ''))
      fail(`error '${e.what}': traceparent header ${e.traceparent}`);
  }

  if (problems.length) {
    for (const p of problems) console.log(`FAIL ${p}`);
    process.exit(1);
  }
  const kinds = KINDS.map((k) => `${perKind[k]} ${k.replaceAll('_', ' ')}`).join(', ');
  console.log(`openai ${client.sdk_version} SDK vs the raw-output records: ${counts.requests} completions ` +
              `(${kinds}; ${counts.chunks} stream chunks) joined by id, ${counts.header_joins} of ` +
              `them also by the x-request-id header`);
  console.log(`  equal value for value: ${counts.tokens} tokens == frames, ${counts.logprobs} ` +
              `logprobs (exact doubles), ${counts.alternatives} top alternatives, ${counts.texts} ` +
              `texts, ${counts.usage} usage.completion_tokens == num_output_tokens; ` +
              `${counts.without_data} positions without data (null on both sides)`);
  console.log(`  models.list(): ${models.map((m) => m.id).join(', ')}; errors raised by the SDK: ` +
              client.errors.map((e) => `${e.raised} ${e.status} ${e.code ?? `param ${e.param}`}`).join(', '));
}

const [mode, a, b] = process.argv.slice(2);
if (mode === 'client' && a && b) await runClient(a, b);
else if (mode === 'check' && a && b) runCheck(a, b);
else {
  console.error('usage: openai_sdk_check.mjs client BASE_URL OUT.json | check OUT.json DIR');
  process.exit(2);
}

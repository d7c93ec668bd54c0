// The official `openai` npm SDK (v6, the newest major on Node 20) reads the fake
// upstream without error, tool-call fragments included: the fake speaks the
// real chat-completions streaming protocol, so what the gateway is tested
// against is what real servers send.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startFakeUpstream } from './lib/fake_upstream.mjs';

let fake;
let client;
before(async () => {
  fake = await startFakeUpstream();
  client = new OpenAI({ baseURL: fake.baseURL, apiKey: 'sk-fake', maxRetries: 0, timeout: 10000 });
});
after(async () => { await fake?.stop(); });

const messages = [{ role: 'user', content: 'hello' }];

test('openai SDK: streamed tokens and the usage chunk with empty choices', async () => {
  const stream = await client.chat.completions.create({
    model: 'tokens:n=5,keepalive', messages, stream: true, stream_options: { include_usage: true },
  });
  let text = '';
  let usage;
  for await (const chunk of stream) {
    text += chunk.choices[0]?.delta?.content ?? '';
    if (chunk.usage) usage = chunk.usage;
  }
  assert.equal(text, 'tok0 tok1 tok2 tok3 tok4');
  assert.equal(usage.completion_tokens, 5);
});

// The first call's arguments as fragments carry them: by index where there is one,
// else up to the fragment that names the second function.
function firstCallArguments(fragments) {
  let args = '';
  for (const f of fragments) {
    if (f.index !== undefined && f.index !== 0) continue;
    if (f.function?.name === 'current_time') break;
    args += f.function?.arguments ?? '';
  }
  return args;
}

for (const style of ['split', 'ollama', 'noindex']) {
  test(`openai SDK: tool-call fragments (${style}) read without error`, async () => {
    const stream = await client.chat.completions.create({ model: `tools:style=${style}`, messages, stream: true });
    const fragments = [];
    for await (const chunk of stream) for (const call of chunk.choices[0]?.delta?.tool_calls ?? []) fragments.push(call);
    assert.ok(fragments.length >= 2);
    assert.deepEqual(JSON.parse(firstCallArguments(fragments)), { expression: '2+3*4' });
  });
}

test('openai SDK: the stream helper assembles split parallel tool calls by index', async () => {
  const runner = client.chat.completions.stream({ model: 'tools:style=split', messages });
  const completion = await runner.finalChatCompletion();
  const calls = completion.choices[0].message.tool_calls;
  assert.equal(calls.length, 2);
  assert.equal(calls[0].id, 'call_calc_1');
  assert.equal(calls[0].function.name, 'calculator');
  assert.deepEqual(JSON.parse(calls[0].function.arguments), { expression: '2+3*4' });
  assert.equal(calls[1].function.name, 'current_time');
  assert.equal(completion.choices[0].finish_reason, 'tool_calls');
});

test('openai SDK: reasoning deltas arrive as extra delta fields', async () => {
  const stream = await client.chat.completions.create({ model: 'reasoning', messages, stream: true });
  let reasoning = '';
  for await (const chunk of stream) {
    const d = chunk.choices[0]?.delta ?? {};
    reasoning += d.reasoning_content ?? d.reasoning ?? '';
  }
  assert.equal(reasoning, 'Let me think about it.');
});

test('openai SDK: an error status is the SDK\'s own error class with the fake\'s message', async () => {
  await assert.rejects(
    client.chat.completions.create({ model: 'status:code=401', messages, stream: true }),
    (err) => err instanceof OpenAI.AuthenticationError && /fake says 401/.test(err.message),
  );
});

// The AI SDK's own UI message stream parser (ai@6: parseJsonEventStream with
// uiMessageChunkSchema, then readUIMessageStream, as useChat's DefaultChatTransport
// reads a response) against the real binary's POST /sessions/{id}/chat and its resume,
// GET /sessions/{id}/chat/stream. Each stream must rebuild one assistant UI message whose
// parts equal what the session persisted.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { parseJsonEventStream, uiMessageChunkSchema, readUIMessageStream } from 'ai';
import { startGateway, api, messagesOldestFirst, waitFor } from '../../browser/lib/gateway.mjs';

let gw;
before(async () => { gw = await startGateway(); });
after(async () => { await gw?.stop(); });

// What DefaultChatTransport sends for a new user message.
function chatBody(text) {
  return {
    id: 'chat-1',
    messages: [{ id: 'u1', role: 'user', parts: [{ type: 'text', text }] }],
    trigger: 'submit-message',
    messageId: undefined,
  };
}

async function newSession(mock) {
  const s = await api(gw.url, 'POST', '/sessions', mock ? { config: { mock } } : {});
  return s.id;
}

// The response body read as the AI SDK reads it: chunks validated by its schema (a chunk
// it rejects fails the test), then folded into UI messages; the last snapshot, and the
// chunks' types in order.
async function readChat(body) {
  const types = [];
  const errors = [];
  const chunks = parseJsonEventStream({ stream: body, schema: uiMessageChunkSchema }).pipeThrough(
    new TransformStream({
      transform(part, controller) {
        if (!part.success) throw part.error;
        types.push(part.value.type);
        controller.enqueue(part.value);
      },
    }),
  );
  let message;
  for await (const snapshot of readUIMessageStream({ stream: chunks, onError: (e) => errors.push(e.message) })) message = snapshot;
  return { message, types, errors };
}

// The UI parts a persisted conversation's assistant turn stands for: the tools it called
// (with the tool messages' outputs) and its text, in order. step-start parts are the
// stream's structure, not content, and are left out of the comparison.
function expectedParts(messages) {
  const lastUser = messages.map((m) => m.role).lastIndexOf('user');
  const turn = messages.slice(lastUser + 1);
  const outputs = new Map(turn.filter((m) => m.role === 'tool').map((m) => [m.tool_call_id, m.content]));
  const parts = [];
  for (const m of turn) {
    if (m.role !== 'assistant') continue;
    for (const call of m.tool_calls ?? [])
      parts.push({ type: `tool-${call.name}`, toolCallId: call.id, input: call.args, output: outputs.get(call.id) });
    if (m.content) parts.push({ type: 'text', text: m.content });
  }
  return parts;
}

function contentParts(message) {
  return message.parts.filter((p) => p.type !== 'step-start').map((p) => {
    if (p.type === 'text') return { type: 'text', text: p.text };
    if (p.type.startsWith('tool-')) return { type: p.type, toolCallId: p.toolCallId, input: p.input, output: p.output };
    return p;
  });
}

async function postChat(sessionId, text, init = {}) {
  return fetch(`${gw.url}/sessions/${sessionId}/chat`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(chatBody(text)),
    signal: AbortSignal.timeout(20000),
    ...init,
  });
}

test('a text run read by the AI SDK equals the persisted answer', async () => {
  const sid = await newSession();
  const res = await postChat(sid, 'hello from useChat');
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('x-vercel-ai-ui-message-stream'), 'v1');
  const { message, types, errors } = await readChat(res.body);
  assert.deepEqual(errors, []);
  assert.equal(types[0], 'start');
  assert.equal(types.at(-1), 'finish');
  const persisted = await messagesOldestFirst(gw.url, sid);
  assert.equal(persisted.length, 2);
  assert.equal(message.role, 'assistant');
  assert.deepEqual(contentParts(message), expectedParts(persisted));
  assert.deepEqual(contentParts(message), [{ type: 'text', text: 'hello from useChat' }]);
});

test('a tool-calling run: the tool part holds the input and output the session stored', async () => {
  const sid = await newSession({ tool_calls: [{ name: 'calculator', args: { expression: '2+3*4' } }] });
  const res = await postChat(sid, 'what is 2+3*4?');
  assert.equal(res.status, 200);
  const { message, errors } = await readChat(res.body);
  assert.deepEqual(errors, []);
  const persisted = await messagesOldestFirst(gw.url, sid);
  const expected = expectedParts(persisted);
  assert.ok(expected.some((p) => p.type === 'tool-calculator' && p.output === '14'), JSON.stringify(persisted));
  assert.deepEqual(contentParts(message), expected);
  const tool = message.parts.find((p) => p.type === 'tool-calculator');
  assert.equal(tool.state, 'output-available');
  // Two model steps: the tool call's, and the answer after its result.
  assert.equal(message.parts.filter((p) => p.type === 'step-start').length, 2);
});

test('a failing run: the AI SDK gets the error chunk and a finish', async () => {
  const sid = await newSession({ tokens: 5, fail_after: 2 });
  const res = await postChat(sid, 'fail please');
  const { message, types, errors } = await readChat(res.body);
  assert.equal(errors.length, 1);
  assert.ok(types.indexOf('error') < types.indexOf('finish'));
  const persisted = await messagesOldestFirst(gw.url, sid);
  assert.deepEqual(contentParts(message), expectedParts(persisted));
});

test('a stream cut mid-run is resumed by GET /chat/stream, read the same way', async () => {
  const sid = await newSession({ tokens: 40, tokens_per_second: 40 });
  const cut = new AbortController();
  const res = await postChat(sid, 'long answer', { signal: cut.signal });
  assert.equal(res.status, 200);
  // Read a little of the stream, then drop the connection (as a page reload does).
  const reader = res.body.getReader();
  const first = await reader.read();
  assert.ok(!first.done && first.value.length > 0);
  cut.abort();
  await reader.cancel().catch(() => {});

  const resumed = await fetch(`${gw.url}/sessions/${sid}/chat/stream`, { signal: AbortSignal.timeout(20000) });
  assert.equal(resumed.status, 200, 'the run is still live: its stream resumes');
  const { message, errors } = await readChat(resumed.body);
  assert.deepEqual(errors, []);
  const persisted = await messagesOldestFirst(gw.url, sid);
  assert.deepEqual(contentParts(message), expectedParts(persisted));
  assert.equal(message.parts.filter((p) => p.type === 'text').length, 1);

  // The run is over: nothing to resume.
  await waitFor('the run to end', async () => (await api(gw.url, 'GET', `/sessions/${sid}`)).run === null);
  const idle = await fetch(`${gw.url}/sessions/${sid}/chat/stream`, { signal: AbortSignal.timeout(10000) });
  assert.equal(idle.status, 204);
});

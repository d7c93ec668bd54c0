// @ag-ui/client's own HttpAgent against the real agent-gateway binary: runAgent runs
// the events through the client's pipeline (transformChunks, verifyEvents, then the
// message reducer), so a run that completes here passed AG-UI's own order checks.
// Each run's rebuilt agent.messages must equal the session's persisted messages.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { HttpAgent, verifyEvents } from '@ag-ui/client';
import { startGateway } from '../../browser/lib/gateway.mjs';

let gw;
before(async () => { gw = await startGateway(); });
after(async () => { await gw?.stop(); });

async function createSession(config = {}) {
  const res = await fetch(`${gw.url}/sessions`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ config }),
  });
  assert.equal(res.status, 201);
  return (await res.json()).id;
}

// The session's messages, oldest first, in AG-UI's message shape without ids.
async function persistedMessages(sessionId) {
  const res = await fetch(`${gw.url}/sessions/${sessionId}/messages?limit=500`);
  assert.equal(res.status, 200);
  const { messages } = await res.json();
  return messages.reverse().map((m) => {
    if (m.role === 'tool') return { role: 'tool', toolCallId: m.tool_call_id, content: m.content };
    const out = { role: m.role };
    if (m.content) out.content = m.content;
    if (m.tool_calls?.length) out.toolCalls = m.tool_calls.map((c) => ({ id: c.id, name: c.name, args: c.args }));
    return out;
  });
}

// What the client rebuilt, in the same shape (tool arguments parsed: the text may differ in spacing).
function rebuilt(agent) {
  return agent.messages.map((m) => {
    if (m.role === 'tool') return { role: 'tool', toolCallId: m.toolCallId, content: m.content };
    const out = { role: m.role };
    if (m.content) out.content = m.content;
    if (m.toolCalls?.length) {
      out.toolCalls = m.toolCalls.map((c) => ({ id: c.id, name: c.function.name, args: JSON.parse(c.function.arguments) }));
    }
    return out;
  });
}

// Every event the client applied, in order.
function recorder() {
  const events = [];
  return { events, subscriber: { onEvent: ({ event }) => { events.push(event.type); } } };
}

function agentFor(sessionId) {
  return new HttpAgent({ url: `${gw.url}/ag-ui/${sessionId}`, threadId: sessionId });
}

test('a text run: RUN_STARTED, one text message, RUN_FINISHED with usage; messages equal the session\'s', async () => {
  const sessionId = await createSession();
  const agent = agentFor(sessionId);
  agent.addMessage({ id: 'u1', role: 'user', content: 'hello from ag-ui' });
  const rec = recorder();
  let finished;
  const result = await agent.runAgent({}, { ...rec.subscriber, onRunFinishedEvent: ({ event }) => { finished = event; } });
  assert.equal(rec.events[0], 'RUN_STARTED');
  assert.equal(rec.events.at(-1), 'RUN_FINISHED');
  assert.ok(rec.events.includes('TEXT_MESSAGE_CONTENT'));
  assert.equal(finished.threadId, sessionId);
  assert.equal(finished.outcome.type, 'success');
  assert.ok(finished.usage[0].outputTokens > 0);
  assert.equal(result.newMessages.length, 1);
  assert.equal(result.newMessages[0].content, 'hello from ag-ui');
  assert.deepEqual(rebuilt(agent), await persistedMessages(sessionId));

  // A second turn on the same thread: the client's copy of the conversation is sent back,
  // only its newest user message is new.
  agent.addMessage({ id: 'u2', role: 'user', content: 'and again' });
  await agent.runAgent({});
  assert.deepEqual(rebuilt(agent), await persistedMessages(sessionId));
  assert.equal(agent.messages.length, 4);
});

test('a tool-call run with the built-in calculator: tool call, its result, then the answer', async () => {
  const sessionId = await createSession({ mock: { tool_calls: [{ name: 'calculator', args: { expression: '2+3*4' } }] } });
  const agent = agentFor(sessionId);
  agent.addMessage({ id: 'u1', role: 'user', content: 'what is 2+3*4' });
  const rec = recorder();
  await agent.runAgent({}, rec.subscriber);
  for (const t of ['TOOL_CALL_START', 'TOOL_CALL_ARGS', 'TOOL_CALL_END', 'TOOL_CALL_RESULT']) assert.ok(rec.events.includes(t), t);
  const tool = agent.messages.find((m) => m.role === 'tool');
  assert.equal(tool.content, '14');
  assert.deepEqual(rebuilt(agent), await persistedMessages(sessionId));
});

test('a failing run ends with RUN_ERROR carrying the error code; the partial answer is kept', async () => {
  const sessionId = await createSession({ mock: { tokens: 5, fail_after: 2 } });
  const agent = agentFor(sessionId);
  agent.addMessage({ id: 'u1', role: 'user', content: 'fail please' });
  const rec = recorder();
  let runError;
  // (runAgent 1.0 resolves after RUN_ERROR: the subscriber sees it.)
  await agent.runAgent({}, { ...rec.subscriber, onRunErrorEvent: ({ event }) => { runError = event; } });
  assert.equal(rec.events.at(-1), 'RUN_ERROR');
  assert.ok(runError.code && runError.code !== 'error', `code: ${runError.code}`);
  assert.deepEqual(rebuilt(agent), await persistedMessages(sessionId));
});

test('a plan: STEP_STARTED/STEP_FINISHED in pairs, all closed at RUN_FINISHED (verifyEvents on the raw stream)', async () => {
  const sessionId = await createSession({ mock: { plan: ['look', 'answer'] } });
  const agent = agentFor(sessionId);
  agent.addMessage({ id: 'u1', role: 'user', content: 'plan it' });
  // The raw event stream through verifyEvents alone, as a custom pipeline would use it.
  const input = { threadId: sessionId, runId: 'run-plan-1', messages: agent.messages, tools: [], context: [], state: {} };
  const events = [];
  await new Promise((resolve, reject) => {
    agent.run(input).pipe(verifyEvents(false)).subscribe({ next: (e) => events.push(e), error: reject, complete: resolve });
  });
  const steps = events.filter((e) => e.type.startsWith('STEP_')).map((e) => `${e.type}:${e.stepName}`);
  assert.deepEqual(steps, ['STEP_STARTED:look', 'STEP_FINISHED:look', 'STEP_STARTED:answer', 'STEP_FINISHED:answer']);
  assert.equal(events.at(-1).type, 'RUN_FINISHED');
  assert.equal(events.at(-1).runId, 'run-plan-1');
});

test('POST /ag-ui with a new threadId creates that session (config from forwardedProps.session)', async () => {
  const threadId = crypto.randomUUID();
  const agent = new HttpAgent({ url: `${gw.url}/ag-ui`, threadId });
  agent.addMessage({ id: 'u1', role: 'user', content: 'new thread' });
  await agent.runAgent({ forwardedProps: { session: { title: 'from ag-ui', config: { mock: { tokens: 3 } } } } });
  const res = await fetch(`${gw.url}/sessions/${threadId}`);
  assert.equal(res.status, 200);
  const session = await res.json();
  assert.equal(session.title, 'from ag-ui');
  assert.deepEqual(rebuilt(agent), await persistedMessages(threadId));
});

test('a client tool round trip: the run ends at TOOL_CALL_END, the tool message continues the conversation', async () => {
  // The mock calls the tool its config names; the run offers it as a client tool (RunAgentInput.tools).
  const sessionId = await createSession({ mock: { tool_calls: [{ name: 'confirm', args: { question: 'go on?' } }] } });
  const agent = agentFor(sessionId);
  const tools = [{
    name: 'confirm', description: 'asks the user to confirm',
    parameters: { type: 'object', properties: { question: { type: 'string' } }, required: ['question'] },
  }];
  agent.addMessage({ id: 'u1', role: 'user', content: 'ask me first' });
  const first = recorder();
  let finished;
  await agent.runAgent({ tools }, { ...first.subscriber, onRunFinishedEvent: ({ event }) => { finished = event; } });
  assert.deepEqual(first.events.filter((t) => t.startsWith('TOOL_CALL_')), ['TOOL_CALL_START', 'TOOL_CALL_ARGS', 'TOOL_CALL_END']);
  assert.equal(first.events.at(-1), 'RUN_FINISHED');
  assert.equal(finished.outcome.type, 'success');
  const asked = agent.messages.at(-1);
  assert.equal(asked.role, 'assistant');
  assert.equal(asked.toolCalls.length, 1);
  assert.equal(asked.toolCalls[0].function.name, 'confirm');
  assert.deepEqual(JSON.parse(asked.toolCalls[0].function.arguments), { question: 'go on?' });
  assert.deepEqual(rebuilt(agent), await persistedMessages(sessionId));

  // The front end ran its tool: the result goes back as a tool message, and the model answers.
  agent.addMessage({ id: 't1', role: 'tool', toolCallId: asked.toolCalls[0].id, content: 'yes' });
  const second = recorder();
  await agent.runAgent({ tools }, second.subscriber);
  assert.ok(!second.events.some((t) => t.startsWith('TOOL_CALL_')), 'the continuation calls no tool again');
  assert.ok(second.events.includes('TEXT_MESSAGE_CONTENT'));
  assert.equal(agent.messages.at(-1).content, 'ask me first');  // the mock echoes the user's message
  assert.deepEqual(rebuilt(agent), await persistedMessages(sessionId));
  assert.equal(agent.messages.length, 4);

  // The same result again: the call is no longer pending (400, nothing stored).
  const res = await fetch(`${gw.url}/ag-ui/${sessionId}`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ threadId: sessionId, runId: crypto.randomUUID(), messages: [{ id: 't2', role: 'tool', toolCallId: asked.toolCalls[0].id, content: 'yes' }], tools, context: [], state: {} }),
  });
  assert.equal(res.status, 400);
  assert.equal((await persistedMessages(sessionId)).length, 4);
});

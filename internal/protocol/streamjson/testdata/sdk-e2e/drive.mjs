// Drives the arbor binary through the real Claude Agent SDK (query()), as a
// program built on that SDK would, for streamjson's sdk_e2e_test.go.
//
// Usage: ARBOR_SDK_E2E='{"cli":…,"cwd":…,"env":{…}}' node drive.mjs <scenario>
//   cli  the arbor binary (no .js/.mjs suffix, so the SDK executes it directly)
//   cwd  the workspace arbor runs in
//   env  arbor's whole environment (the SDK's options.env replaces, not merges)
//
// Output (stdout), one JSON object per line:
//   every message query() yields, unchanged (they have a "type");
//   the driver's own records, which have a "driver" key:
//     {"driver":"can_use_tool","tool_name":…,"input":…,"tool_use_id":…}
//     {"driver":"interrupted","reply":…}   what q.interrupt() resolved to
//     {"driver":"done"}                    the iterator ended without throwing
//     {"driver":"error","message":…}       something threw; exit status 1
//
// Scenarios:
//   plain      string prompt, no callbacks.
//   tool       string prompt, permissionMode "default", a canUseTool callback
//              that records each call and allows it with the input unchanged.
//   interrupt  streaming input: one user message, and the input stays open.
//              When a line arrives on the driver's stdin (the test writes one
//              once the model request is in flight), q.interrupt() is called,
//              then the input ends; messages are collected until the
//              iterator ends.
//   options    string prompt c.prompt with c.options merged into query()'s
//              options; c.canUseTool ("allow", "deny", "deny-interrupt")
//              adds a canUseTool callback that records each call and answers
//              so; c.preToolUseDeny adds a PreToolUse hook (matcher
//              c.preToolUseDeny) that records each call and denies it;
//              c.recordHooks (event names; "*" for every event of the
//              SDK's HOOK_EVENTS) adds for each a hook that records its
//              call and answers {}.
//   interrupt-asking  streaming input, permissionMode "default": a canUseTool
//              callback that records the call and never answers, but
//              records {"driver":"aborted","message":"while open"|"at the
//              end"} when its signal aborts (arbor's control_cancel_request);
//              q.interrupt() once it was called, then up to 10 s for the
//              abort with the input still open, then the input ends.
//   interrupt-early  streaming input: q.interrupt() right after the SDK
//              wrote the prompt, then the input ends.
//   image      streaming input: one user message of an image block (a 1×1
//              PNG, base64) and a text block, then the input ends.
import { query, HOOK_EVENTS } from '@anthropic-ai/claude-agent-sdk';
import { createInterface } from 'node:readline';

const emit = (obj) => process.stdout.write(JSON.stringify(obj) + '\n');

function config() {
  const raw = process.env.ARBOR_SDK_E2E;
  if (!raw) throw new Error('ARBOR_SDK_E2E is not set');
  const c = JSON.parse(raw);
  for (const k of ['cli', 'cwd', 'env']) {
    if (!c[k]) throw new Error(`ARBOR_SDK_E2E has no "${k}"`);
  }
  return c;
}

function baseOptions(c) {
  return {
    pathToClaudeCodeExecutable: c.cli,
    cwd: c.cwd,
    env: c.env,
    // arbor's diagnostics go to the driver's stderr, which the test shows on failure.
    stderr: (data) => process.stderr.write(data),
  };
}

// goAhead waits for the first line written to the driver's stdin; stop
// releases stdin so that an early end does not keep node alive.
function goAhead() {
  const rl = createInterface({ input: process.stdin });
  const line = new Promise((resolve, reject) => {
    rl.once('line', (l) => { resolve(l); rl.close(); });
    rl.once('close', () => reject(new Error('driver stdin closed before the go-ahead line')));
  });
  return { line, stop: () => { rl.close(); process.stdin.destroy(); } };
}

async function collect(q) {
  for await (const m of q) emit(m);
}

async function plain(c) {
  await collect(query({ prompt: 'Say hello', options: baseOptions(c) }));
}

async function tool(c) {
  const q = query({
    prompt: 'Create the file made.txt containing x.',
    options: {
      ...baseOptions(c),
      permissionMode: 'default',
      canUseTool: async (toolName, input, opts) => {
        emit({ driver: 'can_use_tool', tool_name: toolName, input, tool_use_id: opts.toolUseID });
        return { behavior: 'allow', updatedInput: input };
      },
    },
  });
  await collect(q);
}

async function interrupt(c) {
  let endInput;
  const inputEnded = new Promise((resolve) => { endInput = resolve; });
  async function* input() {
    yield { type: 'user', message: { role: 'user', content: 'Tell me a long story.' }, parent_tool_use_id: null, session_id: '' };
    await inputEnded; // keep arbor's stdin open until the interrupt was answered
  }
  const q = query({ prompt: input(), options: baseOptions(c) });
  const iterating = collect(q);
  iterating.catch(() => {}); // handled by the awaits below, whichever path runs
  const go = goAhead();
  const first = await Promise.race([
    iterating.then(() => 'ended', () => 'ended'),
    go.line.then(() => 'go', () => 'no-go'),
  ]);
  if (first !== 'go') {
    go.stop();
    endInput();
    await iterating; // rethrows the iterator's error, if any
    throw new Error(first === 'ended' ? 'the query ended before the interrupt' : 'no go-ahead to interrupt');
  }
  try {
    emit({ driver: 'interrupted', reply: (await q.interrupt()) ?? null });
  } finally {
    endInput();
  }
  await iterating;
}

async function options(c) {
  const opts = { ...baseOptions(c), ...(c.options ?? {}) };
  if (c.canUseTool) {
    opts.canUseTool = async (toolName, input, o) => {
      emit({ driver: 'can_use_tool', tool_name: toolName, input, tool_use_id: o.toolUseID });
      if (c.canUseTool === 'allow') return { behavior: 'allow', updatedInput: input };
      return { behavior: 'deny', message: 'not this one', interrupt: c.canUseTool === 'deny-interrupt' };
    };
  }
  if (c.preToolUseDeny) {
    opts.hooks = {
      PreToolUse: [{
        matcher: c.preToolUseDeny,
        hooks: [async (input) => {
          emit({ driver: 'hook', tool_name: input.tool_name, input: input.tool_input, tool_use_id: input.tool_use_id, message: input.hook_event_name });
          return { hookSpecificOutput: { hookEventName: 'PreToolUse', permissionDecision: 'deny', permissionDecisionReason: 'blocked by the hook' } };
        }],
      }],
    };
  }
  // "*" stands for every event of the SDK's HOOK_EVENTS.
  const events = (c.recordHooks ?? []).flatMap((e) => (e === '*' ? HOOK_EVENTS : [e]));
  for (const event of events) {
    opts.hooks = {
      ...(opts.hooks ?? {}),
      [event]: [{
        hooks: [async (input) => {
          emit({ driver: 'hook', tool_name: input.tool_name, tool_use_id: input.tool_use_id, message: input.hook_event_name,
            source: input.source, trigger: input.trigger, custom_instructions: input.custom_instructions });
          return {};
        }],
      }],
    };
  }
  await collect(query({ prompt: c.prompt ?? 'Say hello', options: opts }));
}

async function interruptAsking(c) {
  let endInput, asked, aborted;
  let open = true; // the input, so arbor's session, is still open
  const inputEnded = new Promise((resolve) => { endInput = () => { open = false; resolve(); }; });
  const askedOnce = new Promise((resolve) => { asked = resolve; });
  const abortedOnce = new Promise((resolve) => { aborted = resolve; });
  async function* input() {
    yield { type: 'user', message: { role: 'user', content: 'Write a.txt.' }, parent_tool_use_id: null, session_id: '' };
    await inputEnded;
  }
  const opts = {
    ...baseOptions(c),
    permissionMode: 'default',
    canUseTool: (toolName, input, o) => new Promise((resolve, reject) => {
      emit({ driver: 'can_use_tool', tool_name: toolName, input, tool_use_id: o.toolUseID });
      o.signal.addEventListener('abort', () => {
        emit({ driver: 'aborted', tool_use_id: o.toolUseID, message: open ? 'while open' : 'at the end' });
        aborted();
        reject(new Error('withdrawn'));
      });
      asked();
    }),
  };
  const q = query({ prompt: input(), options: opts });
  const iterating = collect(q);
  iterating.catch(() => {});
  const first = await Promise.race([askedOnce.then(() => 'asked'), iterating.then(() => 'ended', () => 'ended')]);
  if (first !== 'asked') {
    endInput();
    await iterating;
    throw new Error('the turn ended without asking');
  }
  try {
    emit({ driver: 'interrupted', reply: (await q.interrupt()) ?? null });
    // The session stays open a while: a withdrawn request aborts the
    // callback now, not when the query ends.
    await Promise.race([abortedOnce, new Promise((resolve) => setTimeout(resolve, 10000).unref())]);
  } finally {
    endInput();
  }
  await iterating;
}

// interruptEarly: streaming input; q.interrupt() right after the SDK wrote
// the prompt (it asks the input for its next message then), before the
// turn could start.
async function interruptEarly(c) {
  let endInput, promptWritten;
  const inputEnded = new Promise((resolve) => { endInput = resolve; });
  const written = new Promise((resolve) => { promptWritten = resolve; });
  async function* input() {
    yield { type: 'user', message: { role: 'user', content: 'Tell me a long story.' }, parent_tool_use_id: null, session_id: '' };
    promptWritten();
    await inputEnded;
  }
  const q = query({ prompt: input(), options: baseOptions(c) });
  const iterating = collect(q);
  iterating.catch(() => {});
  try {
    await written;
    emit({ driver: 'interrupted', reply: (await q.interrupt()) ?? null });
  } finally {
    endInput();
  }
  await iterating;
}

// TINY_PNG is a 1×1 PNG, base64: the image scenario's image.
const TINY_PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';

// image: a user message with an image block, as a program sends a screenshot.
async function image(c) {
  async function* input() {
    yield {
      type: 'user', parent_tool_use_id: null, session_id: '',
      message: { role: 'user', content: [
        { type: 'image', source: { type: 'base64', media_type: 'image/png', data: TINY_PNG } },
        { type: 'text', text: 'What is in the picture?' },
      ] },
    };
  }
  await collect(query({ prompt: input(), options: baseOptions(c) }));
}

const scenarios = { plain, tool, interrupt, options, 'interrupt-asking': interruptAsking, 'interrupt-early': interruptEarly, image };

async function main() {
  const name = process.argv[2];
  const run = scenarios[name];
  if (!run) throw new Error(`unknown scenario ${JSON.stringify(name)}; want one of ${Object.keys(scenarios).join(', ')}`);
  await run(config());
}

try {
  await main();
  emit({ driver: 'done' });
} catch (e) {
  emit({ driver: 'error', message: String(e?.message ?? e) });
  process.exitCode = 1;
}

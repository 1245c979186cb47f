// An editor's side of the Agent Client Protocol, on the protocol's TypeScript SDK (the
// ClientSideConnection editors embed), driving `python -m etcode acp` over its stdio.
//
//   node client.mjs SCENARIO.json
//
// The scenario names the SDK ("zed": @zed-industries/agent-client-protocol, "current":
// @agentclientprotocol/sdk), how to start the agent, what the client offers and answers,
// and the steps to run. One JSON transcript goes to stdout: every session/update, every
// permission request, every fs call, and each step's result or JSON-RPC error.
import { spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { Readable, Writable } from "node:stream";

const scenario = JSON.parse(readFileSync(process.argv[2], "utf8"));
const sdk =
  scenario.sdk === "zed"
    ? await import("@zed-industries/agent-client-protocol")
    : await import("@agentclientprotocol/sdk");
const STEP_MS = scenario.stepMs ?? 60000;

const transcript = { updates: [], permissions: [], fs: [], steps: [] };
const waiters = []; // [predicate, resolve]

function withLimit(promise, what, ms = STEP_MS) {
  let timer;
  const limit = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer to ${what} in ${ms} ms`)), ms);
  });
  return Promise.race([promise, limit]).finally(() => clearTimeout(timer));
}

function seen(predicate, what) {
  if (transcript.updates.some(predicate)) return Promise.resolve();
  return withLimit(new Promise((resolve) => waiters.push([predicate, resolve])), what);
}

const answers = [...(scenario.answers ?? [])];
const buffers = { ...(scenario.buffers ?? {}) };

class RecordingClient {
  async sessionUpdate(params) {
    transcript.updates.push(params);
    for (const [predicate, resolve] of waiters) if (predicate(params)) resolve();
  }
  async requestPermission(params) {
    transcript.permissions.push(params);
    const answer = answers.shift() ?? "reject_once";
    if (answer === "cancel") return { outcome: { outcome: "cancelled" } };
    const option = params.options.find((o) => o.kind === answer);
    return { outcome: { outcome: "selected", optionId: option.optionId } };
  }
  async readTextFile(params) {
    transcript.fs.push(["read", params.path]);
    const content = params.path in buffers ? buffers[params.path] : readFileSync(params.path, "utf8");
    return { content };
  }
  async writeTextFile(params) {
    transcript.fs.push(["write", params.path]);
    buffers[params.path] = params.content;
    writeFileSync(params.path, params.content, "utf8");
    return {};
  }
}

const agent = spawn(scenario.python, ["-m", "etcode", "acp", ...(scenario.args ?? [])], {
  cwd: scenario.cwd,
  env: scenario.env,
  stdio: ["pipe", "pipe", "inherit"],
});
const exited = new Promise((resolve) => agent.on("exit", (code, signal) => resolve({ code, signal })));
const stream = sdk.ndJsonStream(Writable.toWeb(agent.stdin), Readable.toWeb(agent.stdout));
const conn = new sdk.ClientSideConnection(() => new RecordingClient(), stream);

let sessionId = null;

async function runStep(step) {
  switch (step.op) {
    case "initialize":
      return conn.initialize({
        protocolVersion: sdk.PROTOCOL_VERSION,
        clientCapabilities: { fs: { readTextFile: !!step.fs, writeTextFile: !!step.fs }, terminal: false },
      });
    case "new": {
      const response = await conn.newSession({ cwd: scenario.cwd, mcpServers: [] });
      sessionId = response.sessionId;
      return response;
    }
    case "load":
      sessionId = step.sessionId;
      return conn.loadSession({ cwd: scenario.cwd, sessionId, mcpServers: [] });
    case "prompt": {
      const running = conn.prompt({ sessionId, prompt: [{ type: "text", text: step.text }] });
      if (step.cancelAfterFirstChunk) {
        await seen((u) => u.update.sessionUpdate === "agent_message_chunk", "the first chunk");
        await conn.cancel({ sessionId });
      }
      return running;
    }
    case "unknown_method":
      return conn.extMethod(step.method, {});
    case "wrong_params": // a prompt whose prompt is not a list of content blocks
      return conn.prompt({ sessionId, prompt: "not a list" });
    default:
      throw new Error(`unknown step ${step.op}`);
  }
}

let failed = false;
for (const step of scenario.steps) {
  const record = { op: step.op };
  try {
    record.result = await withLimit(runStep(step), step.op);
    record.ok = true;
  } catch (err) {
    record.ok = false;
    record.error = { code: err?.code ?? null, message: String(err?.message ?? err), data: err?.data ?? null };
    if (!step.expectError) failed = true;
  }
  record.updatesSoFar = transcript.updates.length;
  transcript.steps.push(record);
  if (failed) break;
}

agent.stdin.end(); // the editor closes: the agent must exit by itself
transcript.exit = await withLimit(exited, "the agent's exit", 30000).catch((err) => {
  agent.kill("SIGKILL");
  return { error: String(err.message) };
});
process.stdout.write(JSON.stringify(transcript) + "\n");
process.exit(failed ? 1 : 0);

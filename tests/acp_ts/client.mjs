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
import { StringDecoder } from "node:string_decoder";

const scenario = JSON.parse(readFileSync(process.argv[2], "utf8"));
const sdk =
  scenario.sdk === "zed"
    ? await import("@zed-industries/agent-client-protocol")
    : await import("@agentclientprotocol/sdk");
const STEP_MS = scenario.stepMs ?? 60000;

// Every message the agent sends is checked against the protocol's zod schemas: those of the
// current SDK and, for what it knows, the Zed-era one (0.4.5: `models`, session/set_model).
// These schemas are lenient (an invalid optional field or list item is dropped, not refused),
// so a message is a violation when parsing fails OR the parsed copy lost part of it; only
// keys no schema knows (`EXTENSIONS`) may be left out.
const current = await import(new URL("./node_modules/@agentclientprotocol/sdk/dist/schema/zod.gen.js", import.meta.url));
const zed = await import(new URL("./node_modules/@zed-industries/agent-client-protocol/dist/schema.js", import.meta.url));
const SCHEMAS = {
  "session/update": [current.zSessionNotification, zed.sessionNotificationSchema],
  "session/request_permission": [current.zRequestPermissionRequest, zed.requestPermissionRequestSchema],
  "fs/read_text_file": [current.zReadTextFileRequest],
  "fs/write_text_file": [current.zWriteTextFileRequest],
  initialize: [current.zInitializeResponse],
  new: [current.zNewSessionResponse, zed.newSessionResponseSchema],
  load: [current.zLoadSessionResponse, zed.loadSessionResponseSchema],
  prompt: [current.zPromptResponse, zed.promptResponseSchema],
  set_config_option: [current.zSetSessionConfigOptionResponse],
};
const EXTENSIONS = new Set(["models"]); // the unstable model state the current schema dropped

function lost(raw, parsed, path) {
  if (Array.isArray(raw)) {
    if (!Array.isArray(parsed) || parsed.length !== raw.length) return [`${path}: list changed`];
    return raw.flatMap((item, i) => lost(item, parsed[i], `${path}[${i}]`));
  }
  if (raw !== null && typeof raw === "object") {
    if (parsed === null || typeof parsed !== "object") return [`${path}: dropped`];
    return Object.keys(raw).flatMap((key) =>
      key in parsed && parsed[key] !== undefined ? lost(raw[key], parsed[key], `${path}.${key}`) : [`${path}.${key}`],
    );
  }
  return raw === parsed ? [] : [`${path}: ${JSON.stringify(raw)} became ${JSON.stringify(parsed)}`];
}

function validate(what, raw) {
  const schemas = SCHEMAS[what] ?? [];
  schemas.forEach((schema, index) => {
    const sdkName = index === 0 ? "current" : "zed";
    if (what === "session/update" && sdkName === "zed" && !ZED_UPDATES.has(raw?.update?.sessionUpdate)) return;
    const parsed = schema.safeParse(raw);
    if (!parsed.success) {
      transcript.violations.push({ what, sdk: sdkName, issues: parsed.error.issues.slice(0, 5), raw });
      return;
    }
    const missing = lost(raw, parsed.data, "").filter((p) => !EXTENSIONS.has(p.split(".").pop()));
    const unknownToZed = sdkName === "zed" ? missing.filter((p) => /configOptions|_meta/.test(p)) : [];
    const real = missing.filter((p) => !unknownToZed.includes(p));
    if (real.length) transcript.violations.push({ what, sdk: sdkName, lost: real.slice(0, 10), raw });
  });
}
// The updates the Zed-era schema knows (later kinds are checked by the current one only).
const ZED_UPDATES = new Set([
  "user_message_chunk", "agent_message_chunk", "agent_thought_chunk", "tool_call",
  "tool_call_update", "plan", "available_commands_update", "current_mode_update",
]);

const transcript = { updates: [], permissions: [], fs: [], steps: [], violations: [], checked: 0 };
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
// A copy of what the agent writes, line by line, for the schema checks.
const decoder = new StringDecoder("utf8");
let pendingText = "";
agent.stdout.on("data", (chunk) => {
  pendingText += decoder.write(chunk);
  let newline;
  while ((newline = pendingText.indexOf("\n")) >= 0) {
    const line = pendingText.slice(0, newline);
    pendingText = pendingText.slice(newline + 1);
    let message;
    try {
      message = JSON.parse(line);
    } catch {
      transcript.violations.push({ what: "not JSON", raw: line.slice(0, 300) });
      continue;
    }
    if (typeof message.method === "string" && SCHEMAS[message.method]) {
      transcript.checked += 1;
      validate(message.method, message.params);
    }
  }
});
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
    case "set_config_option":
      return conn.setSessionConfigOption({ sessionId, configId: step.configId, value: step.value });
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
    if (SCHEMAS[step.op] && record.result !== undefined) {
      transcript.checked += 1;
      validate(step.op, record.result);
    }
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

// runner-client.mjs BASE TOKEN WORKSPACE — calls sbx-httpd exactly as the
// real JavaScript RunnerClient does: fetch, the clock offset from the Date
// header of /health, bearer + HMAC-SHA256 signatures over
// `${timestamp}\n${sha256hex(body)}`, managed executions polled every
// 200 ms until terminal. Exits non-zero on the first broken expectation.
import { createHash, createHmac } from "node:crypto";

const [base, token, workspace] = process.argv.slice(2);
let offset = 0;

function check(cond, what) {
  if (!cond) {
    console.error(`not ok: ${what}`);
    process.exit(1);
  }
  console.log(`ok: ${what}`);
}

async function call(method, path, body, signedCall) {
  const headers = { authorization: `Bearer ${token}` };
  const text = body === undefined ? undefined : JSON.stringify(body);
  if (signedCall) {
    const timestamp = String(Date.now() + offset);
    const hash = createHash("sha256").update(text ?? "", "utf8").digest("hex");
    headers["x-science-execution-timestamp"] = timestamp;
    headers["x-science-execution-signature"] = createHmac("sha256", token)
      .update(`${timestamp}\n${hash}`, "utf8").digest("hex");
  }
  if (text !== undefined) headers["content-type"] = "application/json";
  const sent = Date.now();
  const res = await fetch(base + path, { method, headers, body: text });
  const received = Date.now();
  const date = res.headers.get("date");
  if (date) offset = Math.round(Date.parse(date) - (sent + received) / 2);
  return { status: res.status, json: await res.json(), date };
}

const epoch = {
  createdAt: new Date().toISOString(), environmentRevisionId: "rev-1", id: "epoch-1",
  mounts: [{ mode: "read-write", source: "workspace" }], networkPolicy: "none", reason: "test",
  secretRefs: [], sessionId: "node-session",
};
const request = (executionId, code) => ({
  agentId: "main", code, executionId, permissionEpoch: epoch, workspaceRoot: workspace,
});

const health = await call("GET", "/health");
check(health.status === 200 && health.json.status === "ok", "GET /health answers ok");
check(typeof health.date === "string" && !Number.isNaN(Date.parse(health.date)), "responses carry a Date header");
check(Math.abs(offset) < 5000, `the clock offset is small (${offset} ms)`);

const run = await call("POST", "/execute-shell", request(`node-${Date.now()}`, "echo from-node; exit 5"), true);
check(run.status === 200, `a signed /execute-shell is accepted (${run.status} ${JSON.stringify(run.json)})`);
check(run.json.exitCode === 5 && run.json.stdout === "from-node\n", "its result carries exitCode and stdout");
check(run.json.workspaceSnapshot?.digest?.startsWith("sha256:"), "and the workspace snapshot");

const replay = await call("POST", "/execute-shell", request(run.json.executionId, "true"), true);
check(replay.status === 409, `a replayed executionId is 409 (${replay.status} ${JSON.stringify(replay.json)})`);

const saved = token;
const forged = await (async () => {
  const body = JSON.stringify(request(`forged-${Date.now()}`, "true"));
  const ts = String(Date.now());
  const sig = createHmac("sha256", saved + "x").update(`${ts}\n${createHash("sha256").update(body).digest("hex")}`).digest("hex");
  const res = await fetch(base + "/execute-shell", {
    method: "POST", body, headers: { authorization: `Bearer ${saved}`, "x-science-execution-timestamp": ts,
      "x-science-execution-signature": sig },
  });
  return res.status;
})();
check(forged === 401, "a signature under another key is 401");

const id = `node-managed-${Date.now()}`;
const started = await call("POST", "/shell-executions", request(id, "echo managed; echo err >&2"), true);
check(started.status === 202 && started.json.id === id && started.json.state === "queued", "POST /shell-executions is 202 queued");
check(started.json.sessionId === "node-session" && started.json.agentId === "main", "with the owner the client sent");
const owner = "sessionId=node-session&agentId=main";
let record;
for (let i = 0; i < 150; i++) {
  record = (await call("GET", `/shell-executions/${id}?${owner}`)).json;
  if (["completed", "failed", "cancelled", "unknown"].includes(record.state)) break;
  await new Promise((r) => setTimeout(r, 200));
}
check(record.state === "completed", "the managed execution completes");
check(record.result && record.version?.digest && record.result.workspaceSnapshot, "a terminal record has result, version and workspaceSnapshot");
const logs = (await call("GET", `/shell-executions/${id}/logs?${owner}&cursor=0`)).json;
const text = logs.chunks.map((c) => `${c.stream}:${c.text}`).join("");
check(text.includes("stdout:managed\n") && text.includes("stderr:err\n"), "its logs hold both streams");
check(logs.nextCursor === logs.chunks.length && logs.truncated === false, "one page, nextCursor at the last chunk");

// The setup view with environments off: 200 and state disabled, as upstream.
const setup = await call("GET", "/environment-setup");
check(setup.status === 200 && setup.json.state === "disabled" && setup.json.phase === "disabled" && setup.json.error === null,
  `GET /environment-setup without environments is 200 disabled (${setup.status} ${JSON.stringify(setup.json)})`);

// /status while a run goes on: running from the moment it left the queue,
// with the startedAt its result will carry.
const slowId = `node-status-${Date.now()}`;
const slow = call("POST", "/execute-shell", request(slowId, "sleep 1; echo slept"), true);
let listed;
for (let i = 0; i < 100 && !listed; i++) {
  const st = (await call("GET", "/status")).json;
  listed = st.activeExecutions.find((a) => a.executionId === slowId && a.status === "running");
  if (!listed) await new Promise((r) => setTimeout(r, 20));
}
check(listed && typeof listed.startedAt === "string", "/status lists the run as running with startedAt");
const slept = await slow;
check(slept.status === 200 && slept.json.stdout === "slept\n", "the run completes");
check(slept.json.startedAt === listed.startedAt, `the result's startedAt is the one /status showed (${slept.json.startedAt} ${listed.startedAt})`);

// remote-flow.mjs BASE TOKEN — the remote flow as the newest real client
// drives it: a verified streamed upload into a runner-side workspace key, a
// managed shell execution on that key (polled every 200 ms, logs paged with
// nextCursor), the file listing, an immutable snapshot read back after the
// live workspace is deleted, and a skill package mounted into a run.
import { createHash, createHmac } from "node:crypto";

const [base, token] = process.argv.slice(2);
const key = `node-flow/${Date.now()}`;

function check(cond, what) {
  if (!cond) {
    console.error(`not ok: ${what}`);
    process.exit(1);
  }
  console.log(`ok: ${what}`);
}

const sha256 = (data) => createHash("sha256").update(data).digest("hex");

async function call(method, path, { json, raw, headers = {}, signed = false } = {}) {
  const h = { authorization: `Bearer ${token}`, ...headers };
  const body = json !== undefined ? JSON.stringify(json) : raw;
  if (signed) {
    const ts = String(Date.now());
    h["x-science-execution-timestamp"] = ts;
    h["x-science-execution-signature"] = createHmac("sha256", token).update(`${ts}\n${sha256(body ?? "")}`).digest("hex");
  }
  const res = await fetch(base + path, { method, headers: h, body, duplex: "half" });
  const buf = Buffer.from(await res.arrayBuffer());
  let parsed = null;
  try { parsed = JSON.parse(buf.toString("utf8")); } catch { /* raw bytes */ }
  return { status: res.status, json: parsed, bytes: buf, type: res.headers.get("content-type") };
}

const q = (params) => "?" + new URLSearchParams(params).toString();

// 1. A verified upload, streamed from a ReadableStream as the client does.
const script = Buffer.from("#!/bin/sh\necho \"input has $(wc -c < data/input.bin) bytes\"\n");
const input = Buffer.alloc(3 * 1024 * 1024 + 7, 0x61);
for (const [path, bytes, exec] of [["run.sh", script, 0o755 & 0o111], ["data/input.bin", input, 0]]) {
  const stream = new ReadableStream({
    start(controller) {
      for (let i = 0; i < bytes.length; i += 65536) controller.enqueue(bytes.subarray(i, i + 65536));
      controller.close();
    },
  });
  const up = await call("PUT", "/remote-workspace/transfer-file" + q({ workspace: key, path, conflict: "reject" }), {
    raw: stream,
    headers: { "x-workspace-size": String(bytes.length), "x-workspace-sha256": sha256(bytes), "x-workspace-executable": String(exec) },
  });
  check(up.status === 201 && up.json.sha256 === sha256(bytes) && up.json.size === bytes.length, `verified upload of ${path} (${up.status})`);
}
const again = await call("PUT", "/remote-workspace/transfer-file" + q({ workspace: key, path: "run.sh" }), {
  raw: script, headers: { "x-workspace-size": String(script.length), "x-workspace-sha256": sha256(script) },
});
check(again.status === 400, "a verified collision is 400, not 409");

// 2. A managed execution on the key, polled until terminal.
const epoch = { createdAt: new Date().toISOString(), environmentRevisionId: "rev-1", id: "epoch-1",
  mounts: [{ mode: "read-write", source: "workspace" }], networkPolicy: "none", reason: "t", secretRefs: [], sessionId: "s1" };
const id = `flow-${Date.now()}`;
const start = await call("POST", "/shell-executions", { signed: true, json: {
  agentId: "main", code: "./run.sh; echo done > out.txt", executionId: id, permissionEpoch: epoch,
  workspaceRoot: "/nonexistent-ignored-with-a-key", runnerWorkspaceKey: key } });
check(start.status === 202 && start.json.id === id, `managed execution on the key accepted (${start.status} ${JSON.stringify(start.json)})`);
let rec;
for (;;) {
  rec = await call("GET", `/shell-executions/${id}` + q({ sessionId: "s1", agentId: "main" }));
  if (["completed", "failed", "cancelled", "unknown"].includes(rec.json.state)) break;
  await new Promise((r) => setTimeout(r, 200));
}
check(rec.json.state === "completed" && rec.json.result?.exitCode === 0, `it completed (${JSON.stringify(rec.json.result?.exitCode)})`);
check(rec.json.version && rec.json.result.workspaceSnapshot, "with version and workspaceSnapshot");
let cursor = 0, text = "";
for (;;) {
  const page = await call("GET", `/shell-executions/${id}/logs` + q({ sessionId: "s1", agentId: "main", cursor: String(cursor) }));
  text += page.json.chunks.map((c) => c.text).join("");
  cursor = page.json.nextCursor;
  if (!page.json.truncated) break;
}
check(text.includes(`input has ${input.length} bytes`), "the logs show the uploaded input");

// 3. The listing, a snapshot, and reads after the live workspace is gone.
const list = await call("POST", "/remote-workspace/files", { json: { workspace: key } });
check(list.status === 200 && JSON.stringify(list.json.map((f) => f.path)) === JSON.stringify(["data/input.bin", "out.txt", "run.sh"]),
  `the listing is sorted by path (${JSON.stringify(list.json?.map((f) => f.path))})`);
const snap = await call("POST", "/remote-workspace/snapshots", { json: { workspace: key, paths: ["out.txt", "data"] } });
check(snap.status === 201 && snap.json.files.length === 2, `snapshot of the selected paths (${snap.status})`);
// The API's transfer manager: a snapshot's files uploaded elsewhere with the
// metadata exactly as the snapshot gave it (executable is mode & 0o111).
const source = await call("POST", "/remote-workspace/snapshots", { json: { workspace: key, paths: ["run.sh", "data"] } });
check(source.status === 201 && JSON.stringify(source.json.files.map((f) => [f.path, f.executable])) === '[["data/input.bin",0],["run.sh",73]]',
  `a snapshot gives executable as mode bits (${JSON.stringify(source.json?.files)})`);
for (const f of source.json.files) {
  const body = await call("GET", `/remote-workspace/snapshots/${source.json.id}/file` + q({ workspace: key, path: f.path }));
  const put = await call("PUT", "/remote-workspace/transfer-file" + q({ workspace: `${key}-copy`, path: f.path, conflict: "reject" }), {
    raw: body.bytes, headers: { "x-workspace-size": String(f.size), "x-workspace-sha256": f.sha256, "x-workspace-executable": String(f.executable) },
  });
  check(put.status === 201 && put.json.sha256 === f.sha256, `transfer of ${f.path} with the snapshot's metadata (${put.status})`);
}
const copied = await call("POST", "/remote-workspace/snapshots", { json: { workspace: `${key}-copy` } });
check(JSON.stringify(copied.json.files.map((f) => [f.path, f.executable])) === '[["data/input.bin",0],["run.sh",73]]',
  "the copy keeps the executable bits");
const del = await call("DELETE", "/remote-workspace" + q({ workspace: key }));
check(del.status === 200 && del.json.deleted === true, "the live workspace is deleted");
const back = await call("GET", `/remote-workspace/snapshots/${snap.json.id}/file` + q({ workspace: key, path: "data/input.bin" }));
check(back.status === 200 && sha256(back.bytes) === sha256(input), "the snapshot reads back byte for byte");
const unselected = await call("GET", `/remote-workspace/snapshots/${snap.json.id}/file` + q({ workspace: key, path: "run.sh" }));
check(unselected.status === 400, "an unselected path is refused");

// 4. A skill package, its id computed here as the client does, mounted into a run.
const skillFile = Buffer.from("# hello skill\n");
const files = [{ path: "SKILL.md", bytes: skillFile }];
const skillHash = createHash("sha256");
for (const f of files) skillHash.update(`${Buffer.byteLength(f.path)}:${f.path}:${f.bytes.length}:`).update(f.bytes);
const skill = { id: "hello", revision: 1, version: "1.0.0", hash: skillHash.digest("hex"),
  files: files.map((f) => ({ path: f.path, content: f.bytes.toString("base64"), size: f.bytes.length, hash: sha256(f.bytes) })) };
const packageId = sha256(JSON.stringify([{ hash: skill.hash, id: skill.id, revision: skill.revision, version: skill.version }]));
const pkg = await call("POST", "/skill-packages", { json: { skills: [skill] } });
check(pkg.status === 200 && pkg.json.id === packageId && pkg.json.root, `the package id matches the client's (${pkg.json?.id})`);
const held = await call("GET", `/skill-packages/${packageId}`);
check(held.json.root === pkg.json.root, "GET /skill-packages/:id names its root");
const run = await call("POST", "/execute-shell", { signed: true, json: {
  agentId: "main", code: "cat $SCIENCEDISCOVERY_SKILLS_DIR/hello/SKILL.md; echo ext > $SCIENCEDISCOVERY_SKILL_EXTENSIONS_DIR/note; touch /skills/x 2>/dev/null || echo read-only",
  executionId: `skills-${Date.now()}`, permissionEpoch: epoch, workspaceRoot: "/ignored", runnerWorkspaceKey: `${key}-skills`,
  skillPackagesRoot: pkg.json.root } });
check(run.status === 200 && run.json.stdout === "# hello skill\nread-only\n", `a run sees the package read-only (${JSON.stringify(run.json)})`);
const note = await call("GET", "/remote-workspace/file" + q({ workspace: `${key}-skills`, path: ".sciencediscovery/skill-extensions/note" }));
check(note.status === 200 && note.bytes.toString() === "ext\n", "and writes its extensions into the workspace");

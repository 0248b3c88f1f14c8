// env-flow.mjs BASE TOKEN WORKSPACE — the environment flow as the real
// client drives it: setup polled until ready, an environment created, a
// local wheel uploaded into a runner-side workspace key, and installed from
// that key (runnerWorkspaceKey wins over workspaceRoot).
import { execFileSync } from "node:child_process";
import { readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const [base, token, workspace] = process.argv.slice(2);

function check(cond, what) {
  if (!cond) {
    console.error(`not ok: ${what}`);
    process.exit(1);
  }
  console.log(`ok: ${what}`);
}

async function call(method, path, { json, raw } = {}) {
  const headers = { authorization: `Bearer ${token}` };
  if (json !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(base + path, { method, headers, body: json !== undefined ? JSON.stringify(json) : raw });
  return { status: res.status, json: await res.json() };
}

let setup;
for (let i = 0; i < 100; i++) {
  setup = await call("GET", "/environment-setup");
  if (setup.json.state === "ready") break;
  await new Promise((r) => setTimeout(r, 100));
}
check(setup.status === 200 && setup.json.state === "ready", `environment setup is ready (${JSON.stringify(setup.json)})`);
const env = await call("POST", "/environments", { json: { name: "Client wheels", language: "python" } });
check(env.status === 201 && env.json.id, `an environment is created (${env.status})`);
const pip = await call("POST", `/environments/${env.json.id}/install`, { json: { packages: ["pip"] } });
check(pip.status === 201, `pip is installed into it (${pip.status})`);

// A wheel built here, uploaded into a remote workspace key as the API does.
const wheel = join(tmpdir(), `client-wheel-${process.pid}.whl`);
execFileSync("python3", ["-c", `import sys, zipfile
with zipfile.ZipFile(sys.argv[1], "w") as z:
    z.writestr("client_wheel/__init__.py", "X = 1\\n")
    z.writestr("client_wheel-2.0.dist-info/METADATA", "Metadata-Version: 2.1\\nName: client-wheel\\nVersion: 2.0\\n")`, wheel]);
const key = `client/${Date.now()}`;
const path = "dist/client_wheel-2.0-py3-none-any.whl";
const up = await call("PUT", `/remote-workspace/file?workspace=${encodeURIComponent(key)}&path=${encodeURIComponent(path)}`,
  { raw: readFileSync(wheel) });
rmSync(wheel, { force: true }); // the test leaves nothing behind
check(up.status === 201, `the wheel is uploaded into the key (${up.status})`);
const install = await call("POST", `/environments/${env.json.id}/install`, {
  json: { manager: "pip", packages: [path], runnerWorkspaceKey: key, workspaceRoot: workspace } });
check(install.status === 201 && install.json.localWheels?.[0]?.distribution === "client-wheel",
  `install reads the wheel from runnerWorkspaceKey, not workspaceRoot (${install.status} ${JSON.stringify(install.json)})`);
check(!("command" in install.json), "the revision carries no host command line");

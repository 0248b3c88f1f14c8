"""antibody-manager-adapter.py - runs the operator's antibody pipeline manager
for sbx-broker's antibody.protenix.v1 (npu.md 2.6).

argv: MANAGER_PATH CONFIG_PATH WORKSPACE_ROOT. The agent's configuration may
only name paths inside the workspace; every tool location comes from the
operator's environment, never from the agent. Exit 2 on a refused config."""
import glob
import importlib.util
import json
import os
import subprocess
import sys

OPERATOR_KEYS = {
    "models_dir": "ANTIBODY_MODELS_DIR", "mindscience_root": "MINDSCIENCE_ROOT",
    "app_dir": "MINDSCIENCE_APP_DIR", "rf_diffusion_dir": "ANTIBODY_RF_DIFFUSION_DIR",
    "proteinmpnn_dir": "ANTIBODY_PROTEINMPNN_DIR", "protenix_dir": "PROTENIX_APP_DIR",
    "ckpt": "RF_DIFFUSION_CKPT", "protenix_ckpt": "PROTENIX_CKPT", "protenix_ckpt_url": "PROTENIX_CKPT_URL",
    "hmmer_home": "HMMER_HOME", "cann_set_env": "CANN_SET_ENV", "python": None, "scripts_dir": None,
}
STAGES = ["01_rfdiffusion", "02_proteinmpnn", "03_protenix", "04_analysis", "05_screening"]


def refuse(message):
    print("antibody adapter: " + message, file=sys.stderr)
    sys.exit(2)


def inside(root, path):
    return path == root or path.startswith(root.rstrip("/") + "/")


def workspace_path(ws, value, key):
    """A path the agent wrote: /workspace maps onto the host workspace; a
    path that does not exist yet is judged by its parent."""
    if value.startswith("/workspace"):
        value = ws + value[len("/workspace"):]
    elif not os.path.isabs(value):
        value = os.path.join(ws, value)
    probe = value
    while not os.path.exists(probe) and os.path.dirname(probe) != probe:
        probe = os.path.dirname(probe)
    real = os.path.join(os.path.realpath(probe), os.path.relpath(value, probe))
    real = os.path.normpath(real)
    if not inside(ws, real):
        refuse("%s must resolve inside the NPU job workspace" % key)
    return real


def main():
    if len(sys.argv) != 4:
        refuse("usage: antibody-manager-adapter.py MANAGER_PATH CONFIG_PATH WORKSPACE_ROOT")
    manager_path, config_path, ws = sys.argv[1], sys.argv[2], os.path.realpath(sys.argv[3])
    skill_root = os.environ.get("ANTIBODY_PIPELINE_HOME") or os.path.dirname(os.path.dirname(os.path.realpath(manager_path)))
    with open(config_path, encoding="utf-8") as f:
        config = json.load(f)
    if not isinstance(config, dict):
        refuse("the configuration must be a JSON object")

    config["workspace"] = workspace_path(ws, str(config.get("workspace") or os.path.join(ws, "antibody_pipeline")), "workspace")
    if config.get("run_dir"):
        config["run_dir"] = workspace_path(ws, str(config["run_dir"]), "run_dir")
    for key in ("target_pdb", "framework_pdb"):
        value = config.get(key)
        if not value:
            continue
        real = os.path.realpath(str(value))
        if not (os.path.isabs(str(value)) and inside(os.path.realpath(skill_root), real)):
            config[key] = workspace_path(ws, str(value), key)
    for key, env in OPERATOR_KEYS.items():
        config.pop(key, None)
        value = os.environ.get(env, "") if env else ""
        if value:
            if not os.path.isabs(value) or not os.path.exists(value):
                refuse("%s must be an existing absolute path" % env)
            config[key] = value
    config.setdefault("scripts_dir", os.path.join(skill_root, "scripts"))

    spec = importlib.util.spec_from_file_location("antibody_manager", manager_path)
    manager = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(manager)
    for check in ("validate_format", "validate_paths"):
        errors = getattr(manager, check)(config) if hasattr(manager, check) else []
        if errors:
            refuse("; ".join(str(e) for e in errors))
    argv = manager.build_command(config)
    helpers, scripts = os.path.join(ws, "helpers"), config["scripts_dir"]
    clean = []
    for arg in argv:
        arg = str(arg)
        if inside(helpers, arg):
            if not os.path.isdir(scripts):
                refuse("the host scripts directory is missing: " + scripts)
            arg = os.path.join(scripts, os.path.relpath(arg, helpers))
        clean.append(arg)
    if any(helpers in a for a in clean):
        refuse("the command still names a workspace helper")
    run_dir = config.get("run_dir") or config["workspace"]
    print("RUN_DIR=" + run_dir, flush=True)
    code = subprocess.call(clean, cwd=ws)
    if code == 0:
        manifest = os.path.join(ws, "artifact_manifest.txt")
        entries = []
        if os.path.exists(manifest):
            with open(manifest, encoding="utf-8") as f:
                entries = [line.strip() for line in f if line.strip()]
        for stage in STAGES:
            for path in sorted(glob.glob(os.path.join(run_dir, stage, "**", "*"), recursive=True)):
                if os.path.isfile(path):
                    entries.append(os.path.relpath(path, ws))
        seen = []
        for entry in entries:
            if entry not in seen:
                seen.append(entry)
        with open(manifest, "w", encoding="utf-8") as f:
            f.write("\n".join(seen) + ("\n" if seen else ""))
    return code


if __name__ == "__main__":
    sys.exit(main())

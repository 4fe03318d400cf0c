"""Workload files written by the bench scripts (calibration.py, gpu_validation.py): a [device]
table when given, the [policy] and one [[job]] per dict of its keys, in order."""


def toml_value(value):
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {toml_value(v)}" for k, v in value.items()) + " }"
    return str(value)


def write_workload(path, policy, jobs, device=None):
    """Writes `jobs` (dicts of key -> value; an empty model_options is left out) under `policy`,
    with `device` (dict) as the [device] table, to `path`; returns `path`."""
    lines = []
    if device:
        lines += ["[device]"] + [f"{k} = {toml_value(v)}" for k, v in device.items()] + [""]
    lines += ["[policy]", f"name = {toml_value(policy)}", ""]
    for job in jobs:
        lines.append("[[job]]")
        lines += [f"{k} = {toml_value(v)}" for k, v in job.items() if v != {}]
        lines.append("")
    with open(path, "w") as f:
        f.write("\n".join(lines))
    return path

#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# make k8s-check: contrib/kubernetes/ checked offline, with Debian's
# python3-kubernetes and python3-yaml (no cluster, no helm):
#  - every object of the manifests against the Kubernetes API's models:
#    each key known to its type (an unknown or misspelt key fails), each
#    value of its type, required fields present (the models' own checks);
#  - what the DaemonSet promises: not privileged, the capabilities it
#    names and no others, host PID and network, the host's cgroup2 and
#    bpffs mounted, no service account token, no RBAC object;
#  - the JSON it carries: daemon.json and each policy parse;
#  - the Helm chart rendered (the subset of Go templates it uses, by this
#    script: anything else fails) and equal to the manifests, object for
#    object, but for the Namespace (helm install --create-namespace).
# Exit 0, or 1 with one line per problem.
import glob
import json
import os
import re
import sys

import yaml
from kubernetes import client

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "contrib", "kubernetes")
CAPS = ["SYS_ADMIN", "NET_ADMIN", "SYS_PTRACE", "DAC_READ_SEARCH"]
PRIMITIVE = {"str": str, "int": int, "bool": bool, "float": (int, float), "object": object,
             "datetime": str, "date": str}
problems = []


def check_type(v, t, where):
    if v is None:
        return
    if t.startswith("list["):
        if not isinstance(v, list):
            problems.append("%s: expected a list" % where)
            return
        for i, e in enumerate(v):
            check_type(e, t[5:-1], "%s[%d]" % (where, i))
    elif t.startswith("dict("):
        if not isinstance(v, dict):
            problems.append("%s: expected a mapping" % where)
            return
        inner = t[5:-1].split(", ", 1)[1]
        for k, e in v.items():
            check_type(e, inner, "%s.%s" % (where, k))
    elif t in PRIMITIVE:
        if t == "int" and isinstance(v, bool) or not isinstance(v, PRIMITIVE[t]):
            problems.append("%s: expected %s, got %r" % (where, t, v))
    else:
        model = getattr(client.models, t)
        if not isinstance(v, dict):
            problems.append("%s: expected a %s mapping" % (where, t))
            return
        by_key = {k: a for a, k in model.attribute_map.items()}
        for k, e in v.items():
            if k not in by_key:
                problems.append("%s.%s: unknown key of %s" % (where, k, t))
                continue
            check_type(e, model.openapi_types[by_key[k]], "%s.%s" % (where, k))


def model_of(obj):
    group, _, version = obj.get("apiVersion", "").rpartition("/")
    return version.capitalize() + obj.get("kind", "")


def check_object(obj, where):
    t = model_of(obj)
    if not hasattr(client.models, t):
        problems.append("%s: no API type %s" % (where, t))
        return
    check_type(obj, t, where)
    try:  # the models' own checks: required fields, enums
        client.ApiClient()._ApiClient__deserialize(obj, t)
    except (ValueError, TypeError) as e:
        problems.append("%s: %s" % (where, e))


def load(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def check_daemonset(ds, where):
    pod = ds["spec"]["template"]["spec"]
    (c,) = pod["containers"]
    sc = c.get("securityContext", {})
    want = {
        "not privileged": sc.get("privileged") is False,
        "capabilities: drop ALL, add %s" % CAPS:
            sc.get("capabilities") == {"drop": ["ALL"], "add": CAPS},
        "no privilege escalation": sc.get("allowPrivilegeEscalation") is False,
        "hostPID": pod.get("hostPID") is True,
        "hostNetwork": pod.get("hostNetwork") is True,
        "no service account token": pod.get("automountServiceAccountToken") is False,
        "selector = template labels": ds["spec"]["selector"]["matchLabels"].items()
        <= ds["spec"]["template"]["metadata"]["labels"].items(),
    }
    paths = {v["name"]: v.get("hostPath", {}).get("path") for v in pod["volumes"]}
    mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
    for host in ("/sys/fs/cgroup", "/sys/fs/bpf"):
        names = [n for n, p in paths.items() if p == host]
        want["the host's %s at %s" % (host, host)] = bool(names) and mounts.get(names[0]) == host
    for what, ok in want.items():
        if not ok:
            problems.append("%s: %s" % (where, what))


def check_json(objs, where):
    for o in objs:
        if o.get("kind") != "ConfigMap":
            continue
        for k, v in o.get("data", {}).items():
            try:
                doc = json.loads(v)
            except ValueError as e:
                problems.append("%s: ConfigMap %s, %s: %s" % (where, o["metadata"]["name"], k, e))
                continue
            if k == "daemon.json" and "default" not in doc:
                problems.append("%s: daemon.json: no \"default\"" % where)


# ---- the chart, rendered: the expressions it uses, nothing else

def indent(text, n):
    return "\n".join((" " * n + l) if l else l for l in text.rstrip("\n").split("\n"))


def render(chart, name, namespace):
    values = yaml.safe_load(open(os.path.join(chart, "values.yaml")))

    def value(path):
        v = values
        for p in path.split("."):
            v = v[p]
        return v

    def expr(e):
        e = e.strip()
        m = re.fullmatch(r"\.Release\.(Name|Namespace)", e)
        if m:
            return name if m.group(1) == "Name" else namespace
        m = re.fullmatch(r"\.Values\.([\w.]+)", e)
        if m:
            return str(value(m.group(1)))
        m = re.fullmatch(r'\.Files\.Get "([^"]+)" \| nindent (\d+)', e)
        if m:
            return "\n" + indent(open(os.path.join(chart, m.group(1))).read(), int(m.group(2)))
        m = re.fullmatch(r'\(\.Files\.Glob "([^"]+)"\)\.AsConfig \| nindent (\d+)', e)
        if m:
            files = sorted(glob.glob(os.path.join(chart, m.group(1))))
            text = yaml.safe_dump({os.path.basename(f): open(f).read() for f in files},
                                  default_style="|", sort_keys=True)
            return "\n" + indent(text, int(m.group(2)))
        m = re.fullmatch(r"toYaml \.Values\.([\w.]+) \| nindent (\d+)", e)
        if m:
            text = yaml.safe_dump(value(m.group(1)), default_flow_style=False, sort_keys=False)
            return "\n" + indent(text, int(m.group(2)))
        raise ValueError("template expression this check does not render: {{ %s }}" % e)

    out = []
    for t in sorted(glob.glob(os.path.join(chart, "templates", "*.yaml"))):
        text = open(t).read()
        # {{- trims the whitespace before it, as Go's templates do
        text = re.sub(r"\s*\{\{-(.*?)\}\}", lambda m: expr(m.group(1)), text)
        text = re.sub(r"\{\{(.*?)\}\}", lambda m: expr(m.group(1)), text)
        out += [d for d in yaml.safe_load_all(text) if d]
    return out


def key(o):
    return (o["kind"], o["metadata"]["name"])


def main():
    plain = []
    for path in sorted(glob.glob(os.path.join(ROOT, "*.yaml"))):
        objs = load(path)
        for i, o in enumerate(objs):
            where = "%s[%d] %s" % (os.path.relpath(path, ROOT), i, o.get("kind"))
            check_object(o, where)
            if o.get("kind") in ("Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"):
                problems.append("%s: RBAC: the daemon needs no API access" % where)
            if o.get("kind") == "DaemonSet":
                check_daemonset(o, where)
        check_json(objs, os.path.relpath(path, ROOT))
        plain += objs
    chart = os.path.join(ROOT, "helm", "egressctl")
    try:
        rendered = render(chart, "egressctl", "egressctl")
    except (ValueError, KeyError, OSError, yaml.YAMLError) as e:
        problems.append("helm/egressctl: %s" % e)
        rendered = []
    for i, o in enumerate(rendered):
        check_object(o, "helm/egressctl rendered[%d] %s" % (i, o.get("kind")))
    want = {key(o): o for o in plain if o["kind"] != "Namespace"}
    got = {key(o): o for o in rendered}
    for k in sorted(set(want) | set(got)):
        if k not in got:
            problems.append("helm/egressctl: renders no %s %s" % k)
        elif k not in want:
            problems.append("helm/egressctl: renders %s %s, which the manifests lack" % k)
        elif got[k] != want[k]:
            problems.append("helm/egressctl: %s %s differs from the manifests'" % k)
    for p in problems:
        print("k8s-check: " + p)
    n = len(plain) + len(rendered)
    print("k8s-check: %d objects (%d rendered from the chart), %d problems" % (n, len(rendered), len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

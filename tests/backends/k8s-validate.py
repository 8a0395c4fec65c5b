#!/usr/bin/env python3
"""Strict offline validation of the Kubernetes objects loam emits.

Every document of every file must pass:
- core objects (ConfigMap, Job, ...): the PyPI package kubernetes-validate, strict (unknown
  fields are errors), for the given Kubernetes version; an unknown kind is an error;
- custom resources (JobSet, Kueue, Volcano): the openAPIV3Schema of the real CRD in
  tests/schemas/crds/, made strict (additionalProperties: false wherever the schema lists
  properties and does not preserve unknown fields), and their metadata as a core ObjectMeta;
- names: metadata.name a DNS-1123 subdomain (a DNS-1123 label for namespaces, JobSets and
  queues), metadata.namespace a DNS-1123 label, label keys and values valid.

usage: k8s-validate.py [-k 1.33.0] FILE|FOLDER...   (a folder: every *.yaml below it, sorted)
exit status: 0 all valid, 1 otherwise. Last line: "N passed, N failed".
"""
import argparse
import copy
import glob
import os
import re
import sys

import jsonschema
import kubernetes_validate as kv
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
CRD_DIR = os.path.join(HERE, "..", "schemas", "crds")
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
LABEL_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
# Kinds whose names become DNS labels (pod host names, queue names).
LABEL_NAMED = {"Namespace", "JobSet", "LocalQueue", "Queue", "Job"}


def strict(schema):
    """A copy of an OpenAPI v3 schema that rejects unknown fields."""
    schema = copy.deepcopy(schema)

    def walk(node):
        if isinstance(node, dict):
            if ("properties" in node and "additionalProperties" not in node
                    and not node.get("x-kubernetes-preserve-unknown-fields")):
                node["additionalProperties"] = False
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schema)
    return schema


def load_crds():
    crds = {}
    for path in sorted(glob.glob(os.path.join(CRD_DIR, "*.yaml"))):
        with open(path, encoding="utf-8") as fh:
            crd = yaml.safe_load(fh)
        group = crd["spec"]["group"]
        kind = crd["spec"]["names"]["kind"]
        for version in crd["spec"]["versions"]:
            schema = strict(version["schema"]["openAPIV3Schema"])
            crds[(f"{group}/{version['name']}", kind)] = jsonschema.Draft7Validator(schema)
    return crds


def name_errors(doc):
    errors = []
    meta = doc.get("metadata") or {}
    name = meta.get("name", "")
    pattern = DNS_LABEL if doc.get("kind") in LABEL_NAMED else DNS_SUBDOMAIN
    limit = 63 if doc.get("kind") in LABEL_NAMED else 253
    if not (pattern.match(name) and len(name) <= limit):
        errors.append(f"metadata.name {name!r} is not a DNS-1123 {'label' if limit == 63 else 'subdomain'}")
    ns = meta.get("namespace")
    if ns is not None and not (DNS_LABEL.match(ns) and len(ns) <= 63):
        errors.append(f"metadata.namespace {ns!r} is not a DNS-1123 label")
    for where, labels in label_maps(doc):
        for key, value in labels.items():
            prefix, _, label = key.rpartition("/")
            if prefix and not (DNS_SUBDOMAIN.match(prefix) and len(prefix) <= 253):
                errors.append(f"{where}: label key {key!r} has a bad prefix")
            if not (LABEL_NAME.match(label) and len(label) <= 63):
                errors.append(f"{where}: label key {key!r} is not a valid name")
            if not (isinstance(value, str) and LABEL_VALUE.match(value) and len(value) <= 63):
                errors.append(f"{where}: label value {value!r} of {key!r} is not valid")
    return errors


def label_maps(node, where="$"):
    """Every `labels` map under a `metadata` mapping."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "metadata" and isinstance(value, dict) and isinstance(value.get("labels"), dict):
                yield f"{where}.metadata.labels", value["labels"]
            yield from label_maps(value, f"{where}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from label_maps(value, f"{where}[{i}]")


def validate(doc, crds, version):
    key = (doc.get("apiVersion"), doc.get("kind"))
    errors = name_errors(doc)
    if key in crds:
        for e in sorted(crds[key].iter_errors(doc), key=lambda e: list(e.path)):
            errors.append(f"{'.'.join(str(p) for p in e.path)}: {e.message}")
        meta_doc = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": doc.get("metadata", {})}
        try:
            kv.validate(meta_doc, version, strict=True)
        except kv.ValidationError as e:
            errors.append(f"metadata.{'.'.join(str(p) for p in e.path)}: {e.message}")
        return errors
    try:
        kv.validate(doc, version, strict=True)
    except kv.SchemaNotFoundError:
        errors.append(f"no schema for {key[0]} {key[1]} in Kubernetes {version}")
    except kv.ValidationError as e:
        errors.append(f"{'.'.join(str(p) for p in e.path)}: {e.message}")
    return errors


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("-k", "--kubernetes-version", default="1.33.0")
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
    crds = load_crds()
    passed = failed = 0
    files = []
    for path in args.files:
        # A folder of the output (per-site prerequisites, a job's site folders): its YAML files.
        if os.path.isdir(path):
            files.extend(sorted(glob.glob(os.path.join(path, "**", "*.yaml"), recursive=True)))
        else:
            files.append(path)
    for path in files:
        try:
            with open(path, encoding="utf-8") as fh:
                docs = [d for d in yaml.safe_load_all(fh) if d is not None]
        except (OSError, yaml.YAMLError) as e:
            failed += 1
            print(f"FAIL {path}: {e}")
            continue
        if not docs:
            failed += 1
            print(f"FAIL {path}: no document")
        for i, doc in enumerate(docs):
            where = f"{path}[{i}] {doc.get('kind')}/{(doc.get('metadata') or {}).get('name')}"
            errors = validate(doc, crds, args.kubernetes_version)
            if errors:
                failed += 1
                for e in errors:
                    print(f"FAIL {where}: {e}")
            else:
                passed += 1
                print(f"ok   {where}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

"""forme.manifest.json: the era-B wiring graph as JSON, read into the same `Manifest` as
manifest.md.

Forme manifests are written by an agent, so their keys drift like the markdown ones do. The
reader takes what it recognises (aliases below) and ignores the rest; only text that is not
JSON at all is an error.
"""

from __future__ import annotations

import json

from .manifest import CALLER_NAMES, Manifest, Output, ServiceWiring, in_order, step_names

_SERVICES = ("services", "graph", "nodes")
_ORDER = ("executionOrder", "execution_order", "order")


def _first(doc: dict, keys: tuple[str, ...]):
    return next((doc[k] for k in keys if k in doc and doc[k] is not None), None)


def _name_of(value) -> str | None:
    if isinstance(value, str):
        return value.strip().strip("`") or None
    if isinstance(value, dict):
        return _name_of(_first(value, ("name", "service", "id")))
    return None


def _named_items(value) -> list[tuple[str, object]]:
    """[(name, spec)] from a list of names/objects or a {name: spec} object."""
    if isinstance(value, dict):
        return [(str(k), v) for k, v in value.items()]
    if isinstance(value, list):
        return [(n, item) for item in value if (n := _name_of(item))]
    return []


def _output(name: str, spec) -> Output:
    target = spec if isinstance(spec, str) else (
        _first(spec, ("target", "path", "binding", "to")) if isinstance(spec, dict) else None)
    public = bool(isinstance(spec, dict) and spec.get("public")) or bool(
        isinstance(target, str) and target.startswith("bindings/"))
    return Output(name, target if isinstance(target, str) else None, public)


def _input(name: str, spec) -> tuple[str, str | None]:
    source = spec if isinstance(spec, str) else (
        _first(spec, ("from", "source", "binding")) if isinstance(spec, dict) else None)
    return name, source if isinstance(source, str) else None


def _service(name: str, spec) -> ServiceWiring:
    spec = spec if isinstance(spec, dict) else {}
    svc = ServiceWiring(name=name, heading=name)
    source = _first(spec, ("source", "path", "file"))
    svc.source = source if isinstance(source, str) else None
    workspace = spec.get("workspace")
    svc.workspace = workspace if isinstance(workspace, str) else None
    svc.inputs = [_input(n, s) for n, s in _named_items(spec.get("inputs"))]
    svc.outputs = [_output(n, s) for n, s in _named_items(spec.get("outputs"))]
    svc.errors = [n for n, _ in _named_items(spec.get("errors"))]
    svc.delegates = [n for n, _ in _named_items(spec.get("delegates"))]
    return svc


def parse_forme_manifest(text: str) -> Manifest:
    """Parse forme.manifest.json. Raises ValueError only when the text is not a JSON object."""
    doc = json.loads(text)
    if not isinstance(doc, dict):
        raise ValueError("forme.manifest.json is not a JSON object")
    program = _name_of(_first(doc, ("program", "system", "name", "root")))
    if program and program.endswith(".md"):  # `root`: the entry file's path, named by its stem
        program = program.rsplit("/", 1)[-1].removesuffix(".md").removesuffix(".prose") or None
    listed = _first(doc, _SERVICES)
    # a graph object holding its nodes (and edges): the nodes are the services, never the keys
    while isinstance(listed, dict) and any(k in listed for k in ("nodes", "services")):
        listed = _first(listed, ("services", "nodes"))
    # (a node of the caller's, `{"id": "caller", "type": "input"}`, is no service)
    services = [_service(n, s) for n, s in _named_items(listed)
                if not (n in CALLER_NAMES or (isinstance(s, dict)
                        and s.get("type") in ("input", "output", "caller")))]
    order = [name for step, _ in _named_items(_first(doc, _ORDER)) for name in step_names(step)]
    caller = doc.get("callerInterface") or doc.get("caller") or {}
    caller = caller if isinstance(caller, dict) else {}
    returns: dict[str, str | None] = {}
    for name, spec in _named_items(_first(caller, ("returns",)) or doc.get("returns")):
        origin = _first(spec, ("from", "service")) if isinstance(spec, dict) else (
            spec if isinstance(spec, str) and spec != name else None)
        if isinstance(origin, str) and origin.startswith("bindings/"):  # the file's path
            origin = origin.split("/")[1] if origin.count("/") >= 2 else None
        returns[name] = origin if isinstance(origin, str) else None
    requires = [n for n, _ in _named_items(_first(caller, ("requires",)) or doc.get("requires"))]
    services, order = in_order(services, order)
    return Manifest(program, services, order, returns, requires)

"""MkDocs hook: the pages written at every build from the files they document.

- reference.md, the scenario format reference, from the contract itself,
  schemas/scenario.schema.json: a field cannot be documented wrong or missing, each row
  is a property of the schema with its own description, type and limits
  (tests/test_docs.py fails on a property without a description);
- index.md, the front page, is the README (its links into docs/ made site-relative);
- changelog.md is CHANGELOG.md."""
from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "schemas" / "scenario.schema.json"

INTRO = """# Scenario format reference

Every field a scenario file may have, generated from the contract,
`schemas/scenario.schema.json` (JSON Schema 2020-12, `additionalProperties: false`
everywhere), at each build of this site. The [scenario format](scenarios.md) page
explains the same fields with examples. A file that breaks a rule below gets one line
naming the file, the line and the field.
"""


def _anchor(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def _resolve(schema: dict, node: dict) -> tuple[dict, str | None]:
    """(the node a $ref points to, the $defs name) or (node, None)."""
    ref = node.get("$ref", "")
    if ref.startswith("#/$defs/"):
        path = ref[len("#/$defs/"):].split("/")
        target = schema["$defs"]
        for part in path:
            target = target[part]
        return target, ".".join(path)
    return node, None


def _type_text(schema: dict, node: dict) -> str:
    target, name = _resolve(schema, node)
    if name is not None and _has_fields(target):
        return f"[{name}](#{_anchor(name)})"
    node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
    if "enum" in node:
        return ", ".join(f"`{json.dumps(v)}`" for v in node["enum"])
    if "oneOf" in node or "anyOf" in node:
        return " or ".join(_type_text(schema, option) for option in node.get("oneOf", node.get("anyOf")))
    kind = node.get("type", "any")
    kind = " or ".join(kind) if isinstance(kind, list) else kind
    if kind == "array" and isinstance(node.get("items"), dict):
        return f"list of {_type_text(schema, node['items'])}"
    if kind == "object" and isinstance(node.get("additionalProperties"), dict) and "properties" not in node:
        return f"map of {_type_text(schema, node['additionalProperties'])}"
    limits = [f"≥ {node['minimum']:,}" if "minimum" in node else "", f"≤ {node['maximum']:,}" if "maximum" in node else "",
              f"pattern `{node['pattern']}`" if "pattern" in node else "",
              f"at most {node['maxItems']:,} items" if "maxItems" in node else "",
              f"at most {node['maxLength']:,} characters" if "maxLength" in node else ""]
    return ", ".join([kind] + [text for text in limits if text])


def _has_fields(node: dict) -> bool:
    return bool(node.get("properties")) or any(_has_fields(o) for o in node.get("oneOf", []) if isinstance(o, dict))


def _description(schema: dict, node: dict) -> str:
    target, _ = _resolve(schema, node)
    return (node.get("description") or target.get("description") or "").replace("|", "\\|").replace("\n", " ")


def _object_sections(schema: dict, title: str, node: dict) -> list[tuple[str, dict, list]]:
    """(title, properties, required) of an object and of the objects its fields hold inline."""
    found = []
    for option in [node] + [o for o in node.get("oneOf", []) if isinstance(o, dict)]:
        if option.get("properties"):
            found.append((title, option["properties"], option.get("required", [])))
    for _, properties, _ in list(found):
        for field, spec in properties.items():
            inner = spec.get("items") if spec.get("type") == "array" and isinstance(spec.get("items"), dict) else spec
            if isinstance(inner.get("additionalProperties"), dict) and inner["additionalProperties"].get("properties"):
                inner = inner["additionalProperties"]
            if "$ref" not in inner and _has_fields(inner):
                found += _object_sections(schema, f"{title}.{field}", inner)
    return found


def sections(schema: dict) -> list[tuple[str, dict, list]]:
    found = _object_sections(schema, "scenario", schema)
    for name, node in schema.get("$defs", {}).items():
        if isinstance(node, dict) and _has_fields(node):
            found += _object_sections(schema, name, node)
        elif isinstance(node, dict) and isinstance(node.get("additionalProperties"), dict) \
                and _has_fields(node["additionalProperties"]):  # a map of objects (column → statistics)
            found += _object_sections(schema, name, node["additionalProperties"])
        elif isinstance(node, dict) and isinstance(node.get("items"), dict) and _has_fields(node["items"]):
            found += _object_sections(schema, name, node["items"])  # a list of objects (data files)
        elif isinstance(node, dict) and "type" not in node:  # a group of definitions
            found += [section for sub, inner in node.items() if isinstance(inner, dict) and _has_fields(inner)
                      for section in _object_sections(schema, f"{name}.{sub}", inner)]
    return found


def reference_markdown(schema: dict) -> str:
    out = [INTRO]
    seen_titles = set()
    for title, properties, required in sections(schema):
        if title not in seen_titles:
            out.append(f"\n## {title} {{#{_anchor(title)}}}\n")
            seen_titles.add(title)
        out.append("| field | type | meaning |\n|---|---|---|")
        for field, spec in properties.items():
            mark = " **(required)**" if field in required else ""
            kind = _type_text(schema, spec).replace("|", "\\|")
            out.append(f"| `{field}`{mark} | {kind} | {_description(schema, spec)} |")
        out.append("")
    return "\n".join(out) + "\n"


def front_page(readme: str) -> str:
    """The README as the site's front page: `docs/x.md` links become `x.md`, the
    changelog link the changelog page."""
    return re.sub(r"\]\(docs/", "](", readme).replace("](CHANGELOG.md)", "](changelog.md)")


def generated_pages() -> dict[str, str]:
    return {"reference.md": reference_markdown(json.loads(SCHEMA.read_text())),
            "index.md": front_page((ROOT / "README.md").read_text()),
            "changelog.md": (ROOT / "CHANGELOG.md").read_text()}


def on_files(files, config):
    from mkdocs.structure.files import File
    for name, text in generated_pages().items():
        files.append(File.generated(config, name, content=text))
    return files

#!/usr/bin/env python3
"""Prints a crate's public API, one item per line, sorted: from the rustdoc JSON of the crate
(`cargo doc` with `--output-format json`). scripts/public-api.sh compares it with the
snapshot in docs/public-api/, so that any change to the API is a reviewed diff.

Usage: public-api.py target/doc/<crate>.json
"""

import json
import sys


def load(path):
    with open(path) as f:
        return json.load(f)


class Api:
    def __init__(self, doc):
        self.doc = doc
        self.index = doc["index"]
        self.paths = doc["paths"]
        self.lines = set()

    def item(self, id_):
        return self.index.get(str(id_))

    # --- types -----------------------------------------------------------------------------

    def generic_args(self, args):
        if not args:
            return ""
        if "angle_bracketed" in args:
            ab = args["angle_bracketed"]
            parts = []
            for a in ab.get("args", []):
                if "lifetime" in a:
                    parts.append(a["lifetime"])
                elif "type" in a:
                    parts.append(self.ty(a["type"]))
                elif "const" in a:
                    parts.append(str(a["const"].get("expr", "_")))
                else:
                    parts.append("_")
            for c in ab.get("constraints", []):
                binding = c.get("binding", {})
                if "equality" in binding:
                    eq = binding["equality"]
                    value = self.ty(eq["type"]) if "type" in eq else str(eq)
                    parts.append(f"{c['name']} = {value}")
                elif "constraint" in binding:
                    parts.append(f"{c['name']}: " + " + ".join(self.bound(b) for b in binding["constraint"]))
            return "<" + ", ".join(parts) + ">" if parts else ""
        if "parenthesized" in args:
            p = args["parenthesized"]
            out = "(" + ", ".join(self.ty(t) for t in p.get("inputs", [])) + ")"
            if p.get("output"):
                out += " -> " + self.ty(p["output"])
            return out
        return ""

    def path(self, p):
        return p["path"] + self.generic_args(p.get("args"))

    def bound(self, b):
        if "trait_bound" in b:
            tb = b["trait_bound"]
            modifier = "?" if tb.get("modifier") == "maybe" else ""
            return modifier + self.path(tb["trait"])
        if "outlives" in b:
            return b["outlives"]
        if "use" in b:
            return "use<..>"
        return "?"

    def ty(self, t):
        if t is None:
            return "()"
        if "resolved_path" in t:
            return self.path(t["resolved_path"])
        if "generic" in t:
            return t["generic"]
        if "primitive" in t:
            return t["primitive"]
        if "borrowed_ref" in t:
            r = t["borrowed_ref"]
            life = (r["lifetime"] + " ") if r.get("lifetime") else ""
            mut = "mut " if r.get("is_mutable") else ""
            return f"&{life}{mut}{self.ty(r['type'])}"
        if "raw_pointer" in t:
            r = t["raw_pointer"]
            return ("*mut " if r.get("is_mutable") else "*const ") + self.ty(r["type"])
        if "tuple" in t:
            return "(" + ", ".join(self.ty(x) for x in t["tuple"]) + ")"
        if "slice" in t:
            return "[" + self.ty(t["slice"]) + "]"
        if "array" in t:
            return "[" + self.ty(t["array"]["type"]) + "; " + str(t["array"]["len"]) + "]"
        if "impl_trait" in t:
            return "impl " + " + ".join(self.bound(b) for b in t["impl_trait"])
        if "dyn_trait" in t:
            d = t["dyn_trait"]
            parts = [self.path(x["trait"]) for x in d.get("traits", [])]
            if d.get("lifetime"):
                parts.append(d["lifetime"])
            return "dyn " + " + ".join(parts)
        if "qualified_path" in t:
            q = t["qualified_path"]
            trait = q.get("trait")
            self_ty = self.ty(q["self_type"])
            if trait:
                return f"<{self_ty} as {self.path(trait)}>::{q['name']}"
            return f"{self_ty}::{q['name']}"
        if "function_pointer" in t:
            fp = t["function_pointer"]
            sig = fp["sig"]
            ins = ", ".join(self.ty(x[1]) for x in sig["inputs"])
            out = f" -> {self.ty(sig['output'])}" if sig.get("output") else ""
            return f"fn({ins}){out}"
        if "infer" in t:
            return "_"
        return "?"

    def generics(self, g):
        params = []
        for p in g.get("params", []):
            kind = p["kind"]
            if "lifetime" in kind:
                params.append(p["name"])
            elif "type" in kind:
                if kind["type"].get("is_synthetic"):
                    continue
                bounds = kind["type"].get("bounds", [])
                params.append(p["name"] + (": " + " + ".join(self.bound(b) for b in bounds) if bounds else ""))
            elif "const" in kind:
                params.append(f"const {p['name']}: {self.ty(kind['const']['type'])}")
        out = "<" + ", ".join(params) + ">" if params else ""
        preds = []
        for w in g.get("where_predicates", []):
            if "bound_predicate" in w:
                bp = w["bound_predicate"]
                preds.append(self.ty(bp["type"]) + ": " + " + ".join(self.bound(b) for b in bp["bounds"]))
        if preds:
            out += " where " + ", ".join(preds)
        return out

    def fn_sig(self, name, f):
        sig = f["sig"]
        header = f.get("header", {})
        prefix = ""
        if header.get("is_const"):
            prefix += "const "
        if header.get("is_async"):
            prefix += "async "
        if header.get("is_unsafe"):
            prefix += "unsafe "
        ins = []
        for arg_name, arg_ty in sig["inputs"]:
            if arg_name == "self":
                rendered = self.ty(arg_ty)
                ins.append({"Self": "self", "&Self": "&self", "&mut Self": "&mut self"}.get(rendered, f"self: {rendered}"))
            else:
                ins.append(f"{arg_name}: {self.ty(arg_ty)}")
        out = f" -> {self.ty(sig['output'])}" if sig.get("output") else ""
        return f"{prefix}fn {name}{self.generics(f.get('generics', {}))}({', '.join(ins)}){out}"

    # --- walking ---------------------------------------------------------------------------

    def add(self, line):
        self.lines.add(line)

    def walk_module(self, id_, prefix, seen):
        if id_ in seen:
            return
        seen.add(id_)
        module = self.item(id_)
        for child_id in module["inner"]["module"]["items"]:
            child = self.item(child_id)
            if child is None or child.get("visibility") != "public":
                continue
            self.walk_item(child, prefix, seen)

    def attrs(self, item):
        attrs = item.get("attrs", [])
        text = json.dumps(attrs)
        out = ""
        if "non_exhaustive" in text:
            out += "#[non_exhaustive] "
        return out

    def hidden(self, item):
        return "hidden" in json.dumps(item.get("attrs", []))

    def walk_item(self, item, prefix, seen):
        if self.hidden(item):
            return
        inner = item["inner"]
        name = item.get("name")
        kind = next(iter(inner))
        here = f"{prefix}::{name}" if name else prefix
        if kind == "module":
            self.add(f"pub mod {here}")
            self.walk_module(item["id"], here, seen)
        elif kind == "use":
            use = inner["use"]
            target = self.item(use["id"]) if use.get("id") is not None else None
            alias = use["name"]
            if target is not None and target.get("crate_id") == 0:
                renamed = dict(target)
                renamed["name"] = alias
                # A glob re-export brings a module's items.
                if use.get("is_glob") and "module" in target["inner"]:
                    for child_id in target["inner"]["module"]["items"]:
                        child = self.item(child_id)
                        if child is not None and child.get("visibility") == "public":
                            self.walk_item(child, prefix, seen)
                else:
                    self.walk_item(renamed, prefix, seen)
            else:
                glob = "::*" if use.get("is_glob") else ""
                self.add(f"pub use {prefix}::{alias} = {use['source']}{glob}")
        elif kind == "struct":
            s = inner["struct"]
            self.add(f"{self.attrs(item)}pub struct {here}{self.generics(s['generics'])}")
            k = s["kind"]
            if "plain" in k:
                for fid in k["plain"]["fields"]:
                    f = self.item(fid)
                    if f and f.get("visibility") == "public":
                        self.add(f"pub {here}::{f['name']}: {self.ty(f['inner']['struct_field'])}")
            elif "tuple" in k:
                fields = [self.item(fid) for fid in k["tuple"] if fid is not None]
                self.add(f"pub struct {here}(" + ", ".join(self.ty(f["inner"]["struct_field"]) for f in fields if f) + ")")
            self.impls(here, s.get("impls", []))
        elif kind == "enum":
            e = inner["enum"]
            self.add(f"{self.attrs(item)}pub enum {here}{self.generics(e['generics'])}")
            for vid in e["variants"]:
                v = self.item(vid)
                vk = v["inner"]["variant"]["kind"]
                fields = ""
                if isinstance(vk, dict) and "tuple" in vk:
                    fields = "(" + ", ".join(self.ty(self.item(f)["inner"]["struct_field"]) for f in vk["tuple"] if f is not None) + ")"
                elif isinstance(vk, dict) and "struct" in vk:
                    fields = " { " + ", ".join(
                        f"{self.item(f)['name']}: {self.ty(self.item(f)['inner']['struct_field'])}" for f in vk["struct"]["fields"]
                    ) + " }"
                self.add(f"{self.attrs(v)}{here}::{v['name']}{fields}")
            self.impls(here, e.get("impls", []))
        elif kind == "trait":
            t = inner["trait"]
            self.add(f"pub trait {here}{self.generics(t['generics'])}")
            for mid in t["items"]:
                m = self.item(mid)
                if m and "function" in m["inner"]:
                    self.add(self.fn_sig(here + "::" + m["name"], m["inner"]["function"]))
                elif m:
                    self.add(f"{here}::{next(iter(m['inner']))} {m['name']}")
        elif kind == "function":
            self.add(f"pub {self.fn_sig(here, inner['function'])}")
        elif kind == "type_alias":
            ta = inner["type_alias"]
            self.add(f"pub type {here}{self.generics(ta['generics'])} = {self.ty(ta['type'])}")
        elif kind == "constant":
            c = inner["constant"]
            self.add(f"pub const {here}: {self.ty(c['type'])}")
        elif kind == "static":
            self.add(f"pub static {here}: {self.ty(inner['static']['type'])}")
        elif kind in ("macro", "proc_macro"):
            self.add(f"pub macro {here}")
        else:
            self.add(f"pub {kind} {here}")

    def impls(self, owner, impl_ids):
        for iid in impl_ids:
            imp = self.item(iid)
            if imp is None:
                continue
            i = imp["inner"]["impl"]
            if i.get("is_synthetic") or i.get("blanket_impl") is not None:
                continue
            trait = i.get("trait")
            if trait is not None:
                neg = "!" if i.get("is_negative") else ""
                for_ty = self.ty(i["for"])
                short = owner.rsplit("::", 1)[-1]
                if for_ty.startswith(short):
                    for_ty = owner + for_ty[len(short):]
                self.add(f"impl{self.generics(i['generics'])} {neg}{self.path(trait)} for {for_ty}")
                continue
            for mid in i["items"]:
                m = self.item(mid)
                if m is None or m.get("visibility") != "public" or self.hidden(m):
                    continue
                if "function" in m["inner"]:
                    self.add(f"pub {self.fn_sig(owner + '::' + m['name'], m['inner']['function'])}")
                elif "assoc_const" in m["inner"]:
                    self.add(f"pub const {owner}::{m['name']}: {self.ty(m['inner']['assoc_const']['type'])}")


def main():
    doc = load(sys.argv[1])
    api = Api(doc)
    root = api.item(doc["root"])
    api.walk_module(root["id"], root["name"], set())
    for line in sorted(api.lines):
        print(line)


if __name__ == "__main__":
    main()

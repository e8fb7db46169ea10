"""Every real chat template of tests/data/chat on random conversations, facet vs. the
live oracle (Debian python3-jinja2 in transformers' environment, jinja_oracle.py).

The corpus cases cover the common paths; these seeded random conversations reach the
other branches of the same templates: tool schemas with arrays, enums, nested objects,
oneOf and defaults, tool-call arguments as objects or JSON strings, reasoning content,
<think> blocks in history, content parts, None content, odd role orders, and the extra
variables templates read (enable_thinking, reasoning_effort, builtin_tools,
tools_in_user_message, date_string, documents, model_identity). Renderings must be
byte-identical, or both must fail.
"""

import copy
import json
import os
import pathlib
import random
import subprocess
import sys
import zlib

import pytest

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
jinja_oracle = pytest.importorskip("jinja_oracle", reason="python3-jinja2 missing: install it (scripts/setup)")

DATA = HERE.parents[1] / "tests" / "data" / "chat"

TEXTS = ["Hello!", "What is 2+2?", "  padded  ", "", "line1\nline2\n", "héllo wörld ✓ 日本語 🎉",
         "<|im_end|> and <s> literal", "<think>\nreasoning here\n</think>\n\nThe answer.", "a</think>b",
         "quote \" and 'single' and \\ backslash", "tab\tsep", "\u2028sep\u2029", "42", "[INST] fake [/INST]"]
NAMES = ["get_weather", "search", "calc", "send_email"]


def template_of(folder):
    if (folder / "chat_template.jinja").is_file():
        return (folder / "chat_template.jinja").read_text(encoding="utf-8")
    return json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))["chat_template"]


def folders():
    return sorted(p for p in DATA.iterdir() if (p / "chat_meta.json").is_file())


class Conv:
    def __init__(self, seed):
        self.r = random.Random(seed)

    def schema(self, depth=0):
        r = self.r
        k = r.randrange(9 if depth < 2 else 5)
        s = {}
        if k == 0:
            s = {"type": "string"}
        elif k == 1:
            s = {"type": "integer", "default": r.choice([1, 10, -1])}
        elif k == 2:
            s = {"type": "number"}
        elif k == 3:
            s = {"type": "boolean", "default": False}
        elif k == 4:
            s = {"type": "string", "enum": ["celsius", "fahrenheit"]}
        elif k == 5:
            s = {"type": "array", "items": self.schema(depth + 1)}
        elif k == 6:
            s = {"type": "object", "properties": {"a": self.schema(depth + 1), "b": self.schema(depth + 1)},
                 "required": ["a"]}
        elif k == 7:
            s = {"oneOf": [{"type": "string"}, {"type": "integer"}]}
        else:
            s = {"type": ["string", "null"]}
        if r.random() < 0.6:
            s["description"] = r.choice(["The city", "Units to use", "Query text, e.g. \"x\"", "Ünïcode"])
        if r.random() < 0.2:
            s["nullable"] = True
        return s

    def tools(self):
        out = []
        for name in self.r.sample(NAMES, self.r.randint(1, 2)):
            props = {p: self.schema() for p in self.r.sample(["city", "query", "units", "count", "opts"], self.r.randint(0, 3))}
            fn = {"name": name, "description": "Tool %s." % name,
                  "parameters": {"type": "object", "properties": props, "required": list(props)[:1]}}
            out.append({"type": "function", "function": fn})
        return out

    def tool_call(self):
        r = self.r
        args = {"city": r.choice(["Paris", "東京"]), "days": r.randint(1, 5), "x": r.choice([1.5, 2.0, None, True])}
        if r.random() < 0.3:
            args = json.dumps(args)
        call = {"type": "function", "function": {"name": r.choice(NAMES), "arguments": args}}
        if r.random() < 0.7:
            call["id"] = "".join(r.choice("abcdefghi123") for _ in range(9))
        return call

    def messages(self):
        r = self.r
        msgs = []
        if r.random() < 0.5:
            msgs.append({"role": "system", "content": r.choice(TEXTS)})
        for turn in range(r.randint(1, 4)):
            msgs.append({"role": "user", "content": r.choice(TEXTS)})
            if turn == 3 and r.random() < 0.5:
                break
            a = {"role": "assistant", "content": r.choice(TEXTS)}
            if r.random() < 0.3:
                a["tool_calls"] = [self.tool_call() for _ in range(r.randint(1, 2))]
                if r.random() < 0.3:
                    a["content"] = None
                msgs.append(a)
                for tc in a["tool_calls"]:
                    t = {"role": "tool", "content": r.choice(["{\"temp\": 21}", "ok", ""])}
                    if "id" in tc and r.random() < 0.5:
                        t["tool_call_id"] = tc["id"]
                    msgs.append(t)
                continue
            if r.random() < 0.2:
                a["reasoning_content"] = "Let me think."
            msgs.append(a)
        if r.random() < 0.1:
            msgs.append({"role": "user", "content": [{"type": "text", "text": "part"}]})
        if r.random() < 0.1:
            r.shuffle(msgs)
        return msgs

    def case(self, template):
        r = self.r
        c = {"messages": self.messages(), "tools": self.tools() if r.random() < 0.4 else None,
             "add_generation_prompt": r.random() < 0.6, "extra": {}}
        for var, vals in [("enable_thinking", [True, False]), ("reasoning_effort", ["low", "high"]),
                          ("builtin_tools", [["browser"], ["python", "browser"]]),
                          ("tools_in_user_message", [False, True]), ("date_string", ["01 Jan 2025"]),
                          ("model_identity", ["You are a test model."]),
                          ("documents", [[{"title": "Doc", "text": "Body text."}]])]:
            if var in template and r.random() < 0.5:
                c["extra"][var] = r.choice(vals)
        return c


@pytest.mark.parametrize("folder", folders(), ids=lambda p: p.name)
def test_random_conversations(facet_bin, folder, tmp_path):
    template = template_of(folder)
    meta = json.loads((folder / "chat_meta.json").read_text(encoding="utf-8"))
    special = meta["special_tokens_variables"]
    env = jinja_oracle.make_env()
    compiled = env.from_string(template)
    gen = Conv(zlib.crc32(folder.name.encode()) + int(os.environ.get("FACET_CHAT_SEED", "1")))
    run_env = dict(os.environ, SOURCE_DATE_EPOCH=str(jinja_oracle.FIXED_EPOCH))
    n = int(os.environ.get("FACET_CHAT_N", "40"))
    bad, agree = [], 0
    for i in range(n):
        c = gen.case(template)
        variables = {"messages": copy.deepcopy(c["messages"]), "tools": copy.deepcopy(c["tools"]), "documents": None,
                     "add_generation_prompt": c["add_generation_prompt"], **copy.deepcopy(special),
                     **copy.deepcopy(c["extra"])}
        try:
            status, want = "ok", compiled.render(**variables)
        except Exception as e:  # noqa: BLE001
            status, want = "error", type(e).__name__
        (tmp_path / "m.json").write_text(json.dumps(c["messages"], ensure_ascii=False), encoding="utf-8")
        args = [str(facet_bin), "template", str(folder), "--messages", str(tmp_path / "m.json")]
        if c["tools"] is not None:
            (tmp_path / "t.json").write_text(json.dumps(c["tools"], ensure_ascii=False), encoding="utf-8")
            args += ["--tools", str(tmp_path / "t.json")]
        if c["add_generation_prompt"]:
            args.append("--add-generation-prompt")
        for k, v in c["extra"].items():
            args += ["--var", "%s=%s" % (k, json.dumps(v, ensure_ascii=False))]
        p = subprocess.run(args, capture_output=True, env=run_env, timeout=60)
        if status == "ok":
            ok = p.returncode == 0 and p.stdout.decode("utf-8") == want
        else:
            ok = p.returncode != 0
        if ok:
            agree += 1
        else:
            got = p.stdout.decode("utf-8", "replace")
            j = next((k for k in range(min(len(got), len(want))) if got[k] != want[k]), min(len(got), len(want)))
            bad.append("case %d %s: jinja2 %s, facet exit %d %s\n    near %r\n    want %r" % (
                i, json.dumps(c, ensure_ascii=False)[:400], status, p.returncode, p.stderr.decode()[:200],
                got[max(0, j - 60):j + 60], want[max(0, j - 60):j + 60] if status == "ok" else want))
    print("%s: %d/%d random conversations identical" % (folder.name, agree, n))
    assert not bad, "\n".join(bad[:5])

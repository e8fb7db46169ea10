"""`facet chat` driven through a pseudo-terminal (Python's pty), on a copy of the bundled
model given a Zephyr-style chat template (as test_run.py's --messages test). The
oracle for every reply is `facet run --messages` (greedy) on the same conversation, so a
second reply that did not see the first turn, or a /system or /clear that was ignored,
gives other text."""

import json
import os
import pty
import select
import shutil
import subprocess
import time

import pytest

from conftest import REPO

TEMPLATE = ("{% for message in messages %}\n{% if message['role'] == 'user' %}\n"
            "{{ '<|user|>\n' + message['content'] + eos_token }}\n"
            "{% elif message['role'] == 'system' %}\n"
            "{{ '<|system|>\n' + message['content'] + eos_token }}\n"
            "{% elif message['role'] == 'assistant' %}\n"
            "{{ '<|assistant|>\n'  + message['content'] + eos_token }}\n{% endif %}\n"
            "{% if loop.last and add_generation_prompt %}\n{{ '<|assistant|>' }}\n{% endif %}\n"
            "{% endfor %}")

PROMPT = b">>> "


@pytest.fixture
def chat_model(tmp_path):
    d = tmp_path / "chat"
    shutil.copytree(REPO / "models" / "stories260k", d)
    for name in ("tokenizer_config.json", "config.json"):
        os.chmod(d / name, 0o644)
    cfg = json.loads((d / "tokenizer_config.json").read_text())
    cfg["chat_template"] = TEMPLATE
    (d / "tokenizer_config.json").write_text(json.dumps(cfg))
    # a long context, so that a reply can run long enough to be stopped with Ctrl-C
    conf = json.loads((d / "config.json").read_text())
    conf["max_position_embeddings"] = 65536
    (d / "config.json").write_text(json.dumps(conf))
    return d


class Chat:
    def __init__(self, facet_bin, model, *args):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            os.environ["FACET_NO_CACHE"] = "1"
            os.execv(str(facet_bin), [str(facet_bin), "chat", str(model), "--threads", "1",
                                      *args])
        self.buf = b""

    def read_until(self, marker, timeout=60):
        end = time.time() + timeout
        while marker not in self.buf:
            left = end - time.time()
            assert left > 0, self.buf[-2000:]
            r, _, _ = select.select([self.fd], [], [], left)
            if r:
                try:
                    data = os.read(self.fd, 65536)
                except OSError:
                    data = b""
                assert data, ("chat ended", self.buf[-2000:])
                self.buf += data
        i = self.buf.index(marker) + len(marker)
        out, self.buf = self.buf[:i], self.buf[i:]
        return out.replace(b"\r\n", b"\n")

    def say(self, text):
        """Send a message; return the reply (the text before the next prompt)."""
        os.write(self.fd, text.encode() + b"\n")
        out = self.read_until(PROMPT)
        echoed = text.encode() + b"\n"
        assert out.startswith(echoed), out
        return out[len(echoed):-len(PROMPT)].decode()

    def wait(self):
        _, status = os.waitpid(self.pid, 0)
        os.close(self.fd)
        return os.waitstatus_to_exitcode(status)


def run_reply(facet_bin, model, tmp_path, messages, n):
    (tmp_path / "m.json").write_text(json.dumps(messages))
    proc = subprocess.run([str(facet_bin), "run", str(model), "--messages",
                           str(tmp_path / "m.json"), "-n", str(n), "--json", "--threads", "1"],
                          capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, FACET_NO_CACHE="1"))
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)["text"]


def test_conversation_clear_system_ctrl_c_ctrl_d(facet_bin, chat_model, tmp_path):
    n = 24
    chat = Chat(facet_bin, chat_model, "-n", str(n))
    chat.read_until(PROMPT)
    u1, u2 = "Tell me a story about Lily.", "What did Tom do?"
    r1 = chat.say(u1)
    want1 = run_reply(facet_bin, chat_model, tmp_path, [{"role": "user", "content": u1}], n)
    assert r1 == want1 + "\n" and want1
    # the second reply's prompt holds the first turn
    r2 = chat.say(u2)
    two = [{"role": "user", "content": u1}, {"role": "assistant", "content": want1},
           {"role": "user", "content": u2}]
    want2 = run_reply(facet_bin, chat_model, tmp_path, two, n)
    alone = run_reply(facet_bin, chat_model, tmp_path, [{"role": "user", "content": u2}], n)
    assert want2 != alone  # the oracle tells the two apart
    assert r2 == want2 + "\n"
    # /clear forgets: the same question now answers as if asked first
    assert "cleared" in chat.say("/clear")
    assert chat.say(u2) == alone + "\n"
    # /system: the system message goes first
    chat.say("/clear")
    assert "set" in chat.say("/system You are a storyteller.")
    sysreply = chat.say(u1)
    want_sys = run_reply(facet_bin, chat_model, tmp_path,
                         [{"role": "system", "content": "You are a storyteller."},
                          {"role": "user", "content": u1}], n)
    assert want_sys != want1
    assert sysreply == want_sys + "\n"
    os.write(chat.fd, b"/exit\n")
    assert chat.wait() == 0


def test_multiline_input(facet_bin, chat_model, tmp_path):
    n = 16
    chat = Chat(facet_bin, chat_model, "-n", str(n))
    chat.read_until(PROMPT)
    os.write(chat.fd, b"Tell me a story\\\n")
    chat.read_until(b"... ")
    os.write(chat.fd, b"about Lily.\n")
    out = chat.read_until(PROMPT)[:-len(PROMPT)].decode()
    want = run_reply(facet_bin, chat_model, tmp_path,
                     [{"role": "user", "content": "Tell me a story\nabout Lily."}], n)
    assert out.endswith(want + "\n")
    os.write(chat.fd, b"\x04")  # Ctrl-D at the prompt exits 0
    assert chat.wait() == 0


def test_ctrl_c_stops_a_reply_and_ctrl_d_exits(facet_bin, chat_model):
    # a reply of up to 60000 tokens (eos ignored) runs for many seconds: Ctrl-C must end
    # it early and bring the prompt back, without leaving
    chat = Chat(facet_bin, chat_model, "-n", "60000", "--ignore-eos")
    chat.read_until(PROMPT)
    os.write(chat.fd, b"Tell me a story about Lily.\n")
    chat.read_until(b"Lily.\r\n")  # the echoed line (the terminal writes CR LF)
    assert select.select([chat.fd], [], [], 30)[0]  # the reply streams
    time.sleep(0.5)
    t0 = time.time()
    os.write(chat.fd, b"\x03")
    out = chat.read_until(PROMPT, timeout=30)
    assert b"[stopped]" in out
    assert time.time() - t0 < 30
    os.write(chat.fd, b"\x04")
    assert chat.wait() == 0


def test_unknown_command_is_named_not_sent(facet_bin):
    """A line that is one /word facet does not know (/help, /quit) is named as an unknown
    command, not sent to the model as a user message (it was: '/bogus' got a reply); a
    line with more than a word after the slash is a message as before."""
    proc = subprocess.run([str(facet_bin), "chat", str(REPO / "docs" / "examples" / "stories260k-chat"),
                           "-n", "4", "--threads", "1"], input="/help\n/quit\n/usr/bin is?\n",
                          capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, FACET_NO_CACHE="1"))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "(unknown command /help: /clear, /system TEXT, /exit; Ctrl-D exits)" in out, out
    assert "(unknown command /quit:" in out, out
    # one reply, to the third line only: three prompts before it, one after
    replies = [seg for seg in out.split(">>> ") if seg.strip() and "unknown command" not in seg]
    assert len(replies) == 1, out

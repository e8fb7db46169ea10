"""The chat page at GET / in a real headless browser: Debian's chromium driven over the
DevTools protocol on a pipe (--remote-debugging-pipe: NUL-separated JSON on fds 3/4, so
no websocket library or npm package is needed). The page loads, a message streams a
reply from the bundled model with a chat template (the reply equals the whole answer
/v1/chat/completions gives for the same messages and settings), and Stop ends a long
reply early. A screenshot is kept under the build folder's test-artifacts/.

Skipped loudly where chromium is absent (apt install chromium)."""

import base64
import json
import os
import shutil
import subprocess
import time

import pytest

from server_harness import Server


def find_chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        p = shutil.which(name)
        if p:
            return p
    return None


class Browser:
    """A headless chromium and one page, over the DevTools pipe."""

    def __init__(self, exe, profile):
        r3, w3 = os.pipe()  # we write commands, chromium reads fd 3
        r4, w4 = os.pipe()  # chromium writes fd 4, we read
        self.proc = subprocess.Popen(
            [exe, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-dev-shm-usage", "--remote-debugging-pipe", "--user-data-dir=" + profile,
             "--window-size=1000,700", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            pass_fds=(3, 4), preexec_fn=lambda: (os.dup2(r3, 3), os.dup2(w4, 4)))
        os.close(r3)
        os.close(w4)
        self.w, self.r = w3, r4
        self.buf = b""
        self.next_id = 0
        self.session = None
        targets = self.call("Target.getTargets")["targetInfos"]
        page = [t for t in targets if t["type"] == "page"][0]
        self.session = self.call("Target.attachToTarget", targetId=page["targetId"],
                                 flatten=True)["sessionId"]

    def call(self, method, timeout=30, **params):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params}
        if self.session and not method.startswith("Target."):
            msg["sessionId"] = self.session
        os.write(self.w, json.dumps(msg).encode() + b"\0")
        end = time.time() + timeout
        while time.time() < end:
            while b"\0" in self.buf:
                raw, self.buf = self.buf.split(b"\0", 1)
                m = json.loads(raw)
                if m.get("id") == self.next_id:
                    if "error" in m:
                        raise AssertionError("%s: %s" % (method, m["error"]))
                    return m["result"]
            import select
            ready, _, _ = select.select([self.r], [], [], 1)
            if ready:
                chunk = os.read(self.r, 1 << 20)
                if not chunk:
                    raise AssertionError("chromium closed the pipe")
                self.buf += chunk
        raise AssertionError("no answer to %s in %ss" % (method, timeout))

    def js(self, expr):
        r = self.call("Runtime.evaluate", expression=expr, returnByValue=True,
                      awaitPromise=True)
        if "exceptionDetails" in r:
            raise AssertionError("page error: %s" % r["exceptionDetails"])
        return r["result"].get("value")

    def wait(self, expr, timeout=60):
        end = time.time() + timeout
        while time.time() < end:
            if self.js(expr):
                return True
            time.sleep(0.1)
        raise AssertionError("timed out waiting for %s" % expr)

    def close(self):
        try:
            os.close(self.w)
            os.close(self.r)
        except OSError:
            pass
        self.proc.kill()
        self.proc.wait(10)


@pytest.fixture(scope="module")
def chat_server(facet_bin, repo_root, tmp_path_factory):
    src = repo_root / "models" / "stories260k"
    dst = tmp_path_factory.mktemp("page") / "stories260k-chat"
    dst.mkdir()
    for name in ("model.safetensors", "tokenizer.json", "special_tokens_map.json"):
        shutil.copy(src / name, dst / name)
    config = json.loads((src / "config.json").read_text())
    # room for a long reply to stop: 3,500 tokens took ~3 s (less in the VM's fast state),
    # and a clean-clone run saw the stream end before the Stop click reached the server
    config["max_position_embeddings"] = 65536
    # the stories end with </s> (id 2) after a few hundred tokens: a long reply could finish
    # before the Stop click and never count as cancelled (seen once in a clean-clone run);
    # with <unk> (id 0, never generated) as the end id the long reply runs until stopped
    config["eos_token_id"] = 0
    (dst / "config.json").write_text(json.dumps(config))
    gen = json.loads((src / "generation_config.json").read_text())
    gen["eos_token_id"] = 0
    (dst / "generation_config.json").write_text(json.dumps(gen))
    cfg = json.loads((src / "tokenizer_config.json").read_text())
    cfg["chat_template"] = (repo_root / "tests" / "data" / "server" /
                            "tinyllama_chat_template.jinja").read_text()
    (dst / "tokenizer_config.json").write_text(json.dumps(cfg))
    s = Server(facet_bin, dst, "--threads", "1", "--api-key", "pagekey")
    try:
        yield s
        s.assert_clean_exit()
    finally:
        s.stop()


def test_page_is_the_html_file(chat_server, repo_root):
    st, h, data = chat_server.request("GET", "/")
    assert st == 200 and h["content-type"].startswith("text/html")
    assert data == (repo_root / "src" / "server" / "chat_page.html").read_bytes()


def test_page_in_headless_chromium(chat_server, facet_bin, tmp_path):
    exe = find_chromium()
    if not exe:
        pytest.skip("SKIPPED LOUDLY: no chromium on this machine (apt install chromium): "
                    "the chat page was not tested in a browser")
    b = Browser(exe, str(tmp_path / "profile"))
    try:
        b.call("Page.enable")
        b.call("Page.navigate", url="http://127.0.0.1:%d/" % chat_server.port)
        b.wait("document.readyState === 'complete' && document.body.dataset.state === 'idle'")
        # settings: the key, a system prompt, greedy, a short reply
        b.js("""(() => {
            const set = (id, v) => { const e = document.getElementById(id); e.value = v;
                                     e.dispatchEvent(new Event('change')); };
            set('apikey', 'pagekey'); set('system', 'You tell short stories.');
            set('temperature', '0'); set('max_tokens', '24');
            document.getElementById('input').value = 'Tell me about a cat.';
            document.getElementById('send').click(); })()""")
        b.wait("document.body.dataset.state === 'idle' && document.body.dataset.last")
        assert b.js("document.body.dataset.last") == "done"
        reply = b.js("[...document.querySelectorAll('.msg.assistant')].pop().dataset.text")
        # the oracle needs the key: ask with it
        _, _, data = chat_server.request("POST", "/v1/chat/completions", {
            "messages": [{"role": "system", "content": "You tell short stories."},
                         {"role": "user", "content": "Tell me about a cat."}],
            "temperature": 0, "max_tokens": 24}, headers={"Authorization": "Bearer pagekey"})
        want = json.loads(data)["choices"][0]["message"]["content"]
        assert reply == want and reply
        b.wait("document.getElementById('model').textContent === 'stories260k-chat'")
        # stop: a long reply, stopped once some text has streamed
        b.js("""(() => { const m = document.getElementById('max_tokens'); m.value = '20000';
            document.getElementById('input').value = 'Tell me a long story.';
            document.getElementById('send').click(); })()""")
        b.wait("document.body.dataset.state === 'streaming' && "
               "document.querySelectorAll('.msg.assistant').length === 2 && "
               "[...document.querySelectorAll('.msg.assistant')].pop()"
               ".querySelector('.body').textContent.length > 0")
        b.js("document.getElementById('stop').click()")
        b.wait("document.body.dataset.state === 'idle'", timeout=20)
        assert b.js("document.body.dataset.last") == "stopped"
        # the server saw the stream's client go away and cancelled it
        from server_harness import wait_until
        assert wait_until(lambda: chat_server.request(
            "GET", "/metrics", headers={"Authorization": "Bearer pagekey"})[2].find(
                b"facet_requests_cancelled_total 1") >= 0, timeout=10)
        # markdown: fenced code blocks become <pre><code>, the rest is escaped text
        html = b.js("render('see <b>\\n```c\\nint x<1;\\n```\\nand `y`')")
        assert html == "see &lt;b&gt;\n<pre><code>int x&lt;1;\n</code></pre>\nand <code>y</code>"
        shot = b.call("Page.captureScreenshot", format="png")["data"]
        art = os.path.join(os.path.dirname(str(facet_bin)), "test-artifacts")
        os.makedirs(art, exist_ok=True)
        path = os.path.join(art, "chat_page.png")
        with open(path, "wb") as f:
            f.write(base64.b64decode(shot))
        print("screenshot:", path)
    finally:
        b.close()

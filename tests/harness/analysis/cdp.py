"""Headless Chromium driven through the DevTools protocol over --remote-debugging-pipe
(Debian's python3 only, no websocket client): the browser reads commands on fd 3 and
writes replies and events on fd 4, each message JSON ended by a NUL byte
(chromium's content/browser/devtools/devtools_pipe_handler.cc).

The browser has no network: every host resolves to nothing (--host-resolver-rules) and
every proxied request goes to a closed loopback port; the tests also fail on any request
that is not file: or data:. As root it runs as nobody (setpriv), never as root."""
import json
import os
import pwd
import select
import shutil
import subprocess
import tempfile
import time

SKIP = 77  # ctest SKIP_RETURN_CODE


def find_chromium():
    return shutil.which("chromium")


class Browser:
    def __init__(self, timeout_s=60):
        self.timeout_s = timeout_s
        self.profile = tempfile.mkdtemp(prefix="flopwatt-chromium-")
        os.chmod(self.profile, 0o777)
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()
        args = [find_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
                "--user-data-dir=" + self.profile, "--no-first-run", "--no-default-browser-check",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--disable-extensions", "--disable-default-apps", "--mute-audio", "--hide-scrollbars",
                "--host-resolver-rules=MAP * ~NOTFOUND", "--proxy-server=http://127.0.0.1:9",
                "--proxy-bypass-list=<-loopback>", "--window-size=1280,1800", "about:blank"]
        prefix = []
        if os.geteuid() == 0:
            nobody = pwd.getpwnam("nobody")
            prefix = ["setpriv", "--reuid=%d" % nobody.pw_uid, "--regid=%d" % nobody.pw_gid, "--clear-groups"]
        # The pipe ends go to fds 3 and 4 by the shell's redirections.
        script = 'exec "$@" 3<&%d 4>&%d' % (to_browser_r, from_browser_w)
        env = dict(os.environ, HOME=self.profile)
        self.proc = subprocess.Popen(["sh", "-c", script, "sh"] + prefix + args, pass_fds=(to_browser_r, from_browser_w),
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     env=env)
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buf = b""
        self._id = 0
        self.events = []

    def _read_message(self, deadline):
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no reply from chromium")
            r, _, _ = select.select([self._from_browser], [], [], left)
            if r:
                chunk = os.read(self._from_browser, 1 << 20)
                if not chunk:
                    err = self.proc.stderr.read().decode(errors="replace") if self.proc.poll() is not None else ""
                    raise RuntimeError("chromium closed its pipe: " + err[-2000:])
                self._buf += chunk
        msg, self._buf = self._buf.split(b"\0", 1)
        return json.loads(msg)

    def send(self, method, params=None, session=None):
        self._id += 1
        msg = {"id": self._id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        data = json.dumps(msg).encode() + b"\0"
        while data:
            data = data[os.write(self._to_browser, data):]
        deadline = time.monotonic() + self.timeout_s
        while True:
            m = self._read_message(deadline)
            if m.get("id") == self._id:
                if "error" in m:
                    raise RuntimeError("%s: %s" % (method, m["error"]))
                return m.get("result", {})
            self.events.append(m)

    def wait_event(self, method, session, timeout_s=None):
        deadline = time.monotonic() + (timeout_s or self.timeout_s)
        while True:
            for i, e in enumerate(self.events):
                if e.get("method") == method and e.get("sessionId") == session:
                    return self.events.pop(i)
            self.events.append(self._read_message(deadline))

    def new_page(self):
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.send(domain + ".enable", session=session)
        return session

    def open(self, session, url):
        """Navigates and waits for the load event; returns the events seen on the way."""
        self.events = [e for e in self.events if e.get("sessionId") != session]
        self.send("Page.navigate", {"url": url}, session)
        self.wait_event("Page.loadEventFired", session)
        self.send("Runtime.evaluate", {"expression": "1", "awaitPromise": True}, session)  # let queued events in
        return [e for e in self.events if e.get("sessionId") == session]

    def evaluate(self, session, expression):
        r = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True}, session)
        if "exceptionDetails" in r:
            raise RuntimeError("evaluate: %s" % r["exceptionDetails"])
        return r["result"].get("value")

    def screenshot(self, session, path):
        import base64
        r = self.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True}, session)
        with open(path, "wb") as f:
            f.write(base64.b64decode(r["data"]))

    def close(self):
        try:
            self.send("Browser.close")
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._to_browser)
        os.close(self._from_browser)
        shutil.rmtree(self.profile, ignore_errors=True)


def problems(events):
    """Console errors, uncaught exceptions, error log entries and any request that is not
    file: or data: among a page's events, as readable lines."""
    out = []
    for e in events:
        m, p = e.get("method"), e.get("params", {})
        if m == "Runtime.exceptionThrown":
            d = p.get("exceptionDetails", {})
            out.append("exception: %s %s" % (d.get("text"), d.get("exception", {}).get("description", "")))
        elif m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            out.append("console.%s: %s" % (p["type"], [a.get("value", a.get("description")) for a in p.get("args", [])]))
        elif m == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
            out.append("log: %s" % p["entry"].get("text"))
        elif m == "Network.requestWillBeSent":
            url = p.get("request", {}).get("url", "")
            if not url.startswith(("file:", "data:")):
                out.append("network request: " + url)
    return out

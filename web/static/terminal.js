// The session page's terminal: xterm.js over the PTY WebSocket. The page asks the console for a
// one-minute, single-use token (a POST carrying the CSRF header), then connects; keystrokes go as binary
// frames, window size changes as resize frames. Esc then Tab moves the focus on.
(function () {
  "use strict";
  function start() {
    var box = document.getElementById("terminal");
    if (!box || !window.Terminal) return;
    var state = document.getElementById("terminal-state");
    var term = new window.Terminal({ cursorBlink: true, fontSize: 14, convertEol: false });
    var fit = new window.FitAddon.FitAddon();
    term.loadAddon(fit);
    term.open(box);
    fit.fit();
    // Tab belongs to the shell (completion); Esc then Tab leaves the terminal, so a keyboard
    // is never trapped in it (the Esc still reaches the shell)
    var escaped = false;
    term.attachCustomKeyEventHandler(function (event) {
      if (event.type !== "keydown") return true;
      if (event.key === "Tab" && escaped) { escaped = false; return false; }
      escaped = event.key === "Escape";
      return true;
    });
    var csrf = JSON.parse(document.body.getAttribute("hx-headers") || "{}")["x-csrftoken"] || "";
    fetch("/console/sessions/" + encodeURIComponent(box.dataset.session) + "/terminal", {
      method: "POST", headers: { "x-csrftoken": csrf }, credentials: "same-origin",
    }).then(function (r) {
      if (!r.ok) throw new Error("the console refused the terminal (" + r.status + ")");
      return r.json();
    }).then(function (answer) {
      var url = (location.protocol === "https:" ? "wss://" : "ws://") + location.host + answer.path +
        "&cols=" + term.cols + "&rows=" + term.rows;
      var ws = new WebSocket(url);
      ws.binaryType = "arraybuffer";
      var encoder = new TextEncoder();
      ws.onopen = function () { state.textContent = "connected"; term.focus(); };
      ws.onmessage = function (event) {
        if (typeof event.data === "string") {
          var frame = JSON.parse(event.data);
          if (frame.type === "exit") state.textContent = "the shell ended";
          else if (frame.type === "error") state.textContent = "error: " + frame.message;
          return;
        }
        term.write(new Uint8Array(event.data));
      };
      ws.onclose = function () { if (state.textContent === "connected") state.textContent = "disconnected"; };
      term.onData(function (data) { if (ws.readyState === 1) ws.send(encoder.encode(data)); });
      window.addEventListener("resize", function () {
        fit.fit();
        if (ws.readyState === 1) ws.send(JSON.stringify({ type: "resize", cols: term.cols, rows: term.rows }));
      });
    }).catch(function (err) { state.textContent = String(err.message || err); });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();

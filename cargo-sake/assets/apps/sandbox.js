// The sandbox proxy of `cargo sake dev`'s MCP Apps preview (the specification's "Sandbox
// proxy"): the server serves it on the page's port under the other loopback name (a second
// origin), with the Content Security Policy built from the view's `_meta.ui.csp` as an HTTP
// header, which the inner document inherits. When the page sends
// `ui/notifications/sandbox-resource-ready` it writes the view's HTML into an inner iframe; it
// relays every other message between the page and the view, checking where each comes from.
"use strict";
(() => {
  if (window.self === window.top) throw new Error("the sandbox proxy runs in an iframe");
  const hostOrigin = new URL(document.referrer).origin;
  const ownOrigin = window.location.origin;
  if (hostOrigin === ownOrigin) throw new Error("the page and the sandbox must have different origins");

  const inner = document.createElement("iframe");
  inner.setAttribute("sandbox", "allow-scripts allow-same-origin allow-forms");
  inner.setAttribute("title", "view");
  document.body.appendChild(inner);

  const allow = (permissions) => ["camera", "microphone", "geolocation"]
    .filter((p) => permissions && permissions[p])
    .concat(permissions && permissions.clipboardWrite ? ["clipboard-write"] : [])
    .join("; ");

  window.addEventListener("message", (event) => {
    if (event.source === window.parent) {
      if (event.origin !== hostOrigin) return;
      const m = event.data;
      if (m && m.method === "ui/notifications/sandbox-resource-ready") {
        const { html, sandbox, permissions } = m.params || {};
        if (typeof sandbox === "string") inner.setAttribute("sandbox", sandbox);
        const attribute = allow(permissions);
        if (attribute) inner.setAttribute("allow", attribute);
        // document.write keeps the inner document on this origin, under this page's policy.
        const doc = inner.contentDocument;
        doc.open();
        doc.write(typeof html === "string" ? html : "");
        doc.close();
      } else if (inner.contentWindow) {
        inner.contentWindow.postMessage(m, "*");
      }
    } else if (event.source === inner.contentWindow) {
      if (event.origin !== ownOrigin) return;
      window.parent.postMessage(event.data, hostOrigin);
    }
  });

  window.parent.postMessage(
    { jsonrpc: "2.0", method: "ui/notifications/sandbox-proxy-ready", params: {} },
    hostOrigin,
  );
})();

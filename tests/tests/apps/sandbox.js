// The sandbox proxy of the test host (the specification's "Sandbox proxy"): served on an
// origin other than the host's, with the Content Security Policy built from the view's
// `_meta.ui.csp` as an HTTP header (browser.mjs), which the inner document inherits. It
// loads the view's HTML in an inner iframe when the host sends
// `ui/notifications/sandbox-resource-ready`, and relays every other message between the host
// and the view, checking where each comes from.
"use strict";
(() => {
  if (window.self === window.top) throw new Error("the sandbox proxy runs in an iframe");
  const hostOrigin = new URL(document.referrer).origin;
  const ownOrigin = window.location.origin;
  if (hostOrigin === ownOrigin) throw new Error("the host and the sandbox must have different origins");

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
        // document.write keeps the inner document on this origin, under this page's CSP.
        const doc = inner.contentDocument;
        doc.open();
        doc.write(html);
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

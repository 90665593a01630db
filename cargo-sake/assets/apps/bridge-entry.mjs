// The entry point of bridge.js (scripts/apps-bridge.mjs bundles it): what the MCP Apps preview
// of `cargo sake dev` uses of the official packages, pinned in scripts/peers/package.json — the
// host bridge (AppBridge, @modelcontextprotocol/ext-apps) and the TypeScript SDK client that
// talks to the server (@modelcontextprotocol/client). The page (host.mjs) reads them from the
// global `SakeAppsBridge`.
export {
  AppBridge,
  PostMessageTransport,
  RESOURCE_MIME_TYPE,
  getToolUiResourceUri,
} from '@modelcontextprotocol/ext-apps/app-bridge';
export { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

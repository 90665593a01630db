-- Shared by every workload script: prints one machine-readable line when wrk is done,
-- read by `sake-bench` (benches/load). Run a script by hand with e.g.
--   wrk -t1 -c32 -d10s -s benches/wrk/call.lua http://127.0.0.1:3000/mcp
local M = {}

function M.done(summary, latency, requests)
  local e = summary.errors
  local errors = e.connect + e.read + e.write + e.status + e.timeout
  io.write(string.format(
    'BENCH_JSON {"requests":%d,"duration_us":%d,"bytes":%d,"p50_us":%d,"p99_us":%d,"mean_us":%.1f,"errors":%d,"status_errors":%d}\n',
    summary.requests, summary.duration, summary.bytes,
    latency:percentile(50), latency:percentile(99), latency.mean, errors, e.status))
end

-- The headers every 2026-07-28 request of a real client carries (notes/rmcp.md §4a).
function M.modern(method, name)
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
  wrk.headers["Accept"] = "application/json, text/event-stream"
  wrk.headers["MCP-Protocol-Version"] = "2026-07-28"
  wrk.headers["Mcp-Method"] = method
  if name then wrk.headers["Mcp-Name"] = name end
end

-- `_meta` of a 2026-07-28 request, as rmcp's and the TypeScript SDK's clients send it;
-- `extra` adds keys (a progress token).
function M.meta(extra)
  return '{"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
    .. '"io.modelcontextprotocol/clientInfo":{"name":"bench-client","version":"1.0.0"},'
    .. '"io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}},"sampling":{}}'
    .. (extra or '') .. '}'
end

return M

-- Workload 2: `tools/call add` inside a 2025-11-25 session. The session is opened once by
-- the driver (initialize + notifications/initialized); its id comes in MCP_SESSION_ID.
-- Each request has its own JSON-RPC id, as a client's would: a session server may track
-- requests in flight by id (rmcp answers a reused id of a session at once, without running
-- the tool).
package.path = debug.getinfo(1, "S").source:match("^@(.*/)") .. "?.lua;" .. package.path
local c = require("common")
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
wrk.headers["MCP-Protocol-Version"] = "2025-11-25"
local sid = os.getenv("MCP_SESSION_ID")
if sid and sid ~= "" then wrk.headers["Mcp-Session-Id"] = sid end

local n = 0
request = function()
  n = n + 1
  return wrk.format(nil, nil, nil,
    '{"jsonrpc":"2.0","id":' .. n .. ',"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":3}}}')
end
done = c.done

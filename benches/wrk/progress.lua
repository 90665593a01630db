-- Workload 4: a 2026-07-28 `tools/call` that sends 10 progress notifications before its
-- result, answered over SSE (wrk reads each chunked stream to its end).
package.path = debug.getinfo(1, "S").source:match("^@(.*/)") .. "?.lua;" .. package.path
local c = require("common")
c.modern("tools/call", "progress")
wrk.body = '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"_meta":'
  .. c.meta(',"progressToken":7') .. ',"name":"progress","arguments":{}}}'
done = c.done

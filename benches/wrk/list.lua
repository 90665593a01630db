-- Workload 3: `tools/list` on 2026-07-28 (the servers hold 1,000 tools).
package.path = debug.getinfo(1, "S").source:match("^@(.*/)") .. "?.lua;" .. package.path
local c = require("common")
c.modern("tools/list", nil)
wrk.body = '{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":' .. c.meta() .. '}}'
done = c.done

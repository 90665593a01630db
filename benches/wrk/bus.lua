-- Workload "bus": `tools/call add` on 2026-07-28 (the same request as call.lua), against sake
-- with and without replicas sharing Redis.
package.path = debug.getinfo(1, "S").source:match("^@(.*/)") .. "?.lua;" .. package.path
local c = require("common")
c.modern("tools/call", "add")
wrk.body = '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"_meta":' .. c.meta()
  .. ',"name":"add","arguments":{"a":2,"b":3}}}'
done = c.done

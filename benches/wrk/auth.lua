-- Workload 5: `tools/call add` on 2026-07-28 with `Authorization: Bearer <JWT>` (the token
-- `sake-bench` minted for this server, in SAKE_BENCH_TOKEN). The same request as call.lua
-- otherwise; a server without authorization ignores the header.
package.path = debug.getinfo(1, "S").source:match("^@(.*/)") .. "?.lua;" .. package.path
local c = require("common")
c.modern("tools/call", "add")
wrk.headers["Authorization"] = "Bearer " .. os.getenv("SAKE_BENCH_TOKEN")
wrk.body = '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"_meta":' .. c.meta()
  .. ',"name":"add","arguments":{"a":2,"b":3}}}'
done = c.done

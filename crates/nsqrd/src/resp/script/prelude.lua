-- The environment a script runs in, as Redis 7.0 gives it (loaded once per Lua state by
-- vm.rs). It receives the Rust functions it wraps and returns what vm.rs keeps: the runner,
-- the setter of the per-run command dispatcher, the scripts' environment, and for function
-- libraries their loader and the runner of a registered function.
local failure, where, sha1hex, log, setresp, register_function = ...
local xpcall, pcall, type, tostring, select = xpcall, pcall, type, tostring, select
local rawget, rawset, setmetatable, setfenv = rawget, rawset, setmetatable, setfenv

-- A Rust function's error (redis.call's failed command, a SCRIPT KILL) is a userdata in
-- Lua; its text and line wait in the failure slot.
local function rust_error(err)
  local why, line, source = failure()
  return why or ('ERR ' .. tostring(err)), line, source
end

-- Turns any error into Redis's error table: {err = "CODE message", source, line}, the
-- source and line being where the script was when it failed.
local function handler(err)
  local line, source
  if type(err) == 'userdata' then
    local why
    why, line, source = rust_error(err)
    err = {err = why}
  elseif type(err) ~= 'table' then
    err = {err = 'ERR ' .. tostring(err)}
  elseif type(rawget(err, 'err')) ~= 'string' then
    err = {err = 'ERR unknown error'}
  end
  if not line then
    line, source = where()
  end
  if line then
    err.source = source
    err.line = line
  end
  return err
end

local function run(f)
  return xpcall(f, handler)
end

-- Redis's pcall hands a script the text of an error table rather than the table.
local function pcall_result(ok, ...)
  if ok then
    return ok, ...
  end
  local err = ...
  if type(err) == 'userdata' then
    err = rust_error(err)
  elseif type(err) == 'table' and type(rawget(err, 'err')) == 'string' then
    err = err.err
  end
  return false, err
end
local function redis_pcall_compatible(f, ...)
  return pcall_result(pcall(f, ...))
end

local redis = {}
-- redis.call and redis.pcall run as the script's client, so they are set for each run.
local function set_dispatch(call, protected_call)
  rawset(redis, 'call', call)
  rawset(redis, 'pcall', protected_call)
end
function redis.error_reply(e)
  if type(e) ~= 'string' then
    return {err = 'ERR wrong number or type of arguments'}
  end
  if e:sub(1, 1) == '-' then
    e = e:sub(2)
  end
  if not e:find(' ', 1, true) then
    e = 'ERR ' .. e
  end
  return {err = e}
end
function redis.status_reply(s)
  if type(s) ~= 'string' then
    return {err = 'ERR wrong number or type of arguments'}
  end
  return {ok = s}
end
redis.sha1hex = sha1hex
redis.log = log
redis.setresp = setresp
function redis.set_repl() end
function redis.replicate_commands() return true end
function redis.breakpoint() return false end
function redis.debug() end
redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, redis.LOG_WARNING = 0, 1, 2, 3
redis.REPL_NONE, redis.REPL_AOF, redis.REPL_SLAVE, redis.REPL_REPLICA, redis.REPL_ALL = 0, 1, 2, 2, 3
redis.REDIS_VERSION, redis.REDIS_VERSION_NUM = '7.0.15', 0x07000f

-- What a script may reach: nothing to load files or modules with, no debug library.
local G = _G
G.redis = redis
G.pcall = redis_pcall_compatible
for _, name in ipairs({'dofile', 'loadfile', 'print', 'require', 'module', 'getfenv',
                       'setfenv', 'newproxy', 'debug', 'package', 'os', 'io'}) do
  G[name] = nil
end

-- A read-only view of a table: new fields and reads of missing globals are errors, as in
-- Redis 7.0, so one script cannot leave state behind for the next. Reads go through an
-- `__index` table, which Lua follows without calling a function; a missing global reaches
-- the metatable of the globals themselves, whose function raises the error.
local function missing(k)
  error("Script attempted to access nonexistent global variable '" .. tostring(k) .. "'", 3)
end
local function readonly(t)
  return setmetatable({}, {
    __index = t,
    __newindex = function()
      error('Attempt to modify a readonly table', 2)
    end,
    __metatable = false,
  })
end
for _, lib in ipairs({'redis', 'string', 'math', 'table', 'coroutine', 'cjson', 'bit'}) do
  if G[lib] then
    G[lib] = readonly(G[lib])
  end
end
-- `t`, whose missing fields raise the error of a missing global.
local function strict(t)
  return setmetatable(t, {
    __index = function(_, k)
      missing(k)
    end,
    __metatable = false,
  })
end
local env = readonly(strict(G))
G._G = env

local function prepare(f)
  setfenv(f, env)
  return f
end

-- Function libraries share one environment that, as Redis's globals do, shows the loading
-- API (only redis.register_function, redis.log and constants) while a library loads, and
-- the scripts' environment without KEYS and ARGV when its functions run: the functions a
-- library registers are closures of its code, so they see what it saw.
local load_api = {
  redis = readonly(strict({
    register_function = register_function,
    log = log,
    LOG_DEBUG = 0, LOG_VERBOSE = 1, LOG_NOTICE = 2, LOG_WARNING = 3,
    REDIS_VERSION = redis.REDIS_VERSION, REDIS_VERSION_NUM = redis.REDIS_VERSION_NUM,
  })),
}
local loading = false
local function_env = setmetatable({}, {
  __index = function(_, k)
    local v
    if loading then
      v = rawget(load_api, k)
    elseif k ~= 'KEYS' and k ~= 'ARGV' then
      v = rawget(G, k)
    end
    if v == nil then
      missing(k)
    end
    return v
  end,
  __newindex = function()
    error('Attempt to modify a readonly table', 2)
  end,
  __metatable = false,
})

-- Runs a library's compiled code, which registers its functions.
local function load_library(f)
  setfenv(f, function_env)
  loading = true
  local ok, err = xpcall(f, handler)
  loading = false
  return ok, err
end

local function run_function(f, keys, args)
  return xpcall(function() return f(keys, args) end, handler)
end

return run, set_dispatch, prepare, load_library, run_function

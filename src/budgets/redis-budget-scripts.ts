/**
 * The Lua scripts of key budgets in Redis (`redis-budget-store.ts`), so replicas share one
 * running total per key and period and parallel calls on different replicas reserve against
 * it atomically. Keys of one API key share its hash tag (one cluster slot):
 *
 *   <prefix>budget:{<keyId>}:<period start>   hash        t (tokens), r (requests), g (GPU ms)
 *   <prefix>budget:{<keyId>}:resv             sorted set  member = call id|start|t|r|g, score = expiry (ms)
 *
 * A period's hash is created from the request log's sums (`seed`, read from the database by
 * the replica that first needs it; never over a hash that exists) and expires an hour after
 * the period. Reservations expire after `RESERVATION_TTL_MS`, so a crashed replica's do not
 * hold a budget for ever. Time is Redis's clock unless a test passes one.
 */
import { NOW } from '../limits/shared-redis.js';

/** A budget reservation lives this long at most (the longest call it covers). */
const BUDGET_RESERVATION_TTL_MS = 15 * 60_000;

export function budgetKeys(prefix: string, keyId: string, start: number): { totals: string; reserved: string } {
  const base = `${prefix}budget:{${keyId}}`;
  return { totals: `${base}:${start}`, reserved: `${base}:resv` };
}

/** The totals plus the live reservations of period ARGV[2]: ut, ur, ug. Expects `now`. */
const USED = `
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
local h = redis.call('HMGET', KEYS[1], 't', 'r', 'g')
local ut, ur, ug = tonumber(h[1]) or 0, tonumber(h[2]) or 0, tonumber(h[3]) or 0
for _, m in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do
  local s, t, r, g = string.match(m, '|(%d+)|([%d.]+)|([%d.]+)|([%d.]+)$')
  if s == ARGV[2] then
    ut = ut + tonumber(t)
    ur = ur + tonumber(r)
    ug = ug + tonumber(g)
  end
end
`;

/**
 * KEYS totals, resv. ARGV now, start, limit t, r, g ('' = none), need t, r, g (whole numbers, from
 * the caller), call id. Reply {-1}: no totals yet (seed first); {0, kind, ut, ur, ug}: refused;
 * {1, ut, ur, ug}: reserved, this call included. Numbers as strings (GPU ms has fractions).
 */
export const BUDGET_RESERVE_LUA = `${NOW}
if redis.call('EXISTS', KEYS[1]) == 0 then return {-1} end
${USED}
local function over(used, limit, need)
  if limit == '' then return false end
  limit = tonumber(limit)
  return used >= limit or used + need > limit
end
local nt, nr, ng = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
local kind = nil
if over(ur, ARGV[4], nr) then kind = 'requests'
elseif over(ut, ARGV[3], nt) then kind = 'tokens'
elseif over(ug, ARGV[5], ng) then kind = 'gpuSeconds' end
if kind then return {0, kind, tostring(ut), tostring(ur), tostring(ug)} end
local member = ARGV[9] .. '|' .. ARGV[2] .. '|' .. ARGV[6] .. '|' .. ARGV[7] .. '|' .. ARGV[8]
redis.call('ZADD', KEYS[2], now + ${BUDGET_RESERVATION_TTL_MS}, member)
redis.call('PEXPIRE', KEYS[2], ${BUDGET_RESERVATION_TTL_MS + 1000})
return {1, tostring(ut + nt), tostring(ur + nr), tostring(ug + ng), member}
`;

/** KEYS totals. ARGV t, r, g, expire at (ms). Creates the period's totals unless they exist. */
export const BUDGET_SEED_LUA = `
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 't', ARGV[1], 'r', ARGV[2], 'g', ARGV[3])
redis.call('PEXPIREAT', KEYS[1], ARGV[4])
return 1
`;

/**
 * KEYS totals, resv. ARGV member, t, r, g. Ends a reservation and adds the call's use, in one
 * step; totals that are gone (expired, Redis restarted) are left to the next seed, which reads
 * the request log where the call is recorded.
 */
export const BUDGET_SETTLE_LUA = `
redis.call('ZREM', KEYS[2], ARGV[1])
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HINCRBY', KEYS[1], 't', ARGV[2])
redis.call('HINCRBY', KEYS[1], 'r', ARGV[3])
redis.call('HINCRBYFLOAT', KEYS[1], 'g', ARGV[4])
return 1
`;

/** KEYS totals, resv. ARGV now, start. Reply {-1} without totals, else {ut, ur, ug} as strings. */
export const BUDGET_USED_LUA = `${NOW}
if redis.call('EXISTS', KEYS[1]) == 0 then return {-1} end
${USED}
return {tostring(ut), tostring(ur), tostring(ug)}
`;

/**
 * The Lua scripts of the shared limit store (`redis-limit-store.ts`) and the Redis keys they
 * use. Each script runs atomically inside Redis, so a check and the count it guards cannot be
 * interleaved with another replica's: N replicas calling at once still let exactly N calls
 * through an rpm=N window.
 *
 * Keys of one API key (`{keyId}` is a hash tag: the three keys of a key share a cluster slot,
 * so a script only touches keys of one node):
 *
 *   <prefix>limits:{<keyId>}:rpm    sorted set   member = call id, score = arrival (ms)
 *   <prefix>limits:{<keyId>}:tpm    hash         field = second (epoch s), value = tokens
 *   <prefix>limits:{<keyId>}:slots  sorted set   member = call id, score = lease expiry (ms)
 *   <prefix>limits:{<keyId>}:resv   sorted set   member = call id|tokens, score = expiry (ms)
 *
 * Every write sets a TTL no longer than the window or the lease, so an idle key's state goes
 * away by itself and nothing grows without end.
 *
 * Time is Redis's own clock (`TIME`), one clock for every replica, so replicas whose clocks
 * disagree still share one window. Tests pass `now` instead to move time.
 */
import { NOW } from './shared-redis.js';

const RPM_TTL_EXTRA_MS = 1000;
/** A TPM bucket of second `b` holds tokens up to `b + 1 s + window`; one more second of slack. */
const TPM_TTL_EXTRA_MS = 2000;
const TPM_BUCKET_MS = 1000;
/**
 * A TPM reservation lives this long at most: settled when its call ends, but one whose replica
 * crashed must not hold the key's window for ever. A call running longer stops holding it.
 */
const RESERVATION_TTL_MS = 120_000;

export interface LimitKeys {
  rpm: string;
  tpm: string;
  slots: string;
  reserved: string;
}

export function limitKeys(prefix: string, keyId: string): LimitKeys {
  const base = `${prefix}limits:{${keyId}}`;
  return { rpm: `${base}:rpm`, tpm: `${base}:tpm`, slots: `${base}:slots`, reserved: `${base}:resv` };
}

/**
 * The TPM window of a key: `sum` of the finished calls' buckets still in it (older ones are
 * deleted on the way), those buckets oldest first, and `reserved`, the tokens of live
 * reservations (expired ones are dropped). `tpmRetryAfter(need)`: ms until `need` more tokens
 * fit, once enough of the oldest buckets have left; 1 s when the reservations alone leave no room.
 * Expects `now`, `window`, `tpmKey`, `reservedKey`, `tpm`.
 */
const TPM_WINDOW = `
local function tpmWindow()
  local fields = redis.call('HGETALL', tpmKey)
  local buckets = {}
  local sum = 0
  for i = 1, #fields, 2 do
    local second = tonumber(fields[i])
    local tokens = tonumber(fields[i + 1])
    if (second + 1) * ${TPM_BUCKET_MS} + window <= now then
      redis.call('HDEL', tpmKey, fields[i])
    else
      sum = sum + tokens
      buckets[#buckets + 1] = {second, tokens}
    end
  end
  table.sort(buckets, function(a, b) return a[1] < b[1] end)
  redis.call('ZREMRANGEBYSCORE', reservedKey, '-inf', now)
  local reserved = 0
  for _, member in ipairs(redis.call('ZRANGE', reservedKey, 0, -1)) do
    reserved = reserved + (tonumber(string.match(member, '|(%d+)$')) or 0)
  end
  return sum, buckets, reserved
end
local function tpmRetryAfter(sum, buckets, reserved, need)
  for i = 1, #buckets do
    sum = sum - buckets[i][2]
    if sum + reserved + need <= tpm then
      return math.ceil((buckets[i][1] + 1) * ${TPM_BUCKET_MS} + window - now)
    end
  end
  return 1000
end
`;

/**
 * acquire: checks concurrency, then RPM, then TPM (the order of `MemoryLimitStore`), and only
 * when all pass counts the call and takes a slot.
 *
 * KEYS: rpm, tpm, slots, reserved. ARGV: now ('' = Redis time), window ms, rpm, tpm, concurrent ('' = no
 * such limit), call id, lease ms.
 * Reply: {1, slotTaken} or {0, kind, max, retryAfterMs}.
 *
 * - concurrent: expired leases (score <= now: a holder that stopped renewing, e.g. a crashed
 *   replica) are dropped, then ZCARD against the cap; the new slot's lease ends at now + lease.
 * - rpm: ZREMRANGEBYSCORE drops calls 60 s old or older, ZCARD counts the rest. Refused: the
 *   call becomes allowed when the (count - rpm)th oldest leaves, so Retry-After is its score +
 *   window - now (exact, also right after a lowered limit). Refused calls are not added.
 * - tpm: the buckets of the last 61 s are summed (at most 62 fields; older ones are deleted on
 *   the way). A bucket of second b counts until (b + 1) s + window: tokens leave between 60 and
 *   61 s after their call finished, never early. Live reservations count too. Refused while the
 *   sum is >= tpm; Retry-After is when enough of the oldest buckets have left for the sum to
 *   drop below it.
 */
export const ACQUIRE_LUA = `${NOW}
local window = tonumber(ARGV[2])
local rpm = tonumber(ARGV[3])
local tpm = tonumber(ARGV[4])
local tpmKey = KEYS[2]
local reservedKey = KEYS[4]
${TPM_WINDOW}
local concurrent = tonumber(ARGV[5])
local lease = tonumber(ARGV[7])

if concurrent then
  redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
  if redis.call('ZCARD', KEYS[3]) >= concurrent then
    return {0, 'concurrent', concurrent, 1000}
  end
end

if rpm then
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
  local count = redis.call('ZCARD', KEYS[1])
  if count >= rpm then
    local oldest = redis.call('ZRANGE', KEYS[1], count - rpm, count - rpm, 'WITHSCORES')
    local at = tonumber(oldest[2]) or now
    return {0, 'rpm', rpm, math.ceil(at + window - now)}
  end
end

if tpm then
  local sum, buckets, reserved = tpmWindow()
  if sum + reserved >= tpm then
    return {0, 'tpm', tpm, tpmRetryAfter(sum, buckets, reserved, 1)}
  end
end

if rpm then
  redis.call('ZADD', KEYS[1], now, ARGV[6])
  redis.call('PEXPIRE', KEYS[1], window + ${RPM_TTL_EXTRA_MS})
end
if concurrent then
  redis.call('ZADD', KEYS[3], now + lease, ARGV[6])
  redis.call('PEXPIRE', KEYS[3], lease + 1000)
  return {1, 1}
end
return {1, 0}
`;

/**
 * addTokens: adds a finished call's tokens to the bucket of the current second.
 * KEYS: tpm. ARGV: now ('' = Redis time), window ms, tokens (a whole number > 0).
 */
export const ADD_TOKENS_LUA = `${NOW}
local second = math.floor(now / ${TPM_BUCKET_MS})
redis.call('HINCRBY', KEYS[1], string.format('%d', second), ARGV[3])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]) + ${TPM_TTL_EXTRA_MS})
return 1
`;

/**
 * reserveTokens: reserves `need` tokens for a call in flight when they fit beside the window's
 * finished tokens and the live reservations; the reservation expires after RESERVATION_TTL_MS.
 * KEYS: tpm, reserved. ARGV: now ('' = Redis time), window ms, tpm, need (<= tpm), call id.
 * Reply: {1} or {0, retryAfterMs}.
 */
export const RESERVE_LUA = `${NOW}
local window = tonumber(ARGV[2])
local tpm = tonumber(ARGV[3])
local need = tonumber(ARGV[4])
local tpmKey = KEYS[1]
local reservedKey = KEYS[2]
${TPM_WINDOW}
local sum, buckets, reserved = tpmWindow()
if sum + reserved + need > tpm then
  return {0, tpmRetryAfter(sum, buckets, reserved, need)}
end
redis.call('ZADD', reservedKey, now + ${RESERVATION_TTL_MS}, ARGV[5] .. '|' .. need)
redis.call('PEXPIRE', reservedKey, ${RESERVATION_TTL_MS} + 1000)
return {1}
`;

/**
 * settleTokens: ends a reservation (ZREM) and adds the call's real tokens to the bucket of the
 * current second, in one step, so the window never counts both or neither.
 * KEYS: tpm, reserved. ARGV: now ('' = Redis time), window ms, reservation member, tokens (>= 0).
 */
export const SETTLE_LUA = `${NOW}
redis.call('ZREM', KEYS[2], ARGV[3])
local tokens = tonumber(ARGV[4])
if tokens > 0 then
  local second = math.floor(now / ${TPM_BUCKET_MS})
  redis.call('HINCRBY', KEYS[1], string.format('%d', second), tokens)
  redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]) + ${TPM_TTL_EXTRA_MS})
end
return 1
`;

/**
 * renew: moves the lease of this replica's slots that still exist to now + lease (ZADD XX: a
 * slot that already expired, e.g. after a Redis outage, is not brought back, since its place
 * may have been given to another call). Reply: how many slots were renewed.
 * KEYS: slots. ARGV: now ('' = Redis time), lease ms, call ids...
 */
export const RENEW_LUA = `${NOW}
local lease = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local renewed = 0
for i = 3, #ARGV do
  renewed = renewed + redis.call('ZADD', KEYS[1], 'XX', 'CH', now + lease, ARGV[i])
end
if redis.call('ZCARD', KEYS[1]) > 0 then
  redis.call('PEXPIRE', KEYS[1], lease + 1000)
end
return renewed
`;

export type AcquireReply = [1, 0 | 1] | [0, 'rpm' | 'tpm' | 'concurrent', number, number];

/** Checks the shape of the acquire script's reply (a Redis reply is untyped). */
export function parseAcquireReply(reply: unknown): AcquireReply {
  if (Array.isArray(reply)) {
    if (reply.length === 2 && reply[0] === 1 && (reply[1] === 0 || reply[1] === 1)) return reply as AcquireReply;
    if (
      reply.length === 4 &&
      reply[0] === 0 &&
      (reply[1] === 'rpm' || reply[1] === 'tpm' || reply[1] === 'concurrent') &&
      typeof reply[2] === 'number' &&
      typeof reply[3] === 'number'
    ) {
      return reply as AcquireReply;
    }
  }
  throw new Error(`unexpected reply from the acquire script: ${JSON.stringify(reply)}`);
}

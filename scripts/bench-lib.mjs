// Helpers shared by the side-by-side benchmark drivers (bench-cache.mjs, bench-converge.mjs) and
// the fault scripts: statistics, number formatting, a seeded RNG, and an undici request that
// rides out API-server overload.
import { setTimeout as sleep } from 'node:timers/promises';
import { request } from 'undici';

export const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
};
export const ratio = (a, b) => (a == null || b == null || b === 0 ? null : Math.round((a / b) * 1000) / 1000);
export const round1 = (x) => (x == null ? null : Math.round(x * 10) / 10);
/** mulberry32: small, seedable, good enough for reproducible fault plans and kill times. */
export function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
export const mib = (bytes) => (bytes == null ? '-' : (bytes / 2 ** 20).toFixed(1));

/** undici's `request` with retries for overload (429, 5xx) and dropped connections. */
export async function send(dispatcher, url, method, body, contentType = 'application/json') {
  for (let attempt = 1; ; attempt++) {
    try {
      const res = await request(url, {
        method,
        dispatcher,
        headers: { accept: 'application/json', ...(body ? { 'content-type': contentType } : {}) },
        body: body ? JSON.stringify(body) : undefined,
      });
      const text = await res.body.text();
      if ((res.statusCode === 429 || res.statusCode >= 500) && attempt < 6) {
        await sleep(100 * attempt);
        continue;
      }
      return { status: res.statusCode, text };
    } catch (error) {
      if (attempt >= 6) throw error;
      await sleep(100 * attempt);
    }
  }
}

/**
 * On SIGINT or SIGTERM: `onStop()` (so loops stop starting work), then `cleanUp()` (every process
 * the script started, by PID), then exit 130 or 143 as a shell expects.
 */
export function exitOnSignals(log, cleanUp, onStop) {
  for (const signal of ['SIGINT', 'SIGTERM']) {
    process.once(signal, () => {
      onStop();
      log(`${signal}: stopping`);
      cleanUp().finally(() => process.exit(signal === 'SIGINT' ? 130 : 143));
    });
  }
}

// Which Patroni the benchmarks run and what it makes of their settings, pure: the releases a
// `--systems` entry names, the version a requirements file pins or a `--version` prints, the HA
// timings Patroni accepts, and the watchdog's state here. patroni.mjs installs and starts them.

/**
 * `--systems` entries that run Patroni. `patroni` is Patroni 4 from PyPI, pinned by its
 * requirements file; `patroni3` keeps Debian's 3.0.2, what the benchmarks ran before, as an
 * optional extra column (issue 39).
 */
export const PATRONI_RELEASES = {
  patroni: {
    source: 'PyPI, bench/failover/patroni-requirements.txt',
    requirements: 'bench/failover/patroni-requirements.txt',
  },
  patroni3: { source: "Debian's patroni package", executable: '/usr/bin/patroni', aptPackage: 'patroni' },
};
export const PATRONI_SYSTEMS = Object.keys(PATRONI_RELEASES);

/**
 * Kanri's defaults (PostgresCluster spec.ha) in Patroni's terms; see bench/README.md. What a
 * Patroni is given is `patroniTimings(PATRONI_DCS, version)`: Patroni 4 does not take them all.
 */
export const PATRONI_DCS = {
  ttl: 15, // leaseDurationSeconds
  loop_wait: 2, // retryPeriodSeconds
  retry_timeout: 10, // renewDeadlineSeconds
  maximum_lag_on_failover: 16 * 1024 * 1024, // maximumLagOnFailover
};

/**
 * The version a requirements file pins for `name` (`name==x` or `name[extra]==x`), or null.
 *
 * @example
 * pinnedVersion('# Patroni\npatroni[etcd3]==4.1.5\n', 'patroni'); // '4.1.5'
 */
export function pinnedVersion(text, name) {
  for (const raw of text.split('\n')) {
    const line = raw.replace(/#.*/, '').trim();
    const m = /^([A-Za-z0-9._-]+)(\[[^\]]*\])?\s*==\s*([^\s;]+)/.exec(line);
    if (m && m[1].toLowerCase() === name.toLowerCase()) return m[3];
  }
  return null;
}

/**
 * The version in what `patroni --version` prints: `patroni 3.0.2` from Debian's script, or
 * `__main__.py 4.1.5` when run as a module; null when there is none.
 */
export function parsePatroniVersion(output) {
  return /(?:^|\s)(\d+\.\d+\.\d+)\s*$/.exec(String(output ?? '').trim())?.[1] ?? null;
}

const parts = (version) => String(version).split('.').map(Number);
/** Whether dotted `version` is `floor` or later. */
export function versionAtLeast(version, floor) {
  const [a, b] = [parts(version), parts(floor)];
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    if ((a[i] ?? 0) !== (b[i] ?? 0)) return (a[i] ?? 0) > (b[i] ?? 0);
  }
  return true;
}

/**
 * The DCS timings to give Patroni `version` for the `wished` ones (Kanri's, PATRONI_DCS), and
 * what had to change. Since 3.2.0 Patroni enforces ttl ≥ 20 s, retry_timeout ≥ 3 s, loop_wait ≥ 1 s
 * and loop_wait + 2 × retry_timeout ≤ ttl, and silently rewrites a config that breaks them
 * (Config._validate_and_adjust_timeouts: Kanri's 15/2/10 would run as ttl 20, loop_wait 1,
 * retry_timeout 9). So the benchmark asks for a config it keeps: loop_wait stays (both systems'
 * leaders renew on that period and the kills spread over it, cli.mjs renewPeriodMs), ttl rises to
 * its floor, retry_timeout shrinks until the rule holds. 3.0.2 takes the wished ones as they are.
 *
 * @example
 * patroniTimings({ ttl: 15, loop_wait: 2, retry_timeout: 10 }, '4.1.5');
 * // { ttl: 20, loop_wait: 2, retry_timeout: 9, changed: ['ttl 15 → 20 (…)', 'retry_timeout 10 → 9 (…)'] }
 */
export function patroniTimings(wished, version) {
  const { ttl, loop_wait, retry_timeout } = wished;
  if (!versionAtLeast(version, '3.2.0')) return { ttl, loop_wait, retry_timeout, changed: [] };
  const changed = [];
  const t = Math.max(ttl, 20);
  if (t !== ttl) changed.push(`ttl ${ttl} → ${t} (Patroni ≥ 3.2 takes no ttl under 20 s)`);
  const l = Math.max(loop_wait, 1);
  if (l !== loop_wait) changed.push(`loop_wait ${loop_wait} → ${l} (Patroni's floor)`);
  const r = Math.max(3, Math.min(retry_timeout, Math.floor((t - l) / 2)));
  if (r !== retry_timeout)
    changed.push(`retry_timeout ${retry_timeout} → ${r} (Patroni ≥ 3.2 needs loop_wait + 2 × retry_timeout ≤ ttl)`);
  if (l + 2 * r > t) throw new Error(`no retry_timeout ≥ 3 fits ttl ${t} with loop_wait ${l}`);
  return { ttl: t, loop_wait: l, retry_timeout: r, changed };
}

/**
 * Patroni's watchdog setting for these benchmarks and why. It is off whatever the machine has:
 * the three members share one kernel, and /dev/watchdog is one device that one process opens at a
 * time; worse, every power-loss trial SIGKILLs the leader's Patroni with the device open, and a
 * watchdog closed without its magic character is not stopped: it would reset the whole machine
 * ttl − safety_margin (15 s) later. A watchdog fences a member's own host; that needs a host (or
 * VM) per member. `available` records whether this machine has the device at all.
 *
 * @example
 * watchdogSetting({ devicePresent: false }); // { mode: 'off', available: false, why: '…' }
 */
export function watchdogSetting({ devicePresent }) {
  const device = devicePresent
    ? '/dev/watchdog exists, but'
    : 'this machine has no /dev/watchdog (no softdog module; a container cannot load one), and even with one';
  return {
    mode: 'off',
    available: Boolean(devicePresent),
    why:
      `${device} all three members share one kernel and one device, and a power-loss trial kills the ` +
      "leader's Patroni with the device open, which would reset the whole machine: a watchdog needs a host per member",
  };
}

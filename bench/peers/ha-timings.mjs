// The HA timings every system of bench:peers runs with, where it has a setting for them: the
// leader lock's time to live, how long a leader keeps retrying before it gives up its role, and
// how often it renews. Patroni 4 takes no ttl under 20 s (patroni-release.mjs, patroniTimings),
// so Kanri runs Patroni 4's figures here rather than its own defaults (15/10/2): a comparison at
// unequal lock lifetimes would measure the settings, not the systems.
import { PATRONI_DCS, patroniTimings } from '../failover/patroni-release.mjs';

/** Patroni's pinned version in bench/failover/patroni-requirements.txt; its timings floor applies from 3.2. */
const PATRONI_4 = '4.1.5';

const patroni = patroniTimings(PATRONI_DCS, PATRONI_4);

/** The timings, in seconds, with Kanri's and Patroni's names for each. */
export const PEER_HA = Object.freeze({
  leaseSeconds: patroni.ttl,
  renewDeadlineSeconds: patroni.retry_timeout,
  retryPeriodSeconds: patroni.loop_wait,
  maximumLagOnFailoverBytes: PATRONI_DCS.maximum_lag_on_failover,
});

/** Kanri's `spec.ha` for PEER_HA. */
export const kanriHa = () => ({
  leaseDurationSeconds: PEER_HA.leaseSeconds,
  renewDeadlineSeconds: PEER_HA.renewDeadlineSeconds,
  retryPeriodSeconds: PEER_HA.retryPeriodSeconds,
  maximumLagOnFailover: PEER_HA.maximumLagOnFailoverBytes,
});

/** Patroni's DCS settings for PEER_HA. */
export const patroniDcs = () => ({
  ttl: PEER_HA.leaseSeconds,
  retry_timeout: PEER_HA.renewDeadlineSeconds,
  loop_wait: PEER_HA.retryPeriodSeconds,
  maximum_lag_on_failover: PEER_HA.maximumLagOnFailoverBytes,
});

/**
 * The operator ↔ agent contract. `operator/` and `agent/` are siblings that import only this
 * module and the API (`api/`), never each other (a test checks it): names and labels, the Pod
 * report, the peer-status wire type, postgresql.conf rules, the instance RBAC rules and the HA
 * defaults all live here, so the two sides cannot drift apart.
 */

export * from './admission/instance-admission-policy.js';
export * from './admission/instance-backup-policy.js';
export * from './admission/repo-host-admission-policy.js';
export * from './clone-gateway.js';
export * from './default-user.js';
export * from './ha-defaults.js';
export * from './instance-environment.js';
export * from './instance-rbac.js';
export * from './instance-report.js';
export * from './leader-history.js';
export * from './names.js';
export * from './peer-status.js';
export * from './pgbackrest.js';
export * from './postgres-settings.js';
export * from './postgres-tls.js';
export * from './repo-host.js';
export * from './repo-host-rbac.js';
export * from './repo-paths.js';
export * from './restore-source.js';
export * from './switchover-order.js';

/**
 * Credentials. Passwords come in from the caller (kept from the existing Secret, or generated
 * once), so builders stay pure and a password never changes behind a running application.
 */
import type { Secret } from 'kubernetes-types/core/v1.js';
import type { PostgresCluster } from '../../api/postgres-cluster.js';
import { effectiveUsers, LABEL, names, PORT, REPLICATION_USER, SUPERUSER } from '../../contract/index.js';
import { clusterLabels } from './labels.js';

export interface Credentials {
  readonly superuser: string;
  readonly replication: string;
  /** Password per declared user name. */
  readonly users: Readonly<Record<string, string>>;
}

/** Every Secret name the cluster needs, with the user each belongs to. */
export function secretNames(cluster: PostgresCluster): { name: string; user: string }[] {
  const c = cluster.metadata?.name ?? '';
  return [
    { name: names.superuserSecret(c), user: SUPERUSER },
    { name: names.replicationSecret(c), user: REPLICATION_USER },
    ...effectiveUsers(cluster.spec.users, c).map((u) => ({ name: names.userSecret(c, u.name), user: u.name })),
  ];
}

export function secrets(cluster: PostgresCluster, credentials: Credentials): Secret[] {
  const c = cluster.metadata?.name ?? '';
  const namespace = cluster.metadata?.namespace;
  const host = `${names.primaryService(c)}.${namespace}.svc`;
  const port = String(PORT.postgres);
  const secret = (name: string, data: Record<string, string>, user?: string): Secret => ({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, namespace, labels: { ...clusterLabels(c), ...(user ? { [LABEL.user]: user } : {}) } },
    type: 'Opaque',
    stringData: data,
  });
  const forUser = (user: string, password: string, dbname: string) =>
    ({
      host,
      port,
      dbname,
      user,
      password,
      uri: `postgresql://${encodeURIComponent(user)}:${encodeURIComponent(password)}@${host}:${port}/${encodeURIComponent(dbname)}`,
      // PGO's form, for Java applications: the JDBC driver takes user and password as parameters.
      'jdbc-uri': `jdbc:postgresql://${host}:${port}/${encodeURIComponent(dbname)}?password=${encodeURIComponent(password)}&user=${encodeURIComponent(user)}`,
    }) as Record<string, string>;
  return [
    secret(names.superuserSecret(c), forUser(SUPERUSER, credentials.superuser, 'postgres')),
    secret(names.replicationSecret(c), { user: REPLICATION_USER, password: credentials.replication }),
    ...effectiveUsers(cluster.spec.users, c).map((u) =>
      secret(
        names.userSecret(c, u.name),
        forUser(u.name, credentials.users[u.name] ?? '', u.databases?.[0] ?? u.name),
        // Found again by this label once the user leaves the spec (removed-users.ts).
        u.name,
      ),
    ),
  ];
}

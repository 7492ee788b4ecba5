/**
 * Keeps postgres's configuration files in PGDATA equal to what the operator's ConfigMap and the
 * agent's own settings say. Writes are serialised and only touch files whose content changed.
 * The last configuration taken from the ConfigMap is kept in the run volume too, so an agent
 * restarted while the ConfigMap is gone serves it again rather than something weaker.
 */
import { join } from 'node:path';
import { memberServerName, type PostgresTlsFiles } from '../../contract/index.js';
import type { AgentConfig } from '../config.js';
import { readIfExists, writeFileIfChanged } from '../files.js';
import type { Logger } from '../log/logger.js';
import { type Material, type OperatorConfig, readOperatorConfig } from '../plan/material-plan.js';
import {
  buildAgentSettings,
  buildPassfile,
  CONFIG_KEY,
  type ConnectionToPrimary,
  KANRI_CONF,
  renderKanriConf,
  renderPgHba,
  withKanriInclude,
} from '../plan/postgres-conf.js';

/** The primary to follow, as the replica role knows it: the name to verify and the TLS files are the agent's. */
export type PrimaryToFollow = Omit<ConnectionToPrimary, 'serverName' | 'tls'>;

export class InstanceFiles {
  readonly #config: AgentConfig;
  readonly #log: Logger;
  #operator: OperatorConfig | undefined;
  #keeping: Promise<unknown> = Promise.resolve();
  #primary: PrimaryToFollow | undefined;
  #slot: string | undefined;
  #synchronousStandbyNames = '';
  #tls: PostgresTlsFiles | undefined;
  #tlsRequired = false;
  #writtenSynchronousStandbyNames: string | undefined;
  #queue: Promise<unknown> = Promise.resolve();
  #lastOverridden = '';

  constructor(config: AgentConfig, log: Logger) {
    this.#config = config;
    this.#log = log;
  }

  /** Where the replication password is kept for primary_conninfo (the run volume, not PGDATA). */
  get passfile(): string {
    return join(this.#config.runDir, 'replication.pgpass');
  }

  /** Where the last configuration taken from the ConfigMap is kept (the run volume: gone with the Pod). */
  get keptConfigPath(): string {
    return join(this.#config.runDir, 'operator-config.json');
  }

  /**
   * The operator's configuration (plan/material-plan.ts readOperatorConfig), kept in the run volume
   * as well unless it came from there.
   */
  setOperatorConfig(config: OperatorConfig, options: { readonly keep?: boolean } = {}): void {
    this.#operator = config;
    if (options.keep === false) return;
    const text = JSON.stringify({ [CONFIG_KEY.parameters]: config.parameters, [CONFIG_KEY.hba]: config.hba });
    this.#keeping = this.#keeping
      .then(() => writeFileIfChanged(this.keptConfigPath, text, 0o600))
      .catch((error: unknown) => this.#log.warn({ err: error }, 'cannot keep a copy of the cluster configuration'));
  }

  /** The configuration this Pod's agent last took from the ConfigMap (before a restart), or why there is none. */
  async readKeptOperatorConfig(): Promise<Material<OperatorConfig>> {
    const source = { what: `the copy kept in ${this.keptConfigPath}`, known: true };
    try {
      const text = await readIfExists(this.keptConfigPath);
      return readOperatorConfig(text === undefined ? undefined : (JSON.parse(text) as Record<string, string>), source);
    } catch (error) {
      return { missing: `${source.what} cannot be read: ${(error as Error).message}` };
    }
  }

  /** The operator's configuration is known (from the ConfigMap, or kept from it). */
  get hasOperatorConfig(): boolean {
    return this.#operator !== undefined;
  }

  /** Replicas: the primary to stream from (undefined: none known) and the slot to use. */
  setPrimary(primary: PrimaryToFollow | undefined, slot: string | undefined): void {
    this.#primary = primary;
    this.#slot = slot;
  }

  /**
   * The cluster's TLS files (undefined until the agent has them) and whether spec.tls.required
   * refuses plain connections.
   */
  setTls(files: PostgresTlsFiles | undefined, required: boolean): void {
    this.#tls = files;
    this.#tlsRequired = required;
  }

  /** The TLS files in use; undefined while postgres serves without TLS. */
  get tls(): PostgresTlsFiles | undefined {
    return this.#tls;
  }

  /** Primary: the synchronous_standby_names value ('' for none). */
  setSynchronousStandbyNames(value: string): void {
    this.#synchronousStandbyNames = value;
  }

  /** synchronous_standby_names as the files on disk say; undefined before the first write. */
  get writtenSynchronousStandbyNames(): string | undefined {
    return this.#writtenSynchronousStandbyNames;
  }

  /** True once the files were written (by the role that owns them): configuration changes may rewrite them from then on. */
  get written(): boolean {
    return this.#writtenSynchronousStandbyNames !== undefined;
  }

  /** Writes every file that differs; resolves true when postgres must reload to see a change. */
  write(): Promise<boolean> {
    const next = this.#queue.then(() => this.#write());
    this.#queue = next.catch(() => undefined);
    return next;
  }

  async #write(): Promise<boolean> {
    const { pgdata, podIP, podName, socketDir, replicationPassword, cluster, namespace } = this.#config;
    const settings = buildAgentSettings({
      podIP,
      podName,
      socketDir,
      primary: this.#primary && {
        ...this.#primary,
        serverName: memberServerName(cluster, namespace),
        ...(this.#tls ? { tls: this.#tls } : {}),
      },
      slot: this.#slot,
      synchronousStandbyNames: this.#synchronousStandbyNames,
      archiveCommand: this.#config.archiveCommand,
      ...(this.#tls ? { tls: this.#tls } : {}),
    });
    const { text, overridden } = renderKanriConf(this.#operator?.parameters, settings);
    const overriddenKey = overridden.join(',');
    if (overriddenKey && overriddenKey !== this.#lastOverridden)
      this.#log.warn({ parameters: overridden }, 'the cluster configuration sets parameters the agent owns; ignored');
    this.#lastOverridden = overriddenKey;

    await writeFileIfChanged(this.passfile, buildPassfile(replicationPassword));
    const postgresqlConf = join(pgdata, 'postgresql.conf');
    const current = (await readIfExists(postgresqlConf)) ?? '';
    let changed = await writeFileIfChanged(postgresqlConf, withKanriInclude(current));
    changed = (await writeFileIfChanged(join(pgdata, KANRI_CONF), text)) || changed;
    changed =
      (await writeFileIfChanged(
        join(pgdata, 'pg_hba.conf'),
        renderPgHba(this.#operator?.hba, { serving: this.#tls !== undefined, required: this.#tlsRequired }),
      )) || changed;
    this.#writtenSynchronousStandbyNames = settings.synchronous_standby_names;
    return changed;
  }
}

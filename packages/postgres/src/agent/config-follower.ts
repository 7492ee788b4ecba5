/**
 * Follows the operator's ConfigMap (names.config: parameters and pg_hba.conf) for the agent: a
 * change of what it says becomes a reload request, which the role cycle serves by rewriting the
 * files and reloading postgres (agent/requests/postgres-requests.ts); and the spec, which wakes the
 * primary's tasks. Fail closed: a ConfigMap deleted, or lacking a key, leaves the configuration
 * taken last in force (kept in the run volume across a restart of the agent), never the built-in
 * default; the operator re-creates it.
 */
import { names } from '../contract/index.js';
import type { AgentContext } from './context.js';
import { type OperatorConfig, readOperatorConfig } from './plan/material-plan.js';

export class ConfigFollower {
  readonly #ctx: AgentContext;
  /** What was last logged about the ConfigMap being unusable, so each change is logged once. */
  #logged: string | undefined;
  /** The configuration in force, as text: a ConfigMap event that says the same asks for nothing. */
  #inForce: string | undefined;

  constructor(ctx: AgentContext) {
    this.#ctx = ctx;
  }

  /** Why the agent has no configuration of the cluster's at all (postgres must not start); undefined once it has one. */
  get missing(): string | undefined {
    const { files, view } = this.#ctx;
    if (files.hasOperatorConfig) return undefined;
    // Read now: a first list that finds nothing delivers no change, and "not known yet" would stay.
    const read = readOperatorConfig(view.configData, this.#source());
    return 'missing' in read ? read.missing : 'the cluster configuration is being taken';
  }

  #source() {
    const { view, config } = this.#ctx;
    return { what: `ConfigMap ${names.config(config.cluster)}`, known: view.materialKnown.config };
  }

  /**
   * Takes the ConfigMap, or else the copy kept from it before a restart, and follows its changes;
   * resolves the unsubscribe function.
   *
   * @example
   * ```ts
   * const unfollow = await new ConfigFollower(ctx).follow();
   * ```
   */
  async follow(): Promise<() => void> {
    const { view, files, primaryWakeup } = this.#ctx;
    const kept = await files.readKeptOperatorConfig();
    if ('value' in kept) {
      files.setOperatorConfig(kept.value, { keep: false });
      this.#inForce = text(kept.value);
    }
    const offConfig = view.onConfigChange((data) => this.#change(data));
    const offCluster = view.onClusterChange(() => primaryWakeup.wake());
    // The cache may have listed while the kept copy was read: its version wins.
    this.#take(view.configData);
    return () => {
      offConfig();
      offCluster();
    };
  }

  /** Takes `data` when it is whole, else keeps what is in force; returns whether that changed what is in force. */
  #take(data: Readonly<Record<string, string>> | undefined): boolean {
    const { files, log } = this.#ctx;
    const source = this.#source();
    const read = readOperatorConfig(data, source);
    if ('value' in read) {
      if (this.#logged) log.info(`${source.what} is whole again; following it`);
      this.#logged = undefined;
      files.setOperatorConfig(read.value);
      const taken = text(read.value);
      const changed = taken !== this.#inForce;
      this.#inForce = taken;
      return changed;
    }
    // Before the first list, "absent" is no news: nothing to say yet.
    if (source.known && read.missing !== this.#logged) {
      this.#logged = read.missing;
      if (files.hasOperatorConfig)
        log.warn(
          { problem: read.missing },
          `keeping the cluster configuration in force (pg_hba.conf, parameters) until ${source.what} is whole again (the operator re-creates it)`,
        );
      else log.warn({ problem: read.missing }, 'no cluster configuration yet');
    }
    return false;
  }

  #change(data: Readonly<Record<string, string>> | undefined): void {
    // Asked even before a role first wrote the files: a write under way may have rendered the
    // configuration before this change, and a reload more costs nothing.
    if (this.#take(data)) this.#ctx.requests.requestReload('the cluster configuration changed');
  }
}

function text(config: OperatorConfig): string {
  return JSON.stringify([config.parameters, config.hba]);
}

/**
 * What the agent's activities ask of postgres, for the role cycle to serve: a reload (its
 * configuration changed, or a file it reads on reload, a certificate) or a restart in place (the
 * operator's token on the Pod, requests/restart-in-place.ts). Activities that see a change only record
 * it here; the role that runs postgres takes it and acts (requests/serve-requests.ts), so one place
 * decides what postgres does and nothing reloads a postgres that a role is stopping, promoting or
 * rewinding.
 *
 * Guarantees: what `take` hands over is handed over once. Reloads coalesce: any number asked
 * before a `take` are served by one reload, which names every distinct reason. A restart
 * supersedes the reloads asked before it (postgres reads every file as it starts), and a newer
 * token replaces an older one not yet taken (the operator asks for the latest only). Requests stay
 * until taken: the cycle takes them only while postgres runs.
 */

/** One piece of work for the role cycle, with why it was asked. */
export type PostgresRequest =
  | { readonly kind: 'reload'; readonly reasons: readonly string[] }
  | { readonly kind: 'restart'; readonly token: string; readonly reasons: readonly string[] };

/**
 * @example
 * ```ts
 * const requests = new PostgresRequests(() => wakeup.wake());
 * requests.requestReload('the TLS certificates changed');
 * const request = requests.take(); // { kind: 'reload', reasons: ['the TLS certificates changed'] }
 * ```
 */
export class PostgresRequests {
  #reasons: string[] = [];
  #restartToken: string | undefined;
  readonly #onRequest: () => void;

  /** `onRequest` runs after every request: it wakes the role cycle, so the request is served at once. */
  constructor(onRequest: () => void = () => undefined) {
    this.#onRequest = onRequest;
  }

  /** Something was asked and not taken yet. */
  get pending(): boolean {
    return this.#reasons.length > 0 || this.#restartToken !== undefined;
  }

  /** postgres must re-read its configuration files (written by the cycle first) and certificates. */
  requestReload(reason: string): void {
    if (!this.#reasons.includes(reason)) this.#reasons.push(reason);
    this.#onRequest();
  }

  /** postgres must restart in place, answering the operator's `token` (contract ANNOTATION.restartPostgres). */
  requestRestart(token: string, reason: string): void {
    // Asked again while pending (every change of the Pod repeats it): nothing new to wake for.
    if (this.#restartToken === token) return;
    this.#restartToken = token;
    if (!this.#reasons.includes(reason)) this.#reasons.push(reason);
    this.#onRequest();
  }

  /**
   * Takes back a request the cycle could not serve (postgres stopped under it, a write failed), to
   * be served at the cycle's next lap; without waking it, so a failure does not spin. A restart
   * token replaced meanwhile stays replaced.
   */
  retryLater(request: PostgresRequest): void {
    this.#reasons = [...request.reasons, ...this.#reasons.filter((r) => !request.reasons.includes(r))];
    if (request.kind === 'restart') this.#restartToken ??= request.token;
  }

  /** Hands over what was asked (a restart, which serves the reloads too, or one reload), or undefined. */
  take(): PostgresRequest | undefined {
    const reasons = this.#reasons;
    const token = this.#restartToken;
    this.#reasons = [];
    this.#restartToken = undefined;
    if (token !== undefined) return { kind: 'restart', token, reasons };
    return reasons.length > 0 ? { kind: 'reload', reasons } : undefined;
  }
}

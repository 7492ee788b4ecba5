/**
 * The manager's webhook side: a serving certificate, the HTTPS admission server on every replica
 * (not only the leader: the Service sends each call to any ready Pod), and the
 * ValidatingWebhookConfiguration pointed at it with the right `caBundle`.
 *
 * Start-up: certificate (generated in memory, or shared through a Secret so every replica serves
 * one CA) → server → configuration in the background, retried with backoff until it is in place
 * (`configured` resolves then). A timer re-checks the certificate and renews it before it
 * expires, from the same CA, without a restart. `stop()` closes the server and its connections.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { type KubeClient, type KubeObject, NotFoundError } from '@kanri/client';
import { Backoff } from '@kanri/timing';
import type { Logger } from '../logger.js';
import { parseBindAddress } from '../net/bind-address.js';
import {
  createServingCertificate,
  type ServingCertificate,
  serviceDnsNames,
  servingCertificateProblem,
  subjectAltNames,
} from '../pki/serving-cert.js';
import { ensureServingCertificateSecret } from '../pki/serving-cert-secret.js';
import type { AdmissionHandler } from './admission-review.js';
import { type AdmissionServer, startAdmissionServer } from './admission-server.js';
import { CRD_DELETION_GUARD_PATH, crdDeletionGuard } from './crd-deletion-guard.js';
import { CRD_DELETION_GUARD_WEBHOOK, crdDeletionGuardWebhook } from './crd-deletion-guard-manifests.js';

export interface WebhookOptions {
  /** Where the HTTPS server listens, `host:port`. Default `:9443`. */
  readonly bindAddress?: string;
  /** In cluster: the Service in front of the operator's Pods (port default 443). Its DNS names go into the certificate. */
  readonly service?: { readonly name: string; readonly namespace: string; readonly port?: number };
  /**
   * Out of cluster: the base URL the API server calls, e.g. `https://127.0.0.1:9443`; its host goes
   * into the certificate. Default without `service`: `https://<bind host or 127.0.0.1>:<bound port>`.
   */
  readonly url?: string;
  /** The ValidatingWebhookConfiguration. Default `<manager name>-crd-deletion-guard`. */
  readonly configurationName?: string;
  /**
   * Who installs the ValidatingWebhookConfiguration. `'manager'` (default without `service`): the
   * manager applies all of it, which needs `create` on validatingwebhookconfigurations.
   * `'manifests'` (default with `service`): the operator's manifests install it
   * (`crdDeletionGuardWebhook` without caBundle) and the manager only sets its caBundle, which
   * needs `get` and `patch` on that one name.
   */
  readonly installedBy?: 'manager' | 'manifests';
  /**
   * A Secret in `service.namespace` that holds the CA and certificate, so every replica serves the
   * same CA (the configuration trusts one). Default with `service`: `<manager name>-webhook-cert`;
   * without: none, the certificate lives in memory (one replica). `false` forces memory.
   */
  readonly certificateSecret?: string | false;
  /** Run the CRD deletion guard. Default true. */
  readonly crdDeletionGuard?: boolean;
  /** Guard only these CRDs (by name); default every CRD labelled `app.kubernetes.io/managed-by: kanri`. */
  readonly crdNames?: readonly string[];
  /** How often the certificate is checked for renewal. Default 12 hours. */
  readonly renewCheckIntervalMs?: number;
  /** Validity of each serving certificate the manager issues, in days (fractions allowed). Default 365. */
  readonly certificateValidityDays?: number;
  /** Renew the serving certificate when fewer days than this remain (fractions allowed). Default 30. */
  readonly renewBeforeDays?: number;
}

/**
 * Runs the admission webhooks for a manager; `Manager` creates one from its `webhook` option.
 *
 * @example
 * ```ts
 * const manager = await Manager.create({
 *   name: 'website-operator',
 *   webhook: { service: { name: 'website-operator-webhook', namespace: 'website-operator-system' } },
 * });
 * void manager.start();
 * await manager.webhooks?.configured; // the ValidatingWebhookConfiguration trusts this replica's CA
 * ```
 */
export class WebhookRunner {
  readonly configurationName: string;
  readonly #client: KubeClient;
  readonly #options: WebhookOptions;
  readonly #managerName: string;
  readonly #log: Logger;
  readonly #stopping = new AbortController();
  #server: AdmissionServer | undefined;
  #certificate: ServingCertificate | undefined;
  #url: string | undefined;
  #timer: NodeJS.Timeout | undefined;
  #configuring: Promise<void> = Promise.resolve();
  #configured: { promise: Promise<void>; resolve: () => void };

  constructor(client: KubeClient, options: WebhookOptions, managerName: string, logger: Logger) {
    this.#client = client;
    this.#options = options;
    this.#managerName = managerName;
    this.#log = logger.child({ component: 'webhook' });
    this.configurationName = options.configurationName ?? `${managerName}-crd-deletion-guard`;
    const validity = options.certificateValidityDays ?? 365;
    const renewBefore = options.renewBeforeDays ?? 30;
    // Otherwise every check would find the fresh certificate due and renew it again.
    if (!(renewBefore >= 0 && renewBefore < validity))
      throw new RangeError(
        `webhook renewBeforeDays (${renewBefore}) must be at least 0 and less than certificateValidityDays (${validity})`,
      );
    let resolve = () => {};
    const promise = new Promise<void>((r) => {
      resolve = r;
    });
    this.#configured = { promise, resolve };
  }

  /** The bound port, once started. */
  get port(): number | undefined {
    return this.#server?.port;
  }

  /** The base URL the configuration points at (url form), once started. */
  get url(): string | undefined {
    return this.#url;
  }

  /** The CA in the configuration's caBundle, once started. */
  get caCertPem(): string | undefined {
    return this.#certificate?.caCertPem;
  }

  /** Resolves once the configuration carries this server's CA (never rejects; failures are retried and logged). */
  get configured(): Promise<void> {
    return this.#configured.promise;
  }

  get #installedBy(): 'manager' | 'manifests' {
    return this.#options.installedBy ?? (this.#options.service ? 'manifests' : 'manager');
  }

  get #secretName(): string | undefined {
    const { certificateSecret, service } = this.#options;
    if (certificateSecret === false || !service) return undefined;
    return certificateSecret ?? `${this.#managerName}-webhook-cert`;
  }

  /** Starts serving; rejects only if the server cannot bind or `signal` aborts while the certificate is fetched. */
  async start(signal: AbortSignal): Promise<void> {
    const stop = AbortSignal.any([signal, this.#stopping.signal]);
    const bind = parseBindAddress(this.#options.bindAddress ?? ':9443');
    const handlers: Record<string, AdmissionHandler> = {};
    if (this.#options.crdDeletionGuard ?? true) {
      handlers[CRD_DELETION_GUARD_PATH] = crdDeletionGuard(this.#client, {
        ...(this.#options.crdNames ? { crdNames: this.#options.crdNames } : {}),
      });
    }
    // The URL's host is known before binding unless it is derived from the port the OS picks.
    const boundHost = !bind.host || bind.host === '0.0.0.0' || bind.host === '::' ? '127.0.0.1' : bind.host;
    const urlHost = this.#options.url ? new URL(this.#options.url).hostname : boundHost;
    this.#certificate = await this.#retry('get the serving certificate', stop, () => this.#loadCertificate(urlHost));
    this.#server = await startAdmissionServer({
      bindAddress: this.#options.bindAddress ?? ':9443',
      certificate: this.#certificate,
      handlers,
      logger: this.#log,
    });
    this.#url = this.#options.service
      ? undefined
      : (this.#options.url ?? `https://${boundHost.includes(':') ? `[${boundHost}]` : boundHost}:${this.#server.port}`);
    this.#log.info({ port: this.#server.port, paths: Object.keys(handlers) }, 'serving admission webhooks');
    this.#configure(stop);
    this.#timer = setInterval(() => void this.#renew(urlHost), this.#options.renewCheckIntervalMs ?? 12 * 3_600_000);
    this.#timer.unref();
  }

  /** Closes the server and its connections. */
  async stop(): Promise<void> {
    this.#stopping.abort();
    clearInterval(this.#timer);
    await this.#configuring.catch(() => {});
    await this.#server?.close();
  }

  #names(urlHost: string): { dnsNames: string[]; ipAddresses: string[] } {
    const service = this.#options.service;
    return subjectAltNames(service ? serviceDnsNames(service.name, service.namespace) : [urlHost]);
  }

  async #loadCertificate(urlHost: string, previous?: ServingCertificate): Promise<ServingCertificate> {
    const names = this.#names(urlHost);
    const secret = this.#secretName;
    const service = this.#options.service;
    const { certificateValidityDays: validityDays, renewBeforeDays } = this.#options;
    if (secret && service) {
      return ensureServingCertificateSecret(this.#client, {
        namespace: service.namespace,
        name: secret,
        ...names,
        ...(validityDays !== undefined ? { validityDays } : {}),
        ...(renewBeforeDays !== undefined ? { renewBeforeDays } : {}),
        fieldManager: `${this.#managerName}/webhook`,
        signal: this.#stopping.signal,
      });
    }
    const problem = previous
      ? servingCertificateProblem(previous, { ...names, ...(renewBeforeDays !== undefined ? { renewBeforeDays } : {}) })
      : undefined;
    if (previous && !problem) return previous;
    return createServingCertificate({
      ...names,
      ...(validityDays !== undefined ? { validityDays } : {}),
      ...(previous && problem?.keepCa ? { ca: previous } : {}),
    });
  }

  async #renew(urlHost: string): Promise<void> {
    const current = this.#certificate;
    try {
      const next = await this.#loadCertificate(urlHost, current);
      if (next.certPem === current?.certPem) return;
      this.#certificate = next;
      this.#server?.setCertificate(next);
      this.#log.info('serving a renewed certificate');
      if (next.caCertPem !== current?.caCertPem) this.#configure(this.#stopping.signal);
    } catch (error) {
      this.#log.warn({ err: error }, 'could not renew the webhook certificate; retrying at the next check');
    }
  }

  #configure(signal: AbortSignal): void {
    this.#configuring = this.#retry('configure the ValidatingWebhookConfiguration', signal, () =>
      this.#applyConfiguration(),
    )
      .then(() => {
        this.#log.info({ configuration: this.configurationName }, 'webhook configuration carries the CA');
        this.#configured.resolve();
      })
      .catch(() => {});
  }

  async #applyConfiguration(): Promise<void> {
    const caBundle = this.#certificate?.caCertPem ?? '';
    const fieldManager = `${this.#managerName}/webhook`;
    const signal = this.#stopping.signal;
    if (this.#installedBy === 'manager') {
      const desired = crdDeletionGuardWebhook({
        name: this.configurationName,
        ...(this.#options.service ? { service: this.#options.service } : { url: this.#url ?? '' }),
        caBundle,
        ...(this.#options.crdNames ? { crdNames: this.#options.crdNames } : {}),
      });
      await this.#client.apply(desired, { fieldManager, force: true, signal });
      return;
    }
    const configurations = this.#client.resource<KubeObject & { webhooks?: unknown[] }>(
      'admissionregistration.k8s.io/v1',
      'ValidatingWebhookConfiguration',
    );
    try {
      await configurations.get(this.configurationName, { signal });
    } catch (error) {
      if (error instanceof NotFoundError) {
        throw new Error(
          `ValidatingWebhookConfiguration "${this.configurationName}" is not installed; install it with the operator's manifests (crdDeletionGuardWebhook)`,
          { cause: error },
        );
      }
      throw error;
    }
    // Server-side apply of the one field: the manifests own the rest, this manager owns caBundle.
    await configurations.apply(
      {
        apiVersion: 'admissionregistration.k8s.io/v1',
        kind: 'ValidatingWebhookConfiguration',
        metadata: { name: this.configurationName },
        webhooks: [
          { name: CRD_DELETION_GUARD_WEBHOOK, clientConfig: { caBundle: Buffer.from(caBundle).toString('base64') } },
        ],
      },
      { fieldManager, force: true, signal },
    );
  }

  /** Runs `step` until it succeeds, with backoff from 0.5 s to 30 s; rejects only when `signal` aborts. */
  async #retry<T>(what: string, signal: AbortSignal, step: () => Promise<T>): Promise<T> {
    const backoff = new Backoff({ initialMs: 500, maxMs: 30_000, jitter: 0 });
    for (;;) {
      signal.throwIfAborted();
      try {
        return await step();
      } catch (error) {
        if (signal.aborted) throw error;
        const delay = backoff.next();
        this.#log.warn({ err: error, retryInMs: delay }, `could not ${what}; retrying`);
        await sleep(delay, undefined, { signal });
      }
    }
  }
}

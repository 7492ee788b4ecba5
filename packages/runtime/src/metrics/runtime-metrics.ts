/**
 * Prometheus metrics under controller-runtime's names and labels, so existing dashboards and
 * alerts work unchanged, plus the watch cache's reconnects and relists.
 */
import type { InformerStatus } from '@kanri/cache';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { WorkQueueMetrics } from '../queue/work-queue.js';

// controller-runtime's reconcile_time_seconds buckets.
const RECONCILE_BUCKETS = [
  0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.25, 1.5, 1.75,
  2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60,
];
// client-go's workqueue buckets: 10^-8 … 10^1 seconds.
const QUEUE_BUCKETS = Array.from({ length: 10 }, (_, i) => 10 ** (i - 8));

export type ReconcileOutcome = 'success' | 'error' | 'requeue' | 'requeue_after';

export class RuntimeMetrics {
  readonly registry: Registry;
  readonly reconcileTotal: Counter<'controller' | 'result'>;
  readonly reconcileErrors: Counter<'controller'>;
  readonly terminalErrors: Counter<'controller'>;
  readonly reconcileTime: Histogram<'controller'>;
  readonly activeWorkers: Gauge<'controller'>;
  readonly maxConcurrentReconciles: Gauge<'controller'>;
  readonly queueDepth: Gauge<'name' | 'controller'>;
  readonly queueAdds: Counter<'name' | 'controller'>;
  readonly queueLatency: Histogram<'name' | 'controller'>;
  readonly workDuration: Histogram<'name' | 'controller'>;
  readonly queueRetries: Counter<'name' | 'controller'>;
  readonly #informers = new Map<string, () => InformerStatus>();

  constructor(registry = new Registry()) {
    this.registry = registry;
    const registers = [registry];
    this.reconcileTotal = new Counter({
      name: 'controller_runtime_reconcile_total',
      help: 'Total number of reconciliations per controller',
      labelNames: ['controller', 'result'],
      registers,
    });
    this.reconcileErrors = new Counter({
      name: 'controller_runtime_reconcile_errors_total',
      help: 'Total number of reconciliation errors per controller',
      labelNames: ['controller'],
      registers,
    });
    this.terminalErrors = new Counter({
      name: 'controller_runtime_terminal_reconcile_errors_total',
      help: 'Total number of terminal reconciliation errors per controller',
      labelNames: ['controller'],
      registers,
    });
    this.reconcileTime = new Histogram({
      name: 'controller_runtime_reconcile_time_seconds',
      help: 'Length of time per reconciliation per controller',
      labelNames: ['controller'],
      buckets: RECONCILE_BUCKETS,
      registers,
    });
    this.activeWorkers = new Gauge({
      name: 'controller_runtime_active_workers',
      help: 'Number of currently used workers per controller',
      labelNames: ['controller'],
      registers,
    });
    this.maxConcurrentReconciles = new Gauge({
      name: 'controller_runtime_max_concurrent_reconciles',
      help: 'Maximum number of concurrent reconciles per controller',
      labelNames: ['controller'],
      registers,
    });
    this.queueDepth = new Gauge({
      name: 'workqueue_depth',
      help: 'Current depth of workqueue',
      labelNames: ['name', 'controller'],
      registers,
    });
    this.queueAdds = new Counter({
      name: 'workqueue_adds_total',
      help: 'Total number of adds handled by workqueue',
      labelNames: ['name', 'controller'],
      registers,
    });
    this.queueLatency = new Histogram({
      name: 'workqueue_queue_duration_seconds',
      help: 'How long in seconds an item stays in workqueue before being requested',
      labelNames: ['name', 'controller'],
      buckets: QUEUE_BUCKETS,
      registers,
    });
    this.workDuration = new Histogram({
      name: 'workqueue_work_duration_seconds',
      help: 'How long in seconds processing an item from workqueue takes',
      labelNames: ['name', 'controller'],
      buckets: QUEUE_BUCKETS,
      registers,
    });
    this.queueRetries = new Counter({
      name: 'workqueue_retries_total',
      help: 'Total number of retries handled by workqueue',
      labelNames: ['name', 'controller'],
      registers,
    });
    const informers = this.#informers;
    // Informer state is read at scrape time, so there is nothing to keep in step.
    new Gauge({
      name: 'kanri_cache_watch_reconnects_total',
      help: 'Watch connections re-opened after an error or a silent stall, per cached resource',
      labelNames: ['resource'],
      registers,
      collect() {
        for (const [resource, status] of informers) this.set({ resource }, status().reconnects);
      },
    });
    new Gauge({
      name: 'kanri_cache_relists_total',
      help: 'Full relists after 410 Gone, per cached resource',
      labelNames: ['resource'],
      registers,
      collect() {
        for (const [resource, status] of informers) this.set({ resource }, status().relists);
      },
    });
    new Gauge({
      name: 'kanri_cache_synced',
      help: '1 once the cache of a resource holds a complete list',
      labelNames: ['resource'],
      registers,
      collect() {
        for (const [resource, status] of informers) this.set({ resource }, status().synced ? 1 : 0);
      },
    });
  }

  /** Reports an informer's state under `resource` (e.g. `configmaps` or `deployments.apps`). */
  trackInformer(resource: string, status: () => InformerStatus): void {
    this.#informers.set(resource, status);
  }

  /** The work-queue metrics sink for one controller's queue. */
  queueMetrics(controller: string): WorkQueueMetrics {
    const labels = { name: controller, controller };
    return {
      add: () => this.queueAdds.inc(labels),
      depth: (n) => this.queueDepth.set(labels, n),
      queueLatency: (seconds) => this.queueLatency.observe(labels, seconds),
      workDuration: (seconds) => this.workDuration.observe(labels, seconds),
      retry: () => this.queueRetries.inc(labels),
    };
  }
}

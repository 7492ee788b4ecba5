/** The controller the runtime tests run: each Widget gets a ConfigMap with its color, and a status saying so. */

import type { BuilderOptions, Predicate, ReconcileContext } from '../src/index.js';
import { controller } from '../src/index.js';
import type { Widget } from './helpers.js';

export interface WidgetControllerHooks {
  /** Called at the start and end of every reconcile, for overlap checks. */
  readonly onEnter?: (key: string) => void;
  readonly onExit?: (key: string) => void;
  /** Throws or rejects to simulate failures. */
  readonly before?: (widget: Widget, ctx: ReconcileContext<Widget>) => void | Promise<void>;
  readonly identity?: string;
  readonly predicates?: Predicate[];
  readonly options?: BuilderOptions;
}

export function widgetController(hooks: WidgetControllerHooks = {}) {
  return controller<Widget>('test.kanri.dev/v1', 'Widget')
    .owns('v1', 'ConfigMap')
    .withPredicates(...(hooks.predicates ?? []))
    .options({ workers: 4, ...hooks.options })
    .reconcile(async (widget, ctx) => {
      const key = `${widget.metadata?.namespace}/${widget.metadata?.name}`;
      hooks.onEnter?.(key);
      try {
        await hooks.before?.(widget, ctx);
        const color = widget.spec?.color ?? 'none';
        await ctx.apply({
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: `widget-${widget.metadata?.name}` },
          data: { color },
        });
        await ctx.setStatus({
          color,
          observedGeneration: widget.metadata?.generation,
          ...(hooks.identity ? { reconciledBy: hooks.identity } : {}),
        });
      } finally {
        hooks.onExit?.(key);
      }
    });
}

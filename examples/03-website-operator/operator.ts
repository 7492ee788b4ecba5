/** A Website → ConfigMap + Deployment + Service operator, showing the whole @kanri/runtime API. */
import { controller, generationChanged, type KubeObject, setCondition } from '@kanri/runtime';
import type { Deployment } from 'kubernetes-types/apps/v1.js';
import type { ConfigMap, Service } from 'kubernetes-types/core/v1.js';
import type { Condition } from 'kubernetes-types/meta/v1.js';

export interface Website extends KubeObject {
  spec?: { html: string; replicas?: number };
  status?: { conditions?: Condition[]; observedGeneration?: number; url?: string };
}

/** Pure builders: the children a Website should have. */
export function buildChildren(site: Website): KubeObject[] {
  const name = site.metadata?.name ?? '';
  const labels = { 'app.kubernetes.io/name': 'website', 'app.kubernetes.io/instance': name };
  const page: ConfigMap = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: `${name}-html`, labels },
    data: { 'index.html': site.spec?.html ?? '' },
  };
  const deployment: Deployment = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, labels },
    spec: {
      replicas: site.spec?.replicas ?? 2,
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: {
          containers: [
            {
              name: 'nginx',
              image: 'nginx:1.27',
              volumeMounts: [{ name: 'html', mountPath: '/usr/share/nginx/html' }],
            },
          ],
          volumes: [{ name: 'html', configMap: { name: `${name}-html` } }],
        },
      },
    },
  };
  const service: Service = {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, labels },
    spec: { selector: labels, ports: [{ port: 80, targetPort: 80 }] },
  };
  return [page, deployment, service];
}

export const websiteController = controller<Website>('example.kanri.dev/v1', 'Website')
  .owns('v1', 'ConfigMap')
  .owns('apps/v1', 'Deployment')
  .owns('v1', 'Service')
  .withPredicates(generationChanged())
  .finalizer('example.kanri.dev/cleanup', async (site, ctx) => {
    // Where external resources (a DNS record, a CDN) would be removed; children go by garbage collection.
    ctx.log.info({ site: site.metadata?.name }, 'website deleted');
  })
  .reconcile(async (site, ctx) => {
    for (const child of buildChildren(site)) await ctx.apply(child);
    const deployment = ctx.get<Deployment>('apps/v1', 'Deployment', site.metadata?.name ?? '');
    const want = site.spec?.replicas ?? 2;
    const ready = (deployment?.status?.readyReplicas ?? 0) >= want;
    const wasReady = site.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
    await ctx.setStatus({
      observedGeneration: site.metadata?.generation,
      url: `http://${site.metadata?.name}.${site.metadata?.namespace}.svc`,
      conditions: setCondition(site.status?.conditions, {
        type: 'Ready',
        status: ready ? 'True' : 'False',
        reason: ready ? 'Available' : 'WaitingForReplicas',
        message: `${deployment?.status?.readyReplicas ?? 0}/${want} replicas ready`,
        observedGeneration: site.metadata?.generation,
      }),
    });
    if (ready && !wasReady) await ctx.event('Normal', 'Available', `all ${want} replicas are ready`);
    // Deployments report readiness through their status; the owned watch wakes us when it changes.
    return undefined;
  });

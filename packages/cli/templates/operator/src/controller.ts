/** The __Kind__ controller: makes the world match each __Kind__'s spec and reports how it went. */
import { controller, type KubeObject, setCondition } from '@kanri/runtime';
import { __Kind__ } from './__kind__.js';

/** The ConfigMap a __Kind__ should have. Pure, so it can be tested without a cluster. */
export function desiredConfigMap(obj: __Kind__): KubeObject & { data: Record<string, string> } {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: `${obj.metadata?.name}-message`,
      namespace: obj.metadata?.namespace,
      labels: { 'app.kubernetes.io/managed-by': '__name__', '__group__/__kind__': obj.metadata?.name ?? '' },
    },
    data: { message: Array.from({ length: obj.spec.repeat }, () => obj.spec.message).join('\n') },
  };
}

export const __kindCamel__Controller = controller<__Kind__>(__Kind__.apiVersion, __Kind__.kind)
  // A change to a ConfigMap this controller owns wakes the __Kind__ that owns it, so edits are undone.
  .owns('v1', 'ConfigMap')
  .reconcile(async (obj, ctx) => {
    // Server-side apply, with an ownerReference to `obj`: deleting the __Kind__ deletes the ConfigMap.
    const configMap = desiredConfigMap(obj);
    await ctx.apply(configMap);
    // Written only when it changed, so this does not wake the controller in a loop.
    await ctx.setStatus({
      observedGeneration: obj.metadata?.generation,
      configMap: configMap.metadata?.name,
      conditions: setCondition(obj.status?.conditions, {
        type: 'Ready',
        status: 'True',
        reason: 'ConfigMapApplied',
        message: `ConfigMap ${configMap.metadata?.name} holds the message`,
        observedGeneration: obj.metadata?.generation,
      }),
    });
  });

// Where every system's instances may run in bench:peers, pure: only on `nodes` (never the
// host's gateway node, real-node-0) and never two of one cluster on a node.

/**
 * The Pod affinity that places a cluster's instances (Pods matching `matchLabels`) on `nodes`, one per node.
 *
 * @example
 * instanceAffinity(['real-node-1'], { app: 'pg' }).nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values; // ['real-node-1']
 */
export function instanceAffinity(nodes, matchLabels) {
  return {
    nodeAffinity: {
      requiredDuringSchedulingIgnoredDuringExecution: {
        nodeSelectorTerms: [
          { matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: [...nodes] }] },
        ],
      },
    },
    podAntiAffinity: {
      requiredDuringSchedulingIgnoredDuringExecution: [
        { topologyKey: 'kubernetes.io/hostname', labelSelector: { matchLabels } },
      ],
    },
  };
}

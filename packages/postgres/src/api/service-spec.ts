/** PGO's ServiceSpec: how the cluster's -primary and -replicas Services are exposed (spec.service, spec.replicaService). */
import { z } from 'zod';

/** PGO's ServiceSpec: how one of the cluster's Services is exposed. */
export const serviceSpec = (which: string) =>
  z
    .object({
      type: z.enum(['ClusterIP', 'NodePort', 'LoadBalancer']).default('ClusterIP').describe('Service type.'),
      nodePort: z
        .number()
        .int()
        .min(1)
        .max(65535)
        .optional()
        .describe(
          "The node port, with type NodePort or LoadBalancer; it must be in the API server's node port range (default 30000-32767). Default: one the API server allocates.",
        ),
      metadata: z
        .object({
          labels: z.record(z.string(), z.string()).optional().describe("Labels added to the Service; Kanri's own win."),
          annotations: z
            .record(z.string(), z.string())
            .optional()
            .describe("Annotations added to the Service (a cloud load balancer's settings, say)."),
        })
        .optional()
        .describe('Labels and annotations of the Service.'),
      externalTrafficPolicy: z
        .enum(['Cluster', 'Local'])
        .optional()
        .describe('With type NodePort or LoadBalancer: whether external traffic goes to node-local endpoints only.'),
      internalTrafficPolicy: z
        .enum(['Cluster', 'Local'])
        .optional()
        .describe('Whether traffic from inside the cluster goes to node-local endpoints only.'),
      ipFamilies: z
        .array(z.enum(['IPv4', 'IPv6']))
        .max(2)
        .optional()
        .describe('IP families of the Service.'),
      ipFamilyPolicy: z
        .enum(['SingleStack', 'PreferDualStack', 'RequireDualStack'])
        .optional()
        .describe('Single or dual stack.'),
    })
    .meta({
      'x-kubernetes-validations': [
        {
          rule: "!has(self.nodePort) || self.type != 'ClusterIP'",
          message: 'nodePort needs type NodePort or LoadBalancer',
          fieldPath: '.nodePort',
        },
        {
          rule: "!has(self.externalTrafficPolicy) || self.type != 'ClusterIP'",
          message: 'externalTrafficPolicy needs type NodePort or LoadBalancer',
          fieldPath: '.externalTrafficPolicy',
        },
      ],
    })
    .describe(`The ${which} Service, as PGO's ServiceSpec.`);

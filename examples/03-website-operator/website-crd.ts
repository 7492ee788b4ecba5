/** The Website CRD: `spec.html` and `spec.replicas`, with a status subresource and printer columns. */
export const websiteCrd = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'websites.example.kanri.dev' },
  spec: {
    group: 'example.kanri.dev',
    scope: 'Namespaced',
    names: { plural: 'websites', singular: 'website', kind: 'Website', shortNames: ['site'] },
    versions: [
      {
        name: 'v1',
        served: true,
        storage: true,
        subresources: { status: {} },
        additionalPrinterColumns: [
          { name: 'Ready', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].status' },
          { name: 'Replicas', type: 'integer', jsonPath: '.spec.replicas' },
        ],
        schema: {
          openAPIV3Schema: {
            type: 'object',
            properties: {
              spec: {
                type: 'object',
                required: ['html'],
                properties: { html: { type: 'string' }, replicas: { type: 'integer', minimum: 1, default: 2 } },
              },
              status: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
            },
          },
        },
      },
    ],
  },
};

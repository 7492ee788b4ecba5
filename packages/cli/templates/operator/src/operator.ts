/**
 * The __name__ operator as one value. `kanri generate` reads it for CRDs, RBAC and manifests,
 * `kanri dev run` runs it against a local control plane, and `main.ts` runs it in the cluster.
 */
import { defineOperator } from '@kanri/api';
import { __Kind__ } from './__kind__.js';
import { __kindCamel__Controller } from './controller.js';

export default defineOperator({
  name: '__name__',
  image: '__name__:latest',
  resources: [__Kind__],
  controllers: [__kindCamel__Controller],
});

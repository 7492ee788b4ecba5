/** Configuration errors: what was looked for, or which kubeconfig field is wrong. */
import { KubeError } from '../errors.js';

export class KubeconfigError extends KubeError {
  override name = 'KubeconfigError';
}

/** The Website CRD, derived from the `Website` resource definition (`spec.html`, `spec.replicas`, status, printer columns). */
import { Website } from './website-operator.js';

export const websiteCrd = Website.crd;

/**
 * What the RBAC tests observe: the permissions a rule grants, what the API server's authorizer
 * says about them (SubjectAccessReview, the same authorizer real requests meet), and the
 * ForbiddenErrors an operator's components ran into, taken from what they log.
 */
import { ForbiddenError, type KubeClient, type KubeObject } from '@kanri/client';
import { waitFor } from '@kanri/testenv';
import { type Logger, pino } from 'pino';
import type { PolicyRule } from '../src/index.js';

/** One verb on one resource (with its subresource), as RBAC and SubjectAccessReview name it. */
export interface Permission {
  readonly verb: string;
  readonly group: string;
  readonly resource: string;
  readonly subresource?: string;
  readonly namespace?: string;
  readonly name?: string;
}

export const showPermission = (p: Permission): string =>
  `${p.verb} ${p.resource}${p.subresource ? `/${p.subresource}` : ''}${p.group ? `.${p.group}` : ''}`;

/** Every permission `rule` grants; a namespaced Role's rules are checked in its namespace. */
export function permissionsOf(rule: PolicyRule, namespace: string): Permission[] {
  return rule.apiGroups.flatMap((group) =>
    rule.resources.flatMap((qualified) => {
      const [resource = '', subresource] = qualified.split('/');
      return rule.verbs.map((verb) => ({
        verb,
        group,
        resource,
        ...(subresource ? { subresource } : {}),
        namespace,
        ...(rule.resourceNames?.[0] ? { name: rule.resourceNames[0] } : {}),
      }));
    }),
  );
}

/** True if `rule` grants `permission` (namespace and object name aside, which the rules here do not narrow). */
export function grants(rule: PolicyRule, permission: Permission): boolean {
  const resource = permission.subresource ? `${permission.resource}/${permission.subresource}` : permission.resource;
  return (
    rule.apiGroups.includes(permission.group) &&
    rule.resources.includes(resource) &&
    rule.verbs.includes(permission.verb)
  );
}

interface AccessReview extends KubeObject {
  spec?: { user: string; groups: string[]; resourceAttributes: Permission };
  status?: { allowed: boolean; denied?: boolean; reason?: string };
}

/** Asks the API server's authorizer whether `user` may do `permission`. */
export async function isAllowed(admin: KubeClient, user: string, permission: Permission): Promise<boolean> {
  const review = await admin
    .resource<AccessReview>('authorization.k8s.io/v1', 'SubjectAccessReview')
    .create({ spec: { user, groups: ['system:authenticated'], resourceAttributes: permission } });
  return review.status?.allowed === true;
}

/**
 * Polls SubjectAccessReviews until every permission in `allowed` is allowed and every one in
 * `denied` is denied: the RBAC authorizer learns of role changes through its own watch, so a
 * write to a Role takes effect a moment later.
 */
export async function waitForAccess(
  admin: KubeClient,
  user: string,
  expected: { readonly allowed: readonly Permission[]; readonly denied: readonly Permission[] },
): Promise<void> {
  await waitFor(
    'RBAC to take effect',
    async () => {
      const checks = [
        ...expected.allowed.map(async (p) => ((await isAllowed(admin, user, p)) ? '' : `${showPermission(p)} denied`)),
        ...expected.denied.map(async (p) => ((await isAllowed(admin, user, p)) ? `${showPermission(p)} allowed` : '')),
      ];
      const wrong = (await Promise.all(checks)).filter(Boolean);
      // A non-empty string makes waitFor's timeout message say which permission never flipped.
      if (wrong.length > 0) throw new Error(wrong.join(', '));
      return true;
    },
    30_000,
  );
}

/** The permission a refused request asked for, from the client's typed error. */
export function permissionOf(error: ForbiddenError): Permission {
  const qualified = error.resource ?? '';
  const dot = qualified.indexOf('.');
  const name = error.request.name;
  // The error names the resource, not the subresource; the path ends in `/<name>/<subresource>` for one.
  const suffix = name ? error.request.path.split(`/${encodeURIComponent(name)}/`)[1] : undefined;
  return {
    verb: error.verb ?? '',
    resource: dot === -1 ? qualified : qualified.slice(0, dot),
    group: dot === -1 ? '' : qualified.slice(dot + 1),
    ...(suffix && !suffix.includes('/') ? { subresource: suffix } : {}),
  };
}

/**
 * A pino logger that records every ForbiddenError any component logs (as `err`, or as the cause
 * of one): reconcile failures, failed watches, Events that could not be recorded and the
 * leader election's failed attempts all log their error so.
 */
export function forbiddenRecorder(): { readonly logger: Logger; readonly seen: ForbiddenError[] } {
  const seen: ForbiddenError[] = [];
  const collect = (error: unknown, depth = 0) => {
    if (depth > 5 || !(error instanceof Error)) return;
    if (error instanceof ForbiddenError) seen.push(error);
    collect(error.cause, depth + 1);
  };
  const logger = pino(
    {
      level: 'warn',
      hooks: {
        logMethod(args, method) {
          const [first] = args as unknown[];
          if (typeof first === 'object' && first !== null && 'err' in first) collect(first.err);
          return method.apply(this, args);
        },
      },
    },
    { write: () => {} },
  );
  return { logger, seen };
}
